// Clang offload bundles: the container clang puts around the per-arch device code objects of a HIP program,
// in its plain ("__CLANG_OFFLOAD_BUNDLE__") and compressed ("CCOB") forms.
//
// Plain layout (all integers little-endian uint64):
//   magic[24] | entry count | per entry: offset, size, triple length, triple bytes | entry data...
// Offsets are relative to the start of the bundle. The host entry ("host-x86_64-unknown-linux-gnu-") is empty.
//
// Compressed layout (clang --offload-compress; LLVM's CompressedOffloadBundle), integers little-endian:
//   v1: "CCOB" | u16 version | u16 method | u32 uncompressed size | u64 hash | data to the end of the input
//   v2: "CCOB" | u16 version | u16 method | u32 total size | u32 uncompressed size | u64 hash | data
//   v3: "CCOB" | u16 version | u16 method | u64 total size | u64 uncompressed size | u64 hash | data
// where the total size includes the header, method is llvm::compression::Format (0 zlib, 1 zstd) and the data
// decompresses to a plain bundle.
#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>

#include "loader_util.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Compression.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/Error.h"
#include "vgpu/code_object.h"

namespace vgpu {
namespace {

constexpr std::string_view kPlainMagic = "__CLANG_OFFLOAD_BUNDLE__";
constexpr std::string_view kCompressedMagic = "CCOB";
constexpr size_t kEntryHeaderBytes = 3 * sizeof(uint64_t);
// Limits that no real bundle approaches; they turn a corrupt header into an error instead of a huge allocation.
constexpr uint64_t kMaxEntries = 1u << 16;
constexpr uint64_t kMaxTripleLength = 1u << 12;
constexpr uint64_t kMaxUncompressedBytes = uint64_t(1) << 32;

bool starts_with(std::span<const uint8_t> blob, std::string_view magic) {
  return blob.size() >= magic.size() && std::memcmp(blob.data(), magic.data(), magic.size()) == 0;
}

// Reads little-endian integers from a byte range, failing with a message that names what was being read.
class Reader {
 public:
  Reader(std::span<const uint8_t> bytes, std::string what) : bytes_(bytes), what_(std::move(what)) {}

  uint64_t u64(std::string_view field) { return llvm::support::endian::read64le(take(8, field).data()); }
  uint32_t u32(std::string_view field) { return llvm::support::endian::read32le(take(4, field).data()); }
  uint16_t u16(std::string_view field) { return llvm::support::endian::read16le(take(2, field).data()); }
  std::span<const uint8_t> take(uint64_t n, std::string_view field) {
    if (n > bytes_.size() - pos_)
      loader_fail(what_ + " is truncated: " + std::string(field) + " needs " + std::to_string(n) + " bytes at offset " +
                  std::to_string(pos_) + " but only " + std::to_string(bytes_.size() - pos_) + " remain");
    std::span<const uint8_t> out = bytes_.subspan(pos_, n);
    pos_ += n;
    return out;
  }
  size_t pos() const { return pos_; }

 private:
  std::span<const uint8_t> bytes_;
  std::string what_;
  size_t pos_ = 0;
};

struct CompressedHeader {
  uint16_t version = 0;
  uint16_t method = 0;
  uint64_t total_size = 0;  // 0 for version 1, which does not record it
  uint64_t uncompressed_size = 0;
  size_t header_size = 0;
};

CompressedHeader read_compressed_header(std::span<const uint8_t> blob) {
  Reader r(blob, "compressed offload bundle header");
  r.take(kCompressedMagic.size(), "magic");
  CompressedHeader h;
  h.version = r.u16("version");
  h.method = r.u16("compression method");
  switch (h.version) {
    case 1:
      h.uncompressed_size = r.u32("uncompressed size");
      break;
    case 2:
      h.total_size = r.u32("total size");
      h.uncompressed_size = r.u32("uncompressed size");
      break;
    case 3:
      h.total_size = r.u64("total size");
      h.uncompressed_size = r.u64("uncompressed size");
      break;
    default:
      loader_fail("compressed offload bundle has version " + std::to_string(h.version) +
                  "; vgpu reads versions 1 to 3");
  }
  r.u64("hash");
  h.header_size = r.pos();
  if (h.version >= 2 && h.total_size < h.header_size)
    loader_fail("compressed offload bundle records a total size of " + std::to_string(h.total_size) +
                " bytes, smaller than its own header");
  return h;
}

// Size of the plain bundle at the start of `bundle` (its header and the furthest entry end), with every entry
// checked to lie within `bundle`.
struct PlainLayout {
  std::vector<BundleEntry> entries;
  size_t extent = 0;
};

PlainLayout read_plain(std::span<const uint8_t> bundle) {
  Reader r(bundle, "offload bundle");
  r.take(kPlainMagic.size(), "magic");
  uint64_t count = r.u64("entry count");
  if (count > kMaxEntries) loader_fail("offload bundle claims " + std::to_string(count) + " entries: corrupt header");
  PlainLayout out;
  out.entries.reserve(count);
  uint64_t extent = 0;
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t offset = r.u64("entry offset");
    uint64_t size = r.u64("entry size");
    uint64_t triple_length = r.u64("triple length");
    if (triple_length > kMaxTripleLength)
      loader_fail("offload bundle entry " + std::to_string(i) + " has a triple of " + std::to_string(triple_length) +
                  " bytes: corrupt header");
    std::span<const uint8_t> triple = r.take(triple_length, "entry triple");
    BundleEntry e;
    e.triple.assign(reinterpret_cast<const char*>(triple.data()), triple.size());
    if (offset > bundle.size() || size > bundle.size() - offset)
      loader_fail("offload bundle is truncated: entry '" + e.triple + "' spans bytes " + std::to_string(offset) +
                  ".." + std::to_string(offset + size) + " but the bundle has " + std::to_string(bundle.size()));
    e.bytes = bundle.subspan(offset, size);
    extent = std::max(extent, offset + size);
    out.entries.push_back(std::move(e));
  }
  out.extent = std::max<size_t>(extent, r.pos());
  return out;
}

}  // namespace

bool is_offload_bundle(std::span<const uint8_t> blob) {
  return starts_with(blob, kPlainMagic) || starts_with(blob, kCompressedMagic);
}

std::vector<uint8_t> decompress_offload_bundle(std::span<const uint8_t> bundle) {
  if (starts_with(bundle, kPlainMagic)) return {bundle.begin(), bundle.end()};
  if (!starts_with(bundle, kCompressedMagic)) loader_fail("not an offload bundle (no bundle magic)");
  CompressedHeader h = read_compressed_header(bundle);
  size_t end = bundle.size();
  if (h.total_size != 0) {
    if (h.total_size > bundle.size())
      loader_fail("compressed offload bundle is truncated: its header records " + std::to_string(h.total_size) +
                  " bytes but only " + std::to_string(bundle.size()) + " are present");
    end = h.total_size;
  }
  if (h.uncompressed_size > kMaxUncompressedBytes)
    loader_fail("compressed offload bundle claims " + std::to_string(h.uncompressed_size) +
                " uncompressed bytes: corrupt header");

  llvm::compression::Format format;
  if (h.method == static_cast<uint16_t>(llvm::compression::Format::Zlib))
    format = llvm::compression::Format::Zlib;
  else if (h.method == static_cast<uint16_t>(llvm::compression::Format::Zstd))
    format = llvm::compression::Format::Zstd;
  else
    loader_fail("compressed offload bundle uses unknown compression method " + std::to_string(h.method));
  if (const char* why = llvm::compression::getReasonIfUnsupported(format))
    loader_fail(std::string("cannot decompress offload bundle: ") + why);

  llvm::SmallVector<uint8_t, 0> plain;
  std::span<const uint8_t> data = bundle.subspan(h.header_size, end - h.header_size);
  if (llvm::Error e = llvm::compression::decompress(format, llvm::ArrayRef<uint8_t>(data.data(), data.size()), plain,
                                                    h.uncompressed_size))
    loader_fail("cannot decompress offload bundle: " + llvm::toString(std::move(e)));
  if (!starts_with({plain.data(), plain.size()}, kPlainMagic))
    loader_fail("compressed offload bundle does not decompress to an offload bundle");
  return {plain.begin(), plain.end()};
}

std::vector<BundleEntry> read_offload_bundle(std::span<const uint8_t> bundle) {
  if (starts_with(bundle, kPlainMagic)) return read_plain(bundle).entries;
  if (!starts_with(bundle, kCompressedMagic))
    loader_fail("not an offload bundle: expected magic '__CLANG_OFFLOAD_BUNDLE__' or 'CCOB'");
  // The entries point into the decompressed copy; each entry shares ownership of it.
  auto storage = std::make_shared<const std::vector<uint8_t>>(decompress_offload_bundle(bundle));
  std::vector<BundleEntry> entries = read_plain(*storage).entries;
  for (BundleEntry& e : entries) e.storage = storage;
  return entries;
}

size_t offload_bundle_extent(std::span<const uint8_t> blob) {
  if (starts_with(blob, kPlainMagic)) return read_plain(blob).extent;
  if (!starts_with(blob, kCompressedMagic)) loader_fail("not an offload bundle (no bundle magic)");
  CompressedHeader h = read_compressed_header(blob);
  if (h.total_size == 0) return blob.size();  // version 1: the data runs to the end
  return std::min<uint64_t>(h.total_size, blob.size());
}

size_t offload_bundle_size(const uint8_t* bundle) {
  if (bundle == nullptr) loader_fail("offload bundle pointer is null");
  // Read the header piece by piece, never further than the header itself says it reaches.
  auto prefix = [&](size_t n) { return std::span<const uint8_t>(bundle, n); };
  if (starts_with(prefix(kCompressedMagic.size()), kCompressedMagic)) {
    // The version decides the header length; read it first.
    uint16_t version = llvm::support::endian::read16le(bundle + 4);
    size_t header = version == 1 ? 20 : version == 2 ? 24 : 32;
    CompressedHeader h = read_compressed_header(prefix(header));
    if (h.total_size == 0) loader_fail("compressed offload bundle version 1 does not record its size");
    return h.total_size;
  }
  if (!starts_with(prefix(kPlainMagic.size()), kPlainMagic))
    loader_fail("no offload bundle at the given address (no bundle magic)");
  uint64_t count = llvm::support::endian::read64le(bundle + kPlainMagic.size());
  if (count > kMaxEntries) loader_fail("offload bundle claims " + std::to_string(count) + " entries: corrupt header");
  size_t header = kPlainMagic.size() + sizeof(uint64_t);
  uint64_t extent = 0;
  for (uint64_t i = 0; i < count; ++i) {
    const uint8_t* entry = bundle + header;
    uint64_t offset = llvm::support::endian::read64le(entry);
    uint64_t size = llvm::support::endian::read64le(entry + 8);
    uint64_t triple_length = llvm::support::endian::read64le(entry + 16);
    if (triple_length > kMaxTripleLength || offset > std::numeric_limits<uint64_t>::max() - size)
      loader_fail("offload bundle entry " + std::to_string(i) + " has a corrupt header");
    header += kEntryHeaderBytes + triple_length;
    extent = std::max(extent, offset + size);
  }
  return std::max<uint64_t>(extent, header);
}

}  // namespace vgpu
