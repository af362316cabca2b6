// Every default shared-to-register path is bank-conflict free on each arch, as vgpu's LDS model counts them: row and
// col layouts, the 16x16 and 32x32 MFMA families, bf16/f16 and fp8, rows of 64 to 512 bytes, every tile position.
// (tools/swizzle_search chose st's swizzle against the same model; this runs the real code.)
#include <cstdint>
#include <random>
#include <string>

#include "hk/hk.h"
#include "hk_test_util.h"

using namespace hk;

// Loads a shared tile from global, then the waves read every RT-shaped tile of it into registers and write it out.
template <class T, int R, int C, class RT, int Waves>
__global__ void read_every_tile(const T* in, T* out) {
  __shared__ st<T, R, C> s;
  load<group<Waves>>(s, gl<T, 1, 1, R, C>(const_cast<T*>(in), 1, 1, R, C), {});
  barrier();
  for (int t = wave_id(); t < (R / RT::rows) * (C / RT::cols); t += Waves) {
    const coord at{0, 0, t / (C / RT::cols), t % (C / RT::cols)};
    RT r;
    load(r, s, at);
    store(gl<T, 1, 1, R, C>(out, 1, 1, R, C), r, at);
  }
}

// Element bytes that survive a round trip through registers: any bf16/f16 value, fp8 codes that are finite in both
// archs' formats (not 0x80: FNUZ NaN; not 0x7f, 0xff: OCP NaN).
template <class T>
std::vector<uint8_t> round_trip_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n * sizeof(T));
  for (size_t i = 0; i < v.size(); ++i) {
    uint8_t b;
    do b = uint8_t(rng());
    while (sizeof(T) == 1 && (b == 0x80 || b == 0x7f || b == 0xff));
    v[i] = b;
  }
  if constexpr (sizeof(T) == 2)  // 16-bit values normal and finite: the exponent's top bit clear, the next one set
    for (size_t i = 1; i < v.size(); i += 2) v[i] = uint8_t((v[i] & 0xbf) | 0x20);
  return v;
}

template <class T, int R, int C, layout L, class Shape, bool Whole = false>
void check_reads() {
  // The register tile: a band of one MFMA block's rows in the row layout (Whole: all R rows, several base tiles in
  // one load), the whole height in the col layout.
  using Probe = rt<T, 256, 256, L, Shape>;  // only its base-tile shape is used
  constexpr int tile_r = L == layout::row && !Whole ? Shape::dim : R, tile_c = L == layout::row ? C : C >= 2 * Shape::dim ? 2 * Shape::dim : Shape::dim;
  if constexpr (tile_r % Probe::base_rows != 0 || tile_c % Probe::base_cols != 0 || R % tile_r != 0 || C % tile_c != 0) {
    GTEST_SKIP() << "no register tile of this family and layout fits a " << R << " x " << C << " shared tile on this arch";
  } else {
    using RT = rt<T, tile_r, tile_c, L, Shape>;
    constexpr int waves = 4;
    const auto bytes = round_trip_bytes<T>(R * C, 7 + R + C);
    void *in = nullptr, *out = nullptr;
    HIP_ASSERT(hipMalloc(&in, bytes.size()));
    HIP_ASSERT(hipMalloc(&out, bytes.size()));
    HIP_ASSERT(hipMemcpy(in, bytes.data(), bytes.size(), hipMemcpyHostToDevice));
    HIP_ASSERT(hipMemset(out, 0, bytes.size()));
    const bool profiled = hktest::set_profiling(true);
    hipLaunchKernelGGL((read_every_tile<T, R, C, RT, waves>), dim3(1), dim3(64 * waves), 0, 0, static_cast<const T*>(in),
                       static_cast<T*>(out));
    HIP_ASSERT(hipDeviceSynchronize());
    hktest::set_profiling(false);
    std::vector<uint8_t> got(bytes.size());
    HIP_ASSERT(hipMemcpy(got.data(), out, got.size(), hipMemcpyDeviceToHost));
    (void)hipFree(in);
    (void)hipFree(out);
    EXPECT_EQ(got, bytes) << "round trip through shared and registers";
    if (!profiled) return;
    const hktest::LdsStats s = hktest::last_lds("ds_read");
    std::string reads;
    for (auto& [m, c] : s.mnemonics) reads += (reads.empty() ? "" : ", ") + m;
    std::printf("[banks] %s %s st<%d x %d> (%d-byte rows) -> rt<%d x %d, %s, mfma%d>: %llu reads (%s), %llu conflict cycles\n",
                hk_host::device_arch_name().c_str(), sizeof(T) == 1 ? "fp8" : "16-bit", R, C, int(C * sizeof(T)),
                tile_r, tile_c, L == layout::row ? "row" : "col", Shape::dim, s.accesses, reads.c_str(), s.conflict_cycles);
    EXPECT_GT(s.accesses, 0u) << "no LDS reads were profiled";
    EXPECT_EQ(s.conflict_cycles, 0u) << "shared->register reads conflict: " << reads;
    // The reads are the arch's widest: row layout 64-bit on gfx942, 128-bit on gfx950; col layout transposing on
    // gfx950, one element per read on gfx942.
    const bool g950 = hk_host::device_arch() == hk_host::Arch::gfx950;
    const char* want = L == layout::row ? (g950 ? "ds_read_b128" : "ds_read_b64")
                       : g950           ? (sizeof(T) == 1 ? "ds_read_b64_tr_b8" : "ds_read_b64_tr_b16")
                                        : (sizeof(T) == 1 ? "ds_read_u8" : "ds_read_u16");
    EXPECT_TRUE(s.has(want) || (L == layout::row && !g950 && s.has("ds_read2_b64"))) << want << " expected, got " << reads;
  }
}

// 16-bit tiles: rows of 64, 128, 256 and 512 bytes, both families, both layouts.
#define HK_BANKS_16(T, name, R, C)                                                                          \
  TEST(Banks, name##_##R##x##C##_Row16) { check_reads<T, R, C, layout::row, mfma16>(); }                   \
  TEST(Banks, name##_##R##x##C##_Col16) { check_reads<T, R, C, layout::col, mfma16>(); }                   \
  TEST(Banks, name##_##R##x##C##_Row32) { check_reads<T, R, C, layout::row, mfma32>(); }                   \
  TEST(Banks, name##_##R##x##C##_Col32) { check_reads<T, R, C, layout::col, mfma32>(); }
HK_BANKS_16(bf16, Bf16, 64, 32)
HK_BANKS_16(bf16, Bf16, 64, 64)
HK_BANKS_16(bf16, Bf16, 64, 128)
HK_BANKS_16(half, F16, 32, 256)

// Whole row-layout tiles of the 32x32 family at once (the operand loads of a 32x32 mma).
TEST(Mma32Banks, RowReadsBf16) { check_reads<bf16, 64, 64, layout::row, mfma32, true>(); }
TEST(Mma32Banks, RowReadsF16Wide) { check_reads<half, 32, 128, layout::row, mfma32, true>(); }

// fp8 tiles, both families: rows of 64, 128 and 256 bytes; 128 rows, the height of a gfx950 mfma16 col tile.
#define HK_BANKS_8(R, C)                                                                                     \
  TEST(Banks, Fp8_##R##x##C##_Row16) { check_reads<fp8e4m3, R, C, layout::row, mfma16>(); }                \
  TEST(Banks, Fp8_##R##x##C##_Col16) { check_reads<fp8e4m3, R, C, layout::col, mfma16>(); }                \
  TEST(Banks, Fp8_##R##x##C##_Row32) { check_reads<fp8e4m3, R, C, layout::row, mfma32>(); }                \
  TEST(Banks, Fp8_##R##x##C##_Col32) { check_reads<fp8e4m3, R, C, layout::col, mfma32>(); }
HK_BANKS_8(128, 64)
HK_BANKS_8(128, 128)
HK_BANKS_8(128, 256)
