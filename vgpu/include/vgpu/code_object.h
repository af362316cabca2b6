// Loading AMDGPU code objects: the clang offload bundle inside a HIP host binary, or a plain ELF code object.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/arch.h"
#include "vgpu/error.h"

namespace vgpu {

// One argument of a kernel as the AMDGPU metadata note describes it (.args).
struct KernelArg {
  std::string name;        // .name (may be empty)
  std::string value_kind;  // .value_kind: by_value, global_buffer, hidden_block_count_x, hidden_group_size_x, ...
  uint32_t offset = 0;     // .offset in the kernarg segment
  uint32_t size = 0;       // .size in bytes
};

// The 64-byte kernel descriptor (symbol NAME.kd), decoded. Field meanings: LLVM AMDGPUUsage, code object v5.
struct KernelDescriptor {
  uint32_t group_segment_fixed_size = 0;
  uint32_t private_segment_fixed_size = 0;
  uint32_t kernarg_size = 0;
  int64_t kernel_code_entry_byte_offset = 0;
  uint32_t pgm_rsrc3 = 0, pgm_rsrc1 = 0, pgm_rsrc2 = 0;
  uint16_t kernel_code_properties = 0;
  uint16_t kernarg_preload = 0;

  // Derived fields.
  uint32_t user_sgpr_count() const { return (pgm_rsrc2 >> 1) & 0x1f; }
  bool enable_private_segment() const { return pgm_rsrc2 & 1; }
  bool enable_wg_id(int dim) const { return (pgm_rsrc2 >> (7 + dim)) & 1; }
  bool enable_wg_info() const { return (pgm_rsrc2 >> 10) & 1; }
  uint32_t vgpr_workitem_id() const { return (pgm_rsrc2 >> 11) & 3; }
  // kernel_code_properties bits (AMDGPUUsage): which user SGPRs are set up.
  bool enable_private_segment_buffer() const { return kernel_code_properties & (1u << 0); }
  bool enable_dispatch_ptr() const { return kernel_code_properties & (1u << 1); }
  bool enable_queue_ptr() const { return kernel_code_properties & (1u << 2); }
  bool enable_kernarg_segment_ptr() const { return kernel_code_properties & (1u << 3); }
  bool enable_dispatch_id() const { return kernel_code_properties & (1u << 4); }
  bool enable_flat_scratch_init() const { return kernel_code_properties & (1u << 5); }
  bool enable_private_segment_size() const { return kernel_code_properties & (1u << 6); }
  bool wavefront_size32() const { return kernel_code_properties & (1u << 10); }
  // gfx90a+: AGPRs start at unified register (accum_offset + 1) * 4.
  uint32_t accum_offset() const { return ((pgm_rsrc3 & 0x3f) + 1) * 4; }
  // Float mode (RSRC1 bits 19:12): FP_ROUND (19:12 low nibble) and FP_DENORM (high nibble).
  uint32_t float_mode() const { return (pgm_rsrc1 >> 12) & 0xff; }
};

// One kernel of a code object: metadata from the note plus its descriptor and entry point.
struct KernelInfo {
  std::string name;                 // .name (the symbol name, e.g. _Z6vecaddPfS_i)
  std::vector<KernelArg> args;      // .args, in order; hidden arguments included
  uint32_t kernarg_segment_size = 0;      // .kernarg_segment_size
  uint32_t kernarg_segment_align = 0;     // .kernarg_segment_align
  uint32_t group_segment_fixed_size = 0;  // .group_segment_fixed_size (static LDS bytes)
  uint32_t private_segment_fixed_size = 0;// .private_segment_fixed_size (scratch bytes per lane)
  uint32_t sgpr_count = 0, vgpr_count = 0, agpr_count = 0;
  uint32_t sgpr_spill_count = 0, vgpr_spill_count = 0;
  uint32_t wavefront_size = 64;
  uint32_t max_flat_workgroup_size = 1024;
  bool uses_dynamic_stack = false;
  KernelDescriptor kd;
  uint64_t entry = 0;               // virtual address of the first instruction
  uint64_t code_size = 0;           // bytes of its code (its STT_FUNC symbol's size); 0 when no symbol says
};

// A loaded code object for one arch: its text (executable bytes) and kernels.
struct CodeObject {
  Arch arch{};
  uint64_t serial = 0;              // unique per load: what device caches key on (an address may be reused)
  std::string target;               // e.g. "amdgcn-amd-amdhsa--gfx950:sramecc+:xnack-"
  uint32_t code_object_version = 0; // 4, 5 or 6 (from EI_ABIVERSION); decides the hidden kernarg layout
  std::vector<uint8_t> elf;         // the whole ELF image, kept for disassembly and reports
  uint64_t text_addr = 0;           // virtual address of .text
  std::vector<uint8_t> text;        // bytes of .text
  std::vector<KernelInfo> kernels;
  // Device functions (STT_FUNC symbols lying wholly in .text, other than kernel entries), which kernels may call.
  struct Function {
    std::string name;
    uint64_t vaddr = 0, size = 0;
  };
  std::vector<Function> functions;

  // The loadable image: PT_LOAD segments at their virtual addresses, the variables in it (__device__, __constant__),
  // and the dynamic relocations that make pointers in data absolute once the image has a base address.
  struct Segment {
    uint64_t vaddr = 0, memsz = 0;
    std::vector<uint8_t> bytes;     // the file part; the rest up to memsz is zero
  };
  struct Variable {
    uint64_t vaddr = 0, size = 0;
  };
  struct Relocation {
    uint64_t vaddr = 0;             // 64-bit word to write
    int64_t addend = 0;             // written value = image base + addend (R_AMDGPU_RELATIVE64, or ABS64 of a symbol)
  };
  std::vector<Segment> segments;
  uint64_t image_size = 0;          // highest vaddr + memsz over the segments
  std::map<std::string, Variable, std::less<>> variables;
  std::vector<Relocation> relocations;
  // Format strings of buffered printf (-mprintf-kind=buffered), by the 64-bit hash the kernels write in their records
  // (the metadata's amdhsa.printf entries "...:HASH,FORMAT").
  std::map<uint64_t, std::string> printf_formats;

  const KernelInfo* find(std::string_view name) const;
};

// Parses a plain AMDGPU ELF code object. Throws vgpu::Error with a clear message on malformed input
// (also for a code object of an arch other than gfx942/gfx950; the message names the arch).
std::shared_ptr<const CodeObject> load_code_object(std::span<const uint8_t> elf);

// One entry of a clang offload bundle ("__CLANG_OFFLOAD_BUNDLE__"): its triple and bytes.
struct BundleEntry {
  std::string triple;               // e.g. "hipv4-amdgcn-amd-amdhsa--gfx950"
  std::span<const uint8_t> bytes;   // points into the bundle (or into `storage`)
  // Set only when the bundle was compressed: the decompressed bundle that `bytes` points into.
  std::shared_ptr<const std::vector<uint8_t>> storage;
};
// Lists the entries of the offload bundle at the start of `bundle`, plain or compressed ("CCOB", zstd or zlib).
// Bytes after the bundle are ignored. Throws vgpu::Error if it is not one or is truncated.
std::vector<BundleEntry> read_offload_bundle(std::span<const uint8_t> bundle);

// True if `blob` starts with the magic of a plain ("__CLANG_OFFLOAD_BUNDLE__") or compressed ("CCOB") bundle.
bool is_offload_bundle(std::span<const uint8_t> blob);
// The plain form of a compressed bundle ("CCOB" versions 1-3); a plain bundle is returned as a copy.
std::vector<uint8_t> decompress_offload_bundle(std::span<const uint8_t> bundle);
// Bytes occupied by the bundle that starts at `bundle`, read from its header alone: for a bundle known only by a
// pointer, as __hipRegisterFatBinary receives it. Throws vgpu::Error if there is no bundle there, or for a
// version-1 compressed bundle (which does not record its size).
size_t offload_bundle_size(const uint8_t* bundle);

// All device code objects reachable from a blob that is a plain ELF code object, an offload bundle, or several
// bundles back to back with zero padding between them (the .hip_fatbin section of a program linked from several
// HIP sources). Bundle entries for archs vgpu does not model (e.g. gfx908) are skipped; if nothing is left,
// vgpu::Error names them.
std::vector<std::shared_ptr<const CodeObject>> load_any(std::span<const uint8_t> blob);

// The device code objects of a HIP host executable, shared library or object file: loads its ".hip_fatbin"
// section with load_any. Throws vgpu::Error if the file cannot be read or has no such section.
std::vector<std::shared_ptr<const CodeObject>> load_from_host_binary(const std::string& path);

}  // namespace vgpu
