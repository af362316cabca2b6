// The code-object loader against code objects clang compiled at build time (tests/vgpu/data/*.hip), checked
// field by field against llvm-readelf's listing of the same files, plus malformed inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "vgpu/arch.h"
#include "vgpu/code_object.h"
#include "vgpu/error.h"

namespace {

using vgpu::Arch;
using Bytes = std::vector<uint8_t>;

std::string data_path(const std::string& name) { return std::string(VGPU_LOADER_TEST_DATA) + "/" + name; }

Bytes read_file(const std::string& name) {
  std::ifstream in(data_path(name), std::ios::binary);
  EXPECT_TRUE(in) << "missing test data " << data_path(name);
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string read_text(const std::string& name) {
  Bytes b = read_file(name);
  return std::string(b.begin(), b.end());
}

// What llvm-readelf --file-headers --sections --symbols --notes printed for one code object.
struct ReadelfArg {
  uint32_t offset = 0, size = 0;
  std::string value_kind;
};
struct ReadelfKernel {
  std::map<std::string, std::string> fields;  // kernel-level scalars: ".kernarg_segment_size" -> "296"
  std::vector<ReadelfArg> args;
  uint32_t u32(const std::string& key) const { return static_cast<uint32_t>(std::stoul(fields.at(key))); }
};
struct Readelf {
  int abi_version = -1;
  std::string flags;  // "0x54C, gfx942, xnack, sramecc"
  uint64_t text_addr = 0, text_size = 0;
  std::map<std::string, uint64_t> symbols;       // name -> value (FUNC and OBJECT)
  std::map<std::string, uint64_t> symbol_sizes;  // name -> size
  std::vector<ReadelfKernel> kernels;
  std::string target;
  const ReadelfKernel& kernel(const std::string& name) const {
    for (const ReadelfKernel& k : kernels)
      if (k.fields.at(".name") == name) return k;
    throw std::runtime_error("readelf listing has no kernel " + name);
  }
};

std::string trim(std::string s) {
  s.erase(0, s.find_first_not_of(' '));
  s.erase(s.find_last_not_of(" \t\r") + 1);
  return s;
}

// A small reader for llvm-readelf's text: enough of the ELF header and section lines, the symbol tables and the
// YAML form of the metadata note (kernels at indent 2, their keys at 4, arguments at 6, argument keys at 8).
Readelf parse_readelf(const std::string& text) {
  Readelf r;
  std::istringstream in(text);
  std::string line;
  bool in_kernels = false, in_args = false;
  while (std::getline(in, line)) {
    std::string t = trim(line);
    if (t.rfind("ABI Version:", 0) == 0) r.abi_version = std::stoi(trim(t.substr(12)));
    if (t.rfind("Flags:", 0) == 0) r.flags = trim(t.substr(6));
    if (t.find("] .text ") != std::string::npos) {
      std::istringstream f(t.substr(t.find(']') + 1));
      std::string name, type, addr, off, size;
      f >> name >> type >> addr >> off >> size;
      r.text_addr = std::stoull(addr, nullptr, 16);
      r.text_size = std::stoull(size, nullptr, 16);
    }
    if (t.find(" FUNC ") != std::string::npos || t.find(" OBJECT ") != std::string::npos) {
      std::istringstream f(t);
      std::string num, value, size, type, bind, vis, ndx, name;
      if (f >> num >> value >> size >> type >> bind >> vis >> ndx >> name)
        r.symbols[name] = std::stoull(value, nullptr, 16), r.symbol_sizes[name] = std::stoull(size, nullptr, 10);
    }
    if (line == "amdhsa.kernels:") {
      in_kernels = true;
      continue;
    }
    if (t.rfind("amdhsa.target:", 0) == 0) r.target = trim(t.substr(14));
    if (!in_kernels) continue;
    if (!line.empty() && line[0] != ' ') {  // the next top-level key ends the kernel list
      in_kernels = false;
      continue;
    }
    size_t indent = line.find_first_not_of(' ');
    bool item = line[indent] == '-';
    size_t key_column = item ? indent + 2 : indent;
    std::string entry = line.substr(key_column);
    size_t colon = entry.find(':');
    if (colon == std::string::npos) continue;  // list scalars such as .language_version's
    std::string key = entry.substr(0, colon), value = trim(entry.substr(colon + 1));
    if (key_column == 4) {
      if (item) r.kernels.emplace_back();
      in_args = key == ".args";
      if (!value.empty()) r.kernels.back().fields[key] = value;
    } else if (key_column == 8 && in_args) {
      if (item) r.kernels.back().args.emplace_back();
      ReadelfArg& a = r.kernels.back().args.back();
      if (key == ".offset") a.offset = std::stoul(value);
      if (key == ".size") a.size = std::stoul(value);
      if (key == ".value_kind") a.value_kind = value;
    }
  }
  return r;
}

// A plain offload bundle with the given entries, laid out the way clang does (entries 4096-aligned).
Bytes make_bundle(const std::vector<std::pair<std::string, Bytes>>& entries) {
  auto put64 = [](Bytes& out, uint64_t v) {
    for (int i = 0; i < 8; ++i) out.push_back(uint8_t(v >> (8 * i)));
  };
  const std::string magic = "__CLANG_OFFLOAD_BUNDLE__";
  size_t header = magic.size() + 8;
  for (const auto& [triple, bytes] : entries) header += 24 + triple.size();
  Bytes out(magic.begin(), magic.end());
  put64(out, entries.size());
  uint64_t offset = (header + 4095) / 4096 * 4096;
  std::vector<uint64_t> offsets;
  for (const auto& [triple, bytes] : entries) {
    put64(out, offset);
    put64(out, bytes.size());
    put64(out, triple.size());
    out.insert(out.end(), triple.begin(), triple.end());
    offsets.push_back(offset);
    offset = (offset + bytes.size() + 4095) / 4096 * 4096;
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    out.resize(offsets[i], 0);
    out.insert(out.end(), entries[i].second.begin(), entries[i].second.end());
  }
  return out;
}

// Runs f, which must throw vgpu::Error whose message contains `needle`.
template <class F>
void expect_error(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "expected vgpu::Error containing '" << needle << "'";
  } catch (const vgpu::Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find(needle), std::string::npos) << "message: " << message;
    EXPECT_EQ(message.rfind("vgpu: ", 0), 0u) << "message: " << message;
    EXPECT_EQ(message.find("vgpu: ", 1), std::string::npos) << "prefix repeated: " << message;
  }
}

std::set<std::string> kernel_names(const vgpu::CodeObject& co) {
  std::set<std::string> out;
  for (const vgpu::KernelInfo& k : co.kernels) out.insert(k.name);
  return out;
}

const std::set<std::string> kTestKernels = {"scale_add",        "lds_reverse",    "scratch_lookup",
                                            "_Z9from_pairIfEvPT_4Pair", "ends_in_a_branch", "wide_registers"};

// --- arch ---

TEST(Arch, Table) {
  const vgpu::ArchInfo& a = vgpu::arch_info(Arch::gfx942);
  EXPECT_EQ(a.name, "gfx942");
  EXPECT_EQ(a.default_product, "MI300X");
  EXPECT_EQ(a.lds_bytes, 65536u);
  EXPECT_EQ(a.lds_banks, 32u);
  EXPECT_EQ(a.fp8, vgpu::Fp8Flavour::fnuz);
  EXPECT_EQ(a.lds_dma_m0_mask(), 0xffffu);
  const vgpu::ArchInfo& b = vgpu::arch_info(Arch::gfx950);
  EXPECT_EQ(b.name, "gfx950");
  EXPECT_EQ(b.default_product, "MI355X");
  EXPECT_EQ(b.lds_bytes, 163840u);
  EXPECT_EQ(b.lds_banks, 64u);
  EXPECT_EQ(b.fp8, vgpu::Fp8Flavour::ocp);
  EXPECT_EQ(b.lds_dma_m0_mask(), 0x3ffffu);
  const vgpu::ArchInfo& c = vgpu::arch_info(Arch::gfx90a);
  EXPECT_EQ(c.name, "gfx90a");
  EXPECT_EQ(c.family, "CDNA2");
  EXPECT_EQ(c.default_product, "MI210");
  EXPECT_EQ(c.elf_mach, 0x03fu);
  EXPECT_EQ(c.version_major * 100 + c.version_minor * 10 + c.version_stepping, 910u);  // HIP's gcnArch
  EXPECT_EQ(c.lds_bytes, 65536u);
  EXPECT_EQ(c.lds_banks, 32u);
  EXPECT_EQ(c.registers_per_lane, 512u);
  EXPECT_EQ(c.fp8, vgpu::Fp8Flavour::none);
  EXPECT_EQ(c.lds_dma_m0_mask(), 0xffffu);
  EXPECT_EQ(c.lds_dma_max_bytes, 4u);
}

TEST(Arch, Products) {
  const vgpu::ProductInfo& a = vgpu::default_product(Arch::gfx942);
  EXPECT_EQ(a.name, "MI300X");
  EXPECT_EQ(a.compute_units, 304u);
  EXPECT_EQ(a.xcds, 8u);
  EXPECT_EQ(a.peak_clock_mhz, 2100u);
  EXPECT_EQ(a.memory_clock_khz(), 1300000u);
  const vgpu::ProductInfo& b = vgpu::default_product(Arch::gfx950);
  EXPECT_EQ(b.name, "MI355X");
  EXPECT_EQ(b.compute_units, 256u);
  EXPECT_EQ(b.xcds, 8u);
  EXPECT_EQ(b.peak_clock_mhz, 2400u);
  EXPECT_EQ(b.memory_clock_khz(), 2000000u);
  const vgpu::ProductInfo& c = vgpu::default_product(Arch::gfx90a);
  EXPECT_EQ(c.name, "MI210");
  EXPECT_EQ(c.compute_units, 104u);
  EXPECT_EQ(c.xcds, 1u);
  EXPECT_EQ(c.llc_bytes, 0u);
  EXPECT_EQ(c.memory_clock_khz(), 800000u);
  // MI250X: one of its two dies, as HIP sees it.
  ASSERT_NE(vgpu::find_product("mi250x"), nullptr);
  EXPECT_EQ(vgpu::find_product("mi250x")->arch, Arch::gfx90a);
  EXPECT_EQ(vgpu::find_product("mi250x")->compute_units, 110u);
  EXPECT_EQ(vgpu::find_product("mi250x")->hbm_bytes, uint64_t(64) << 30);
  // The data-sheet peaks are CUs x FLOP per clock per CU x the clock (CDNA2: 1024 for f16, 256 for f64 matrix).
  for (const char* name : {"MI210", "MI250X"}) {
    const vgpu::ProductInfo& p = *vgpu::find_product(name);
    EXPECT_NEAR(p.peak.f16, p.compute_units * 1024.0 * p.peak_clock_mhz * 1e-6, 0.5) << name;
    EXPECT_NEAR(p.peak.fp64_matrix, p.compute_units * 256.0 * p.peak_clock_mhz * 1e-6, 0.1) << name;
    EXPECT_EQ(p.peak.fp8, 0.0) << name;
  }
  // Lookup by name, any case; each product is built on the arch its row names.
  ASSERT_NE(vgpu::find_product("mi325x"), nullptr);
  EXPECT_EQ(vgpu::find_product("mi325x")->arch, Arch::gfx942);
  EXPECT_EQ(vgpu::find_product("MI325X")->hbm_bytes, uint64_t(256) << 30);
  ASSERT_NE(vgpu::find_product("Mi350x"), nullptr);
  EXPECT_EQ(vgpu::find_product("Mi350x")->arch, Arch::gfx950);
  EXPECT_EQ(vgpu::find_product("mi400"), nullptr);
  EXPECT_EQ(vgpu::find_product(""), nullptr);
  // Every arch's default product exists and is built on it; every product has a source.
  for (const vgpu::ArchInfo& arch : vgpu::all_archs()) {
    const vgpu::ProductInfo* p = vgpu::find_product(arch.default_product);
    ASSERT_NE(p, nullptr) << arch.name;
    EXPECT_EQ(p->arch, arch.arch) << arch.name;
  }
  for (const vgpu::ProductInfo& p : vgpu::all_products()) EXPECT_FALSE(p.source.empty()) << p.name;
}

TEST(Arch, Parse) {
  EXPECT_EQ(vgpu::parse_arch("gfx950"), Arch::gfx950);
  EXPECT_EQ(vgpu::parse_arch("gfx942"), Arch::gfx942);
  EXPECT_EQ(vgpu::parse_arch("gfx950:sramecc+:xnack-"), Arch::gfx950);
  EXPECT_EQ(vgpu::parse_arch("amdgcn-amd-amdhsa--gfx942"), Arch::gfx942);
  EXPECT_EQ(vgpu::parse_arch("amdgcn-amd-amdhsa--gfx950:xnack-"), Arch::gfx950);
  EXPECT_EQ(vgpu::parse_arch("hipv4-amdgcn-amd-amdhsa--gfx942"), Arch::gfx942);
  EXPECT_EQ(vgpu::parse_arch("gfx90a"), Arch::gfx90a);
  EXPECT_EQ(vgpu::parse_arch("hipv4-amdgcn-amd-amdhsa--gfx90a"), Arch::gfx90a);
  EXPECT_EQ(vgpu::parse_arch("gfx90a:sramecc+:xnack-"), Arch::gfx90a);
  EXPECT_EQ(vgpu::parse_arch("gfx908"), std::nullopt);
  EXPECT_EQ(vgpu::parse_arch("gfx90"), std::nullopt);
  EXPECT_EQ(vgpu::parse_arch("gfx9500"), std::nullopt);
  EXPECT_EQ(vgpu::parse_arch(""), std::nullopt);
  EXPECT_EQ(vgpu::parse_arch("host-x86_64-unknown-linux-gnu-"), std::nullopt);
}

// --- plain code objects, against llvm-readelf ---

class CodeObjectTest : public testing::TestWithParam<Arch> {};

TEST_P(CodeObjectTest, MatchesReadelf) {
  const std::string arch(vgpu::arch_info(GetParam()).name);
  const std::string file = "loader_kernels." + arch + ".co";
  Bytes elf = read_file(file);
  Readelf ref = parse_readelf(read_text(file + ".readelf.txt"));
  ASSERT_EQ(ref.kernels.size(), kTestKernels.size()) << "readelf listing not understood";
  ASSERT_GE(ref.kernel("scale_add").args.size(), 6u) << "readelf listing not understood";
  ASSERT_NE(ref.text_size, 0u) << "readelf listing not understood";

  std::shared_ptr<const vgpu::CodeObject> co = vgpu::load_code_object(elf);
  EXPECT_EQ(co->arch, GetParam());
  EXPECT_EQ(co->target, ref.target);
  EXPECT_EQ(co->target, "amdgcn-amd-amdhsa--" + arch);
  EXPECT_NE(ref.flags.find(arch), std::string::npos);
  EXPECT_EQ(co->code_object_version, unsigned(ref.abi_version + 2));  // EI_ABIVERSION 2, 3, 4 = v4, v5, v6
  EXPECT_EQ(co->elf, elf);
  EXPECT_EQ(co->text_addr, ref.text_addr);
  EXPECT_EQ(co->text.size(), ref.text_size);
  EXPECT_EQ(kernel_names(*co), kTestKernels);

  for (const vgpu::KernelInfo& k : co->kernels) {
    SCOPED_TRACE(k.name);
    const ReadelfKernel& rk = ref.kernel(k.name);
    ASSERT_EQ(k.args.size(), rk.args.size());
    for (size_t i = 0; i < k.args.size(); ++i) {
      EXPECT_EQ(k.args[i].offset, rk.args[i].offset) << "arg " << i;
      EXPECT_EQ(k.args[i].size, rk.args[i].size) << "arg " << i;
      EXPECT_EQ(k.args[i].value_kind, rk.args[i].value_kind) << "arg " << i;
    }
    EXPECT_EQ(k.kernarg_segment_size, rk.u32(".kernarg_segment_size"));
    EXPECT_EQ(k.kernarg_segment_align, rk.u32(".kernarg_segment_align"));
    EXPECT_EQ(k.group_segment_fixed_size, rk.u32(".group_segment_fixed_size"));
    EXPECT_EQ(k.private_segment_fixed_size, rk.u32(".private_segment_fixed_size"));
    EXPECT_EQ(k.sgpr_count, rk.u32(".sgpr_count"));
    EXPECT_EQ(k.vgpr_count, rk.u32(".vgpr_count"));
    EXPECT_EQ(k.agpr_count, rk.u32(".agpr_count"));
    EXPECT_EQ(k.sgpr_spill_count, rk.u32(".sgpr_spill_count"));
    EXPECT_EQ(k.vgpr_spill_count, rk.u32(".vgpr_spill_count"));
    EXPECT_EQ(k.wavefront_size, rk.u32(".wavefront_size"));
    EXPECT_EQ(k.max_flat_workgroup_size, rk.u32(".max_flat_workgroup_size"));
    EXPECT_EQ(k.uses_dynamic_stack, rk.fields.at(".uses_dynamic_stack") == "true");

    // The descriptor agrees with the metadata, and its entry offset leads to the kernel's function symbol.
    EXPECT_EQ(k.kd.group_segment_fixed_size, k.group_segment_fixed_size);
    EXPECT_EQ(k.kd.private_segment_fixed_size, k.private_segment_fixed_size);
    EXPECT_EQ(k.kd.kernarg_size, k.kernarg_segment_size);
    EXPECT_EQ(k.entry, ref.symbols.at(k.name));
    // Where its code ends: the next kernel's code (and its registers) are not this one's.
    EXPECT_EQ(k.code_size, ref.symbol_sizes.at(k.name));
    EXPECT_GT(k.code_size, 0u);
    EXPECT_EQ(uint64_t(ref.symbols.at(k.name + ".kd") + k.kd.kernel_code_entry_byte_offset), k.entry);
    EXPECT_GE(k.entry, co->text_addr);
    EXPECT_LT(k.entry, co->text_addr + co->text.size());
    EXPECT_EQ(k.entry % 256, 0u) << "kernel entries are 256-byte aligned";
    EXPECT_FALSE(k.kd.wavefront_size32());
    EXPECT_TRUE(k.kd.enable_kernarg_segment_ptr());
    // gfx942/gfx950 have architected flat scratch; gfx90a's kernels take a private segment buffer V# (MUBUF scratch).
    EXPECT_EQ(k.kd.enable_private_segment_buffer(), GetParam() == Arch::gfx90a);
    EXPECT_GT(k.kd.user_sgpr_count(), 0u);
    EXPECT_GE(k.kd.accum_offset(), 4u);
    EXPECT_EQ(co->find(k.name), &k);
  }
  EXPECT_EQ(co->find("no_such_kernel"), nullptr);

  // Facts fixed by the kernels' source.
  const vgpu::KernelInfo* scale_add = co->find("scale_add");
  ASSERT_NE(scale_add, nullptr);
  ASSERT_GE(scale_add->args.size(), 6u);
  const uint32_t offsets[] = {0, 8, 16, 20, 24, 32}, sizes[] = {8, 8, 4, 1, 8, 4};
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(scale_add->args[i].offset, offsets[i]);
    EXPECT_EQ(scale_add->args[i].size, sizes[i]);
    EXPECT_EQ(scale_add->args[i].value_kind, i < 2 ? "global_buffer" : "by_value");
  }
  EXPECT_EQ(scale_add->args[6].value_kind, "hidden_block_count_x");
  EXPECT_TRUE(scale_add->kd.enable_wg_id(0));

  const vgpu::KernelInfo* lds = co->find("lds_reverse");
  ASSERT_NE(lds, nullptr);
  EXPECT_EQ(lds->group_segment_fixed_size, 4096u);
  EXPECT_EQ(lds->kd.group_segment_fixed_size, 4096u);
  EXPECT_EQ(lds->kd.vgpr_workitem_id(), 0u) << "only threadIdx.x is used";

  const vgpu::KernelInfo* scratch = co->find("scratch_lookup");
  ASSERT_NE(scratch, nullptr);
  EXPECT_GE(scratch->private_segment_fixed_size, 256u) << "64 ints in scratch";
  EXPECT_TRUE(scratch->kd.enable_private_segment());

  const vgpu::KernelInfo* pair = co->find("_Z9from_pairIfEvPT_4Pair");
  ASSERT_NE(pair, nullptr);
  ASSERT_EQ(pair->args.size(), 2u);
  EXPECT_EQ(pair->args[1].offset, 8u);
  EXPECT_EQ(pair->args[1].size, 16u);
  EXPECT_EQ(pair->args[1].value_kind, "by_value");
}

TEST_P(CodeObjectTest, LoadAnyTakesAPlainCodeObject) {
  const std::string arch(vgpu::arch_info(GetParam()).name);
  auto cos = vgpu::load_any(read_file("loader_kernels." + arch + ".co"));
  ASSERT_EQ(cos.size(), 1u);
  EXPECT_EQ(cos[0]->arch, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Archs, CodeObjectTest, testing::Values(Arch::gfx90a, Arch::gfx942, Arch::gfx950),
                         [](const auto& info) { return std::string(vgpu::arch_info(info.param).name); });

// --- offload bundles ---

const std::vector<std::string> kClangTriples = {"hipv4-amdgcn-amd-amdhsa--gfx942", "hipv4-amdgcn-amd-amdhsa--gfx950",
                                                "host-x86_64-unknown-linux-gnu-"};

std::vector<std::string> sorted_triples(const std::vector<vgpu::BundleEntry>& entries) {
  std::vector<std::string> out;
  for (const vgpu::BundleEntry& e : entries) out.push_back(e.triple);
  std::sort(out.begin(), out.end());
  return out;
}

// Both archs present once, each with the test kernels.
void expect_both_archs(const std::vector<std::shared_ptr<const vgpu::CodeObject>>& cos) {
  ASSERT_EQ(cos.size(), 2u);
  std::set<Arch> archs;
  for (const auto& co : cos) {
    archs.insert(co->arch);
    EXPECT_EQ(kernel_names(*co), kTestKernels);
  }
  EXPECT_EQ(archs, (std::set<Arch>{Arch::gfx942, Arch::gfx950}));
}

TEST(Bundle, PlainFromClang) {
  Bytes bundle = read_file("loader_kernels.bundle");
  EXPECT_TRUE(vgpu::is_offload_bundle(bundle));
  std::vector<vgpu::BundleEntry> entries = vgpu::read_offload_bundle(bundle);
  EXPECT_EQ(sorted_triples(entries), kClangTriples);
  for (const vgpu::BundleEntry& e : entries) {
    EXPECT_EQ(e.storage, nullptr);
    if (e.triple.rfind("host-", 0) == 0) {
      EXPECT_TRUE(e.bytes.empty()) << "the host entry of a device-only bundle is empty";
    } else {
      ASSERT_GE(e.bytes.size(), 4u);
      EXPECT_EQ(std::memcmp(e.bytes.data(), "\x7f" "ELF", 4), 0);
      EXPECT_GE(e.bytes.data(), bundle.data());
      EXPECT_LE(e.bytes.data() + e.bytes.size(), bundle.data() + bundle.size());
    }
  }
  EXPECT_EQ(vgpu::offload_bundle_size(bundle.data()), bundle.size());
  expect_both_archs(vgpu::load_any(bundle));
}

TEST(Bundle, CompressedFromClang) {
  Bytes plain = read_file("loader_kernels.bundle");
  Bytes packed = read_file("loader_kernels.ccob");
  ASSERT_GE(packed.size(), 4u);
  EXPECT_EQ(std::string(packed.begin(), packed.begin() + 4), "CCOB") << "clang --offload-compress writes CCOB";
  EXPECT_LT(packed.size(), plain.size());
  EXPECT_TRUE(vgpu::is_offload_bundle(packed));
  EXPECT_EQ(vgpu::offload_bundle_size(packed.data()), packed.size());

  Bytes unpacked = vgpu::decompress_offload_bundle(packed);
  EXPECT_EQ(vgpu::offload_bundle_size(unpacked.data()), unpacked.size());
  std::vector<vgpu::BundleEntry> entries = vgpu::read_offload_bundle(packed);
  EXPECT_EQ(sorted_triples(entries), kClangTriples);
  for (const vgpu::BundleEntry& e : entries) {
    ASSERT_NE(e.storage, nullptr) << "entries of a compressed bundle own the decompressed bytes";
    EXPECT_GE(e.bytes.data(), e.storage->data());
    EXPECT_LE(e.bytes.data() + e.bytes.size(), e.storage->data() + e.storage->size());
  }
  auto from_packed = vgpu::load_any(packed);
  expect_both_archs(from_packed);
  // Same source, same flags: the same machine code as in the plain bundle.
  auto from_plain = vgpu::load_any(plain);
  for (const auto& a : from_packed)
    for (const auto& b : from_plain)
      if (a->arch == b->arch) EXPECT_EQ(a->text, b->text);
}

TEST(Bundle, SkipsArchsVgpuDoesNotModel) {
  Bytes gfx908 = read_file("loader_kernels.gfx908.co");
  Bytes gfx90a = read_file("loader_kernels.gfx90a.co");
  Bytes gfx942 = read_file("loader_kernels.gfx942.co");
  Bytes mixed = make_bundle({{"host-x86_64-unknown-linux-gnu-", {}},
                             {"hipv4-amdgcn-amd-amdhsa--gfx908", gfx908},
                             {"hipv4-amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-", gfx942}});
  auto cos = vgpu::load_any(mixed);
  ASSERT_EQ(cos.size(), 1u);
  EXPECT_EQ(cos[0]->arch, Arch::gfx942);

  // As Debian's ROCm test programs carry them: gfx908 beside gfx90a (and no gfx942/gfx950) loads the gfx90a code.
  Bytes debian_like = make_bundle({{"host-x86_64-unknown-linux-gnu-", {}},
                                   {"hipv4-amdgcn-amd-amdhsa--gfx908", gfx908},
                                   {"hipv4-amdgcn-amd-amdhsa--gfx90a", gfx90a}});
  cos = vgpu::load_any(debian_like);
  ASSERT_EQ(cos.size(), 1u);
  EXPECT_EQ(cos[0]->arch, Arch::gfx90a);
  EXPECT_EQ(kernel_names(*cos[0]), kTestKernels);

  Bytes only_908 = make_bundle({{"host-x86_64-unknown-linux-gnu-", {}}, {"hipv4-amdgcn-amd-amdhsa--gfx908", gfx908}});
  expect_error([&] { vgpu::load_any(only_908); }, "gfx908");
  expect_error([&] { vgpu::load_code_object(gfx908); }, "gfx908");

  // An entry whose triple and code object disagree.
  Bytes lying = make_bundle({{"hipv4-amdgcn-amd-amdhsa--gfx950", gfx942}});
  expect_error([&] { vgpu::load_any(lying); }, "gfx942");
}

TEST(Bundle, BackToBackBundlesWithPadding) {
  Bytes plain = read_file("loader_kernels.bundle");
  Bytes packed = read_file("loader_kernels.ccob");
  Bytes both = plain;
  both.resize((both.size() + 4095) / 4096 * 4096, 0);
  both.insert(both.end(), packed.begin(), packed.end());
  both.resize(both.size() + 100, 0);
  EXPECT_EQ(vgpu::load_any(both).size(), 4u);
}

// --- host binaries ---

TEST(HostBinary, SharedLibraryFromTwoSources) {
  auto cos = vgpu::load_from_host_binary(data_path("libloader_fat.so"));
  // One bundle per source file, each with a gfx942 and a gfx950 code object.
  ASSERT_EQ(cos.size(), 4u);
  std::map<Arch, std::set<std::string>> kernels;
  for (const auto& co : cos)
    for (const vgpu::KernelInfo& k : co->kernels) kernels[co->arch].insert(k.name);
  std::set<std::string> all = kTestKernels;
  all.insert("other_fill");
  EXPECT_EQ(kernels[Arch::gfx942], all);
  EXPECT_EQ(kernels[Arch::gfx950], all);
}

TEST(HostBinary, ObjectWithCompressedBundle) {
  expect_both_archs(vgpu::load_from_host_binary(data_path("loader_kernels.compressed.o")));
}

TEST(HostBinary, Errors) {
  expect_error([] { vgpu::load_from_host_binary(data_path("does_not_exist.so")); }, "does_not_exist.so: cannot open");
  // A code object is an ELF file but not a host binary.
  expect_error([] { vgpu::load_from_host_binary(data_path("loader_kernels.gfx942.co")); }, "no .hip_fatbin section");
  expect_error([] { vgpu::load_from_host_binary(data_path("loader_kernels.bundle")); }, "not an ELF file");
}

// --- malformed input ---

TEST(Malformed, NotABundleOrElf) {
  const std::string text = "this is neither an ELF file nor an offload bundle";
  Bytes junk(text.begin(), text.end());
  expect_error([&] { vgpu::load_any(junk); }, "neither an offload bundle nor an ELF code object");
  expect_error([&] { vgpu::load_any(Bytes{}); }, "neither an offload bundle nor an ELF code object");
  expect_error([&] { vgpu::load_code_object(junk); }, "not an ELF code object");
  expect_error([&] { vgpu::read_offload_bundle(junk); }, "not an offload bundle");
  EXPECT_FALSE(vgpu::is_offload_bundle(junk));
}

TEST(Malformed, TruncatedBundle) {
  Bytes bundle = read_file("loader_kernels.bundle");
  // Inside the entry count, inside the first entry's header, inside its triple, and inside the last entry's data.
  for (size_t cut : {size_t(28), size_t(40), size_t(70), bundle.size() - 1}) {
    SCOPED_TRACE(cut);
    Bytes part(bundle.begin(), bundle.begin() + cut);
    expect_error([&] { vgpu::read_offload_bundle(part); }, "offload bundle is truncated");
    expect_error([&] { vgpu::load_any(part); }, "offload bundle is truncated");
  }
  // An entry count no file could hold.
  Bytes huge = bundle;
  huge[24 + 7] = 0x7f;
  expect_error([&] { vgpu::read_offload_bundle(huge); }, "corrupt header");
}

TEST(Malformed, BrokenCompressedBundle) {
  Bytes packed = read_file("loader_kernels.ccob");
  Bytes part(packed.begin(), packed.begin() + packed.size() / 2);
  expect_error([&] { vgpu::read_offload_bundle(part); }, "compressed offload bundle is truncated");
  Bytes header_only(packed.begin(), packed.begin() + 10);
  expect_error([&] { vgpu::read_offload_bundle(header_only); }, "truncated");
  Bytes garbled = packed;
  for (size_t i = 40; i < garbled.size(); i += 7) garbled[i] ^= 0x5a;
  expect_error([&] { vgpu::read_offload_bundle(garbled); }, "cannot decompress offload bundle");
  Bytes bad_method = packed;
  bad_method[6] = 9;
  expect_error([&] { vgpu::read_offload_bundle(bad_method); }, "unknown compression method 9");
  Bytes bad_version = packed;
  bad_version[4] = 7;
  expect_error([&] { vgpu::read_offload_bundle(bad_version); }, "version 7");
}

TEST(Malformed, WrongKindOfElf) {
  // The x86-64 host object is a valid ELF file but not an AMDGPU code object.
  expect_error([] { vgpu::load_code_object(read_file("loader_kernels.compressed.o")); }, "not an AMDGPU code object");
  Bytes elf = read_file("loader_kernels.gfx950.co");
  Bytes head(elf.begin(), elf.begin() + 40);
  expect_error([&] { vgpu::load_code_object(head); }, "truncated");
  // Section headers cut off.
  Bytes most(elf.begin(), elf.begin() + elf.size() - 200);
  expect_error([&] { vgpu::load_code_object(most); }, "code object");
}

// Finds the 64-byte descriptor of `k` inside the ELF image by its decoded fields.
size_t descriptor_offset(const Bytes& elf, const vgpu::KernelInfo& k) {
  auto read = [&](size_t at, size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t(elf[at + i]) << (8 * i);
    return v;
  };
  for (size_t i = 0; i + 64 <= elf.size(); i += 64)  // descriptors are 64-byte aligned in the file
    if (read(i, 4) == k.kd.group_segment_fixed_size && read(i + 8, 4) == k.kd.kernarg_size &&
        read(i + 16, 8) == uint64_t(k.kd.kernel_code_entry_byte_offset) && read(i + 48, 4) == k.kd.pgm_rsrc1)
      return i;
  return SIZE_MAX;
}

TEST(Malformed, InconsistentCodeObject) {
  Bytes elf = read_file("loader_kernels.gfx950.co");
  auto co = vgpu::load_code_object(elf);
  const vgpu::KernelInfo* lds = co->find("lds_reverse");
  ASSERT_NE(lds, nullptr);

  // A descriptor whose entry offset points past .text.
  size_t kd = descriptor_offset(elf, *lds);
  ASSERT_NE(kd, SIZE_MAX);
  Bytes far = elf;
  far[kd + 16 + 3] ^= 0x10;  // +/- 16 MiB
  expect_error([&] { vgpu::load_code_object(far); }, "kernel lds_reverse has entry");

  // The metadata names a descriptor symbol that does not exist (patch the note's copy of the name only).
  const std::string name = "lds_reverse.kd";
  auto at = std::search(elf.begin(), elf.end(), name.begin(), name.end());
  ASSERT_NE(at, elf.end());
  Bytes renamed = elf;
  renamed[(at - elf.begin()) + name.size() - 1] = 'x';
  expect_error([&] { vgpu::load_code_object(renamed); }, "has no descriptor symbol lds_reverse.kx");

  // e_flags (offset 48) says gfx942 while the metadata says gfx950.
  Bytes relabeled = elf;
  ASSERT_EQ(relabeled[48], 0x4f);
  relabeled[48] = 0x4c;
  expect_error([&] { vgpu::load_code_object(relabeled); }, "disagrees");
}

TEST(Malformed, BitcodeEntry) {
  Bytes bitcode = {'B', 'C', 0xc0, 0xde, 0, 0, 0, 0};
  Bytes bundle = make_bundle({{"hip-amdgcn-amd-amdhsa--gfx950", bitcode}});
  expect_error([&] { vgpu::load_any(bundle); }, "LLVM bitcode");
}

// Every prefix and many single-byte corruptions of a real code object: the loader either loads it or throws
// vgpu::Error; it never crashes or throws anything else.
TEST(Malformed, CorruptionsNeverCrash) {
  Bytes elf = read_file("loader_kernels.gfx950.co");
  auto try_load = [](const Bytes& b) {
    try {
      vgpu::load_any(b);
    } catch (const vgpu::Error&) {
    }
  };
  for (size_t cut = 0; cut < elf.size(); cut += 61) try_load(Bytes(elf.begin(), elf.begin() + cut));
  std::mt19937 rng(1234);
  for (int i = 0; i < 3000; ++i) {
    Bytes b = elf;
    for (int j = 0; j < 3; ++j) b[rng() % b.size()] = uint8_t(rng());
    try_load(b);
  }
  Bytes bundle = read_file("loader_kernels.bundle");
  for (int i = 0; i < 500; ++i) {
    Bytes b = bundle;
    b[rng() % 200] = uint8_t(rng());
    try_load(b);
  }
}

}  // namespace
