// AMDGPU ELF code objects: .text, the metadata note (msgpack) and the kernel descriptors; plus the ways to reach
// them from an offload bundle or a HIP host binary.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <string_view>

#include "loader_util.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/BinaryFormat/MsgPackDocument.h"
#include "llvm/BinaryFormat/MsgPackReader.h"
#include "llvm/Object/ELF.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/Error.h"
#include "vgpu/code_object.h"

namespace vgpu {

// Bounds on metadata sizes. Kernel arguments: HIP caps them at 4 KiB; allow far more before calling the note corrupt.
// Scratch: the hardware's per-wave limit (13 bits of 1 KiB units) over 64 lanes.
constexpr uint32_t kMaxKernargBytes = 1u << 20, kMaxPrivateBytes = (8191u * 1024) / 64;
namespace {

using ELFT = llvm::object::ELF64LE;
using ElfFile = llvm::object::ELFFile<ELFT>;
using Shdr = ELFT::Shdr;
namespace ELF = llvm::ELF;
namespace msgpack = llvm::msgpack;

constexpr size_t kDescriptorBytes = 64;

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

template <class T>
T unwrap(llvm::Expected<T> value, const std::string& context) {
  if (!value) loader_fail(context + ": " + llvm::toString(value.takeError()));
  return std::move(*value);
}

bool is_elf(std::span<const uint8_t> blob) {
  return blob.size() >= 4 && std::memcmp(blob.data(), ELF::ElfMagic, 4) == 0;
}

// "hipv4-amdgcn-amd-amdhsa--gfx950:xnack-" -> "gfx950": the last '-'-separated field, without features.
std::string_view processor_of(std::string_view target) {
  size_t colon = target.find(':');
  size_t dash = target.rfind('-', colon);
  size_t begin = dash == std::string_view::npos ? 0 : dash + 1;
  return target.substr(begin, colon == std::string_view::npos ? std::string_view::npos : colon - begin);
}

static_assert(arch_info(Arch::gfx90a).elf_mach == ELF::EF_AMDGPU_MACH_AMDGCN_GFX90A);
static_assert(arch_info(Arch::gfx942).elf_mach == ELF::EF_AMDGPU_MACH_AMDGCN_GFX942);
static_assert(arch_info(Arch::gfx950).elf_mach == ELF::EF_AMDGPU_MACH_AMDGCN_GFX950);

std::optional<Arch> arch_of_mach(unsigned mach) {
  for (const ArchInfo& a : all_archs())
    if (a.elf_mach == mach) return a.arch;
  return std::nullopt;
}

// A map node of the metadata document with typed lookups; `where_` names it in error messages.
class MetaMap {
 public:
  MetaMap(msgpack::DocNode node, std::string where) : node_(node), where_(std::move(where)) {
    if (!node_.isMap()) loader_fail(where_ + " is not a map");
  }

  std::optional<msgpack::DocNode> get(std::string_view key) {
    msgpack::MapDocNode& map = node_.getMap();
    auto it = map.find(llvm::StringRef(key.data(), key.size()));
    if (it == map.end()) return std::nullopt;
    return it->second;
  }
  msgpack::DocNode required(std::string_view key) {
    std::optional<msgpack::DocNode> n = get(key);
    if (!n) loader_fail(where_ + " has no " + std::string(key));
    return *n;
  }

  // Integers may be encoded as msgpack int or uint; both are accepted when non-negative and within 32 bits.
  uint32_t u32(std::string_view key, std::optional<uint32_t> fallback = std::nullopt) {
    std::optional<msgpack::DocNode> n = fallback ? get(key) : required(key);
    if (!n) return *fallback;
    uint64_t v;
    if (n->getKind() == msgpack::Type::UInt)
      v = n->getUInt();
    else if (n->getKind() == msgpack::Type::Int && n->getInt() >= 0)
      v = static_cast<uint64_t>(n->getInt());
    else
      loader_fail(where_ + ": " + std::string(key) + " is not a non-negative integer");
    if (v > UINT32_MAX) loader_fail(where_ + ": " + std::string(key) + " = " + std::to_string(v) + " is out of range");
    return static_cast<uint32_t>(v);
  }
  std::string str(std::string_view key, std::optional<std::string> fallback = std::nullopt) {
    std::optional<msgpack::DocNode> n = fallback ? get(key) : required(key);
    if (!n) return *fallback;
    if (!n->isString()) loader_fail(where_ + ": " + std::string(key) + " is not a string");
    return n->getString().str();
  }
  bool boolean(std::string_view key, bool fallback) {
    std::optional<msgpack::DocNode> n = get(key);
    if (!n) return fallback;
    if (n->getKind() != msgpack::Type::Boolean) loader_fail(where_ + ": " + std::string(key) + " is not a boolean");
    return n->getBool();
  }
  // A copy of the node: it shares the document's array.
  msgpack::ArrayDocNode array(std::string_view key) {
    msgpack::DocNode n = required(key);
    if (!n.isArray()) loader_fail(where_ + ": " + std::string(key) + " is not an array");
    return n.getArray();
  }

 private:
  msgpack::DocNode node_;
  std::string where_;
};

// The parts of the NT_AMDGPU_METADATA note vgpu uses. Descriptor fields are filled in later.
struct Metadata {
  std::string target;
  std::map<uint64_t, std::string> printf_formats;
  std::vector<KernelInfo> kernels;
  std::vector<std::string> descriptor_symbols;  // .symbol of each kernel, parallel to kernels
};

// msgpack::Document trusts its input: a map or array used as a map key reaches llvm_unreachable (a crash in a
// release build). So the blob's structure is checked first with the bounds-checked streaming reader.
void check_msgpack_structure(llvm::StringRef blob) {
  constexpr size_t kMaxDepth = 64;
  msgpack::Reader reader(blob);
  struct Level {
    uint64_t remaining;  // objects still to come at this level; a map counts keys and values
    bool is_map;
  };
  std::vector<Level> open;
  for (;;) {
    msgpack::Object obj;
    llvm::Expected<bool> got = reader.read(obj);
    if (!got) loader_fail("code object: metadata note: malformed msgpack: " + llvm::toString(got.takeError()));
    if (!*got) break;
    if (!open.empty()) {
      Level& level = open.back();
      bool is_key = level.is_map && level.remaining % 2 == 0;
      if (is_key && (obj.Kind == msgpack::Type::Map || obj.Kind == msgpack::Type::Array))
        loader_fail("code object: metadata note: a map key is not a scalar");
      --level.remaining;
    }
    if (obj.Kind == msgpack::Type::Extension) loader_fail("code object: metadata note: unexpected msgpack extension");
    if ((obj.Kind == msgpack::Type::Map || obj.Kind == msgpack::Type::Array) && obj.Length > 0) {
      if (open.size() == kMaxDepth) loader_fail("code object: metadata note is nested too deeply");
      open.push_back({obj.Kind == msgpack::Type::Map ? 2 * uint64_t(obj.Length) : uint64_t(obj.Length),
                      obj.Kind == msgpack::Type::Map});
    }
    while (!open.empty() && open.back().remaining == 0) open.pop_back();
  }
  if (!open.empty()) loader_fail("code object: metadata note: msgpack ends inside a map or array");
}

Metadata parse_metadata(llvm::ArrayRef<uint8_t> bytes) {
  llvm::StringRef blob(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  check_msgpack_structure(blob);
  msgpack::Document doc;
  if (!doc.readFromBlob(blob, /*Multi=*/false))
    loader_fail("code object: the NT_AMDGPU_METADATA note is not valid msgpack");
  MetaMap root(doc.getRoot(), "code object metadata");
  Metadata md;
  md.target = root.str("amdhsa.target", "");
  // Buffered printf: "ID:...:HASH,FORMAT" (HASH: 16 hex digits). Entries of another shape are not vgpu's concern.
  if (std::optional<msgpack::DocNode> formats = root.get("amdhsa.printf"); formats && formats->isArray()) {
    msgpack::ArrayDocNode list = formats->getArray();
    for (size_t i = 0; i < list.size(); ++i) {
      if (!list[i].isString()) continue;
      const std::string entry = list[i].getString().str();
      const size_t comma = entry.find(','), colon = entry.rfind(':', comma);
      if (comma == std::string::npos || colon == std::string::npos || comma - colon - 1 != 16) continue;
      uint64_t hash = 0;
      bool hex = true;
      for (size_t k = colon + 1; k < comma; ++k) {
        const char c = entry[k];
        const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0) hex = false;
        hash = hash << 4 | uint64_t(d & 15);
      }
      if (hex) md.printf_formats[hash] = entry.substr(comma + 1);
    }
  }
  msgpack::ArrayDocNode kernels = root.array("amdhsa.kernels");
  for (size_t k = 0; k < kernels.size(); ++k) {
    MetaMap km(kernels[k], "code object metadata: kernel " + std::to_string(k));
    KernelInfo info;
    info.name = km.str(".name");
    MetaMap kernel(kernels[k], "code object metadata: kernel " + info.name);
    std::string symbol = kernel.str(".symbol", info.name + ".kd");
    info.kernarg_segment_size = kernel.u32(".kernarg_segment_size");
    info.kernarg_segment_align = kernel.u32(".kernarg_segment_align", 0);
    info.group_segment_fixed_size = kernel.u32(".group_segment_fixed_size", 0);
    info.private_segment_fixed_size = kernel.u32(".private_segment_fixed_size", 0);
    info.sgpr_count = kernel.u32(".sgpr_count", 0);
    info.vgpr_count = kernel.u32(".vgpr_count", 0);
    info.agpr_count = kernel.u32(".agpr_count", 0);
    info.sgpr_spill_count = kernel.u32(".sgpr_spill_count", 0);
    info.vgpr_spill_count = kernel.u32(".vgpr_spill_count", 0);
    info.wavefront_size = kernel.u32(".wavefront_size", 64);
    info.max_flat_workgroup_size = kernel.u32(".max_flat_workgroup_size", 1024);
    info.uses_dynamic_stack = kernel.boolean(".uses_dynamic_stack", false);
    // Sizes the runtime allocates from: bounded by what the hardware can give a dispatch.
    if (info.kernarg_segment_size > kMaxKernargBytes)
      loader_fail("code object metadata: kernel " + info.name + " has a kernarg segment of " +
                  std::to_string(info.kernarg_segment_size) + " bytes, more than " + std::to_string(kMaxKernargBytes));
    if (info.private_segment_fixed_size > kMaxPrivateBytes)
      loader_fail("code object metadata: kernel " + info.name + " needs " +
                  std::to_string(info.private_segment_fixed_size) + " bytes of scratch per lane, more than the " +
                  std::to_string(kMaxPrivateBytes) + " the hardware can give");
    // A kernel without arguments may omit .args.
    if (kernel.get(".args")) {
      msgpack::ArrayDocNode args = kernel.array(".args");
      for (size_t a = 0; a < args.size(); ++a) {
        MetaMap am(args[a], "code object metadata: kernel " + info.name + " argument " + std::to_string(a));
        KernelArg arg;
        arg.name = am.str(".name", "");
        arg.value_kind = am.str(".value_kind");
        arg.offset = am.u32(".offset");
        arg.size = am.u32(".size");
        // What the runtime copies into the kernarg segment must lie inside it (hidden arguments inside the bound).
        const bool hidden = arg.value_kind.starts_with("hidden_");
        if (uint64_t(arg.offset) + arg.size > (hidden ? kMaxKernargBytes : info.kernarg_segment_size))
          loader_fail("code object metadata: kernel " + info.name + " argument " + std::to_string(a) + " at offset " +
                      std::to_string(arg.offset) + " (" + std::to_string(arg.size) +
                      " bytes) lies past the kernarg segment");
        info.args.push_back(std::move(arg));
      }
    }
    md.kernels.push_back(std::move(info));
    md.descriptor_symbols.push_back(std::move(symbol));
  }
  return md;
}

KernelDescriptor decode_descriptor(const uint8_t* p) {
  using namespace llvm::support::endian;
  KernelDescriptor kd;
  kd.group_segment_fixed_size = read32le(p + 0);
  kd.private_segment_fixed_size = read32le(p + 4);
  kd.kernarg_size = read32le(p + 8);
  kd.kernel_code_entry_byte_offset = static_cast<int64_t>(read64le(p + 16));
  kd.pgm_rsrc3 = read32le(p + 44);
  kd.pgm_rsrc1 = read32le(p + 48);
  kd.pgm_rsrc2 = read32le(p + 52);
  kd.kernel_code_properties = read16le(p + 56);
  kd.kernarg_preload = read16le(p + 58);
  return kd;
}

struct SymbolLocation {
  uint64_t value = 0;
  uint32_t section = 0;
  uint64_t size = 0;
  uint8_t type = 0;
};

// Defined symbols by name, from .symtab and .dynsym (either may be stripped).
std::map<std::string, SymbolLocation, std::less<>> read_symbols(const ElfFile& elf, llvm::ArrayRef<Shdr> sections) {
  std::map<std::string, SymbolLocation, std::less<>> out;
  for (const Shdr& s : sections) {
    if (s.sh_type != ELF::SHT_SYMTAB && s.sh_type != ELF::SHT_DYNSYM) continue;
    auto symbols = unwrap(elf.symbols(&s), "code object: symbol table");
    llvm::StringRef strtab = unwrap(elf.getStringTableForSymtab(s), "code object: symbol string table");
    for (const auto& sym : symbols) {
      if (sym.st_shndx == ELF::SHN_UNDEF || sym.st_shndx >= ELF::SHN_LORESERVE) continue;
      llvm::StringRef name = unwrap(sym.getName(strtab), "code object: symbol name");
      out.emplace(name.str(), SymbolLocation{sym.st_value, sym.st_shndx, sym.st_size, sym.getType()});
    }
  }
  return out;
}

std::span<const uint8_t> section_bytes(const ElfFile& elf, const Shdr& s, const std::string& name) {
  if (s.sh_type == ELF::SHT_NOBITS) loader_fail("code object: section " + name + " has no bytes in the file");
  llvm::ArrayRef<uint8_t> bytes = unwrap(elf.getSectionContents(s), "code object: section " + name);
  return {bytes.data(), bytes.size()};
}

}  // namespace

const KernelInfo* CodeObject::find(std::string_view name) const {
  for (const KernelInfo& k : kernels)
    if (k.name == name) return &k;
  return nullptr;
}

std::shared_ptr<const CodeObject> load_code_object(std::span<const uint8_t> bytes) {
  // Work on an owned copy: the CodeObject keeps it, and it is suitably aligned for LLVM's ELF structures.
  auto co = std::make_shared<CodeObject>();
  static std::atomic<uint64_t> loaded{0};
  co->serial = ++loaded;
  co->elf.assign(bytes.begin(), bytes.end());
  const std::vector<uint8_t>& image = co->elf;

  if (!is_elf(image)) loader_fail("not an ELF code object (no ELF magic)");
  if (image.size() < sizeof(ELFT::Ehdr))
    loader_fail("code object is truncated: " + std::to_string(image.size()) + " bytes, less than an ELF header");
  if (image[ELF::EI_CLASS] != ELF::ELFCLASS64 || image[ELF::EI_DATA] != ELF::ELFDATA2LSB)
    loader_fail("code object is not a 64-bit little-endian ELF file");
  ElfFile elf = unwrap(ElfFile::create(llvm::StringRef(reinterpret_cast<const char*>(image.data()), image.size())),
                       "code object: malformed ELF");
  const ELFT::Ehdr& header = elf.getHeader();
  if (header.e_machine != ELF::EM_AMDGPU)
    loader_fail("not an AMDGPU code object (ELF e_machine is " + std::to_string(header.e_machine) + ", expected " +
                std::to_string(ELF::EM_AMDGPU) + ")");
  if (header.e_ident[ELF::EI_OSABI] != ELF::ELFOSABI_AMDGPU_HSA)
    loader_fail("code object is not for the AMD HSA runtime (ELF OS ABI " +
                std::to_string(header.e_ident[ELF::EI_OSABI]) + ")");
  switch (header.e_ident[ELF::EI_ABIVERSION]) {
    case ELF::ELFABIVERSION_AMDGPU_HSA_V4: co->code_object_version = 4; break;
    case ELF::ELFABIVERSION_AMDGPU_HSA_V5: co->code_object_version = 5; break;
    case ELF::ELFABIVERSION_AMDGPU_HSA_V6: co->code_object_version = 6; break;
    default:
      loader_fail("code object has ABI version " + std::to_string(header.e_ident[ELF::EI_ABIVERSION]) +
                  "; vgpu reads code object versions 4 to 6");
  }
  // A relocatable object's descriptors still need their entry offsets relocated; only linked objects are runnable.
  if (header.e_type != ELF::ET_DYN && header.e_type != ELF::ET_EXEC)
    loader_fail("code object is not linked (ELF type " + std::to_string(header.e_type) +
                "); link it into a shared object first (ld.lld -shared)");

  llvm::ArrayRef<Shdr> sections = unwrap(elf.sections(), "code object: section headers");
  std::vector<std::string> names;
  for (const Shdr& s : sections) names.push_back(unwrap(elf.getSectionName(s), "code object: section name").str());

  // The metadata notes: kernels, their arguments and resource counts. A code object linked from several (Tensile's
  // libraries link one assembled object per kernel into each .co) carries one NT_AMDGPU_METADATA note per input
  // object; like ROCm's code object manager, vgpu merges them: the kernels of every note, whose targets (where
  // given) must agree.
  std::vector<llvm::ArrayRef<uint8_t>> metadata_blobs;
  for (size_t i = 0; i < sections.size(); ++i) {
    const Shdr& s = sections[i];
    if (s.sh_type != ELF::SHT_NOTE) continue;
    // LLVM's note iterator does not guard against offset + size wrapping around.
    if (s.sh_offset > image.size() || s.sh_size > image.size() - s.sh_offset)
      loader_fail("code object: note section " + names[i] + " lies outside the file");
    // Nothing may throw while `err` is unchecked (LLVM builds with ABI-breaking checks abort on that).
    llvm::Error err = llvm::Error::success();
    for (const auto& note : elf.notes(s, err))
      if (note.getName() == "AMDGPU" && note.getType() == ELF::NT_AMDGPU_METADATA)
        metadata_blobs.push_back(note.getDesc(std::max<uint64_t>(s.sh_addralign, 4)));
    if (err) loader_fail("code object: note section " + names[i] + ": " + llvm::toString(std::move(err)));
  }
  if (metadata_blobs.empty())
    loader_fail("code object has no NT_AMDGPU_METADATA note (not an AMDHSA code object of version 3 or later)");
  Metadata md = parse_metadata(metadata_blobs[0]);
  std::set<std::string> described;
  for (const KernelInfo& k : md.kernels) described.insert(k.name);
  for (size_t n = 1; n < metadata_blobs.size(); ++n) {
    Metadata more = parse_metadata(metadata_blobs[n]);
    // amdhsa.target is optional (an object assembled without a target directive has none); present, they agree.
    if (md.target.empty()) md.target = more.target;
    if (!more.target.empty() && more.target != md.target)
      loader_fail("code object: metadata note " + std::to_string(n) + " names target '" + more.target +
                  "', the first one '" + md.target + "'");
    for (size_t k = 0; k < more.kernels.size(); ++k) {
      if (!described.insert(more.kernels[k].name).second)
        loader_fail("code object: kernel " + more.kernels[k].name + " is described by two metadata notes");
      md.kernels.push_back(std::move(more.kernels[k]));
      md.descriptor_symbols.push_back(std::move(more.descriptor_symbols[k]));
    }
    md.printf_formats.merge(more.printf_formats);
  }

  // The arch: EF_AMDGPU_MACH of e_flags, which must agree with the metadata's target string.
  unsigned mach = header.e_flags & ELF::EF_AMDGPU_MACH;
  std::optional<Arch> arch = arch_of_mach(mach);
  if (!arch) {
    std::string named = md.target.empty() ? "an unknown processor" : std::string(processor_of(md.target));
    loader_fail("code object is for " + named + " (EF_AMDGPU_MACH " + hex(mach) +
                "); vgpu runs gfx942 and gfx950 code objects");
  }
  co->arch = *arch;
  if (md.target.empty()) md.target = "amdgcn-amd-amdhsa--" + std::string(arch_info(*arch).name);
  if (parse_arch(md.target) != arch)
    loader_fail("code object: metadata target '" + md.target + "' disagrees with the ELF header's arch " +
                std::string(arch_info(*arch).name));
  co->target = md.target;

  // .text: the executable bytes the decoder reads.
  const Shdr* text = nullptr;
  for (size_t i = 0; i < sections.size(); ++i)
    if (names[i] == ".text") text = &sections[i];
  if (!text) loader_fail("code object has no .text section");
  std::span<const uint8_t> text_bytes = section_bytes(elf, *text, ".text");
  co->text_addr = text->sh_addr;
  co->text.assign(text_bytes.begin(), text_bytes.end());

  // Kernels: metadata plus the descriptor found through its NAME.kd symbol.
  std::map<std::string, SymbolLocation, std::less<>> symbols = read_symbols(elf, sections);
  for (size_t k = 0; k < md.kernels.size(); ++k) {
    KernelInfo& info = md.kernels[k];
    const std::string& kd_name = md.descriptor_symbols[k];
    auto sym = symbols.find(kd_name);
    if (sym == symbols.end()) loader_fail("code object: kernel " + info.name + " has no descriptor symbol " + kd_name);
    const SymbolLocation& where = sym->second;
    if (where.section >= sections.size())
      loader_fail("code object: descriptor " + kd_name + " names section " + std::to_string(where.section) +
                  ", which does not exist");
    const Shdr& holder = sections[where.section];
    std::span<const uint8_t> holder_bytes = section_bytes(elf, holder, names[where.section]);
    // Virtual address -> offset in the section; unsigned arithmetic rejects addresses below the section too.
    uint64_t offset = where.value - holder.sh_addr;
    if (where.value < holder.sh_addr || offset > holder_bytes.size() || holder_bytes.size() - offset < kDescriptorBytes)
      loader_fail("code object: descriptor " + kd_name + " at " + hex(where.value) + " does not fit in section " +
                  names[where.section]);
    info.kd = decode_descriptor(holder_bytes.data() + offset);
    info.entry = where.value + static_cast<uint64_t>(info.kd.kernel_code_entry_byte_offset);
    if (info.entry < co->text_addr || info.entry - co->text_addr >= co->text.size())
      loader_fail("code object: kernel " + info.name + " has entry " + hex(info.entry) + ", outside .text [" +
                  hex(co->text_addr) + ", " + hex(co->text_addr + co->text.size()) + ")");
  }
  co->kernels = std::move(md.kernels);
  co->printf_formats = std::move(md.printf_formats);

  // The loadable image and its variables, for device globals and s_getpc-relative addressing.
  for (const auto& ph : unwrap(elf.program_headers(), "code object: program headers")) {
    if (ph.p_type != ELF::PT_LOAD) continue;
    if (ph.p_offset > image.size() || image.size() - ph.p_offset < ph.p_filesz || ph.p_filesz > ph.p_memsz ||
        ph.p_memsz > (uint64_t(1) << 32) || ph.p_vaddr > (uint64_t(1) << 32))
      loader_fail("code object: a PT_LOAD segment lies outside the file or is implausibly large");
    CodeObject::Segment seg;
    seg.vaddr = ph.p_vaddr, seg.memsz = ph.p_memsz;
    seg.bytes.assign(image.begin() + ph.p_offset, image.begin() + ph.p_offset + ph.p_filesz);
    co->image_size = std::max<uint64_t>(co->image_size, ph.p_vaddr + ph.p_memsz);
    co->segments.push_back(std::move(seg));
  }
  for (const auto& [name, sym] : symbols) {
    if (sym.type == ELF::STT_OBJECT && !name.ends_with(".kd")) co->variables[name] = {sym.value, sym.size};
    const bool in_text = sym.value >= co->text_addr && sym.value - co->text_addr < co->text.size() &&
                         sym.size <= co->text.size() - (sym.value - co->text_addr);
    auto kernel = std::find_if(co->kernels.begin(), co->kernels.end(),
                               [&](const KernelInfo& k) { return k.entry == sym.value; });
    if (sym.type != ELF::STT_FUNC || !in_text || sym.size == 0) continue;
    if (kernel == co->kernels.end()) co->functions.push_back({name, sym.value, sym.size});
    else kernel->code_size = sym.size;  // where its code ends: the next kernel's code is not its own
  }
  for (const Shdr& sec : sections) {
    if (sec.sh_type != ELF::SHT_RELA) continue;
    auto symtab = sec.sh_link < sections.size() ? &sections[sec.sh_link] : nullptr;
    for (const auto& r : unwrap(elf.relas(sec), "code object: relocations")) {
      const uint32_t type = r.getType(false);
      if (type == ELF::R_AMDGPU_RELATIVE64) {
        co->relocations.push_back({r.r_offset, r.r_addend});
      } else if (type == ELF::R_AMDGPU_ABS64 && symtab) {
        auto sym = unwrap(elf.getRelocationSymbol(r, symtab), "code object: relocation symbol");
        if (sym && sym->st_shndx != ELF::SHN_UNDEF) co->relocations.push_back({r.r_offset, int64_t(sym->st_value) + r.r_addend});
      }
    }
  }
  return co;
}

std::vector<std::shared_ptr<const CodeObject>> load_any(std::span<const uint8_t> blob) {
  if (is_elf(blob)) return {load_code_object(blob)};
  if (!is_offload_bundle(blob))
    loader_fail("neither an offload bundle nor an ELF code object (" + std::to_string(blob.size()) +
                " bytes without either magic)");

  std::vector<std::shared_ptr<const CodeObject>> out;
  std::vector<std::string> skipped;  // processors of entries vgpu does not model
  size_t pos = 0;
  while (pos < blob.size()) {
    std::span<const uint8_t> rest = blob.subspan(pos);
    if (!is_offload_bundle(rest))
      loader_fail("unexpected bytes at offset " + std::to_string(pos) + " after an offload bundle");
    size_t extent = offload_bundle_extent(rest);
    for (const BundleEntry& e : read_offload_bundle(rest.first(extent))) {
      // The host entry is empty; other offload kinds (e.g. OpenMP for other targets) are not AMDGPU code.
      if (e.bytes.empty() || e.triple.find("amdgcn-amd-amdhsa") == std::string::npos) continue;
      std::string processor(processor_of(e.triple));
      std::optional<Arch> arch = parse_arch(processor);
      if (!arch) {
        skipped.push_back(processor);
        continue;
      }
      if (!is_elf(e.bytes)) {
        bool bitcode = e.bytes.size() >= 2 && e.bytes[0] == 'B' && e.bytes[1] == 'C';
        loader_fail("offload bundle entry '" + e.triple + "' is not an ELF code object" +
                    (bitcode ? " but LLVM bitcode (an unlinked -fgpu-rdc object)" : ""));
      }
      std::shared_ptr<const CodeObject> co;
      try {
        co = load_code_object(e.bytes);
      } catch (const Error& err) {
        loader_fail("offload bundle entry '" + e.triple + "': " + error_detail(err));
      }
      if (co->arch != *arch)
        loader_fail("offload bundle entry '" + e.triple + "' holds a code object for " +
                    std::string(arch_info(co->arch).name));
      out.push_back(std::move(co));
    }
    pos += std::max<size_t>(extent, 1);
    // The linker pads each source file's bundle to the section alignment with zeros.
    while (pos < blob.size() && blob[pos] == 0) ++pos;
  }
  if (out.empty()) {
    if (skipped.empty()) loader_fail("offload bundle holds no AMDGPU code object");
    std::string list;
    for (const std::string& p : skipped) list += (list.empty() ? "" : ", ") + p;
    loader_fail("offload bundle holds code objects only for " + list + "; vgpu runs gfx942 and gfx950");
  }
  return out;
}

std::vector<std::shared_ptr<const CodeObject>> load_from_host_binary(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) loader_fail(path + ": cannot open");
  std::vector<uint8_t> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) loader_fail(path + ": read error");

  try {
    if (!is_elf(file)) loader_fail("not an ELF file");
    if (file.size() < sizeof(ELFT::Ehdr) || file[ELF::EI_CLASS] != ELF::ELFCLASS64 ||
        file[ELF::EI_DATA] != ELF::ELFDATA2LSB)
      loader_fail("not a 64-bit little-endian ELF file");
    ElfFile elf = unwrap(ElfFile::create(llvm::StringRef(reinterpret_cast<const char*>(file.data()), file.size())),
                         "malformed ELF");
    llvm::ArrayRef<Shdr> sections = unwrap(elf.sections(), "section headers");
    for (const Shdr& s : sections) {
      if (unwrap(elf.getSectionName(s), "section name") != ".hip_fatbin") continue;
      if (s.sh_type == ELF::SHT_NOBITS) loader_fail(".hip_fatbin has no bytes in the file");
      llvm::ArrayRef<uint8_t> bytes = unwrap(elf.getSectionContents(s), ".hip_fatbin");
      return load_any({bytes.data(), bytes.size()});
    }
    loader_fail("no .hip_fatbin section (not a HIP host binary built by clang's default offload driver)");
  } catch (const Error& err) {
    loader_fail(path + ": " + error_detail(err));
  }
}

}  // namespace vgpu
