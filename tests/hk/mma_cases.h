// The MMA tests, written once over the MFMA family (mfma16, mfma32), the operand types (bf16, f16, fp8 e4m3 / e5m2 and
// their mixes), the product's orientation (AB, ABt, AtB, AtBt: which operands are read in the col layout) and where
// the operands come from (global memory, or through shared tiles), and attention's second product over the same
// families and types. Each test program registers the combinations it covers (add_mma_cases, add_pv_cases); every case
// is checked against the host toolkit's matmul reference, and on vgpu the profile must show the family's own MFMA for
// the pair of types and no other, and gfx950's transposing LDS reads for col-layout operands from shared tiles.
#pragma once
#include <functional>
#include <string>

#include "hk/hk.h"
#include "hk_test_util.h"

namespace hkmma {

using namespace hk;

template <class T>
constexpr bool is_fp8 = fp8_input<T>;

// A multiple of the K of both archs' MFMAs of the family for T (gfx950's is the larger).
template <class T, class S>
constexpr int k_unit = is_fp8<T> ? (S::dim == 16 ? 128 : 64) : (S::dim == 16 ? 32 : 16);

template <class T>
std::string type_name() {
  if constexpr (std::same_as<T, bf16>) return "Bf16";
  else if constexpr (std::same_as<T, half>) return "F16";
  else if constexpr (T::format == arch::fp8_format::e5m2) return "E5m2";
  else return "E4m3";
}

// The MFMA the family runs for A of type TA and B of type TB on `a` (expectations written from the ISA, not hk).
template <class TA, class TB, class S>
std::string family_mfma(hk_host::Arch a) {
  const bool g950 = a == hk_host::Arch::gfx950;
  const std::string dims = std::to_string(S::dim) + "x" + std::to_string(S::dim) + "x";
  if constexpr (is_fp8<TA>) {
    if (g950) return "v_mfma_f32_" + dims + (S::dim == 16 ? "128" : "64") + "_f8f6f4";
    auto f = [](bool e5) { return e5 ? "bf8" : "fp8"; };
    return "v_mfma_f32_" + dims + (S::dim == 16 ? "32_" : "16_") + f(TA::format == arch::fp8_format::e5m2) + "_" +
           f(TB::format == arch::fp8_format::e5m2);
  } else {
    const int k = (S::dim == 16 ? 16 : 8) * (g950 ? 2 : 1);
    return "v_mfma_f32_" + dims + std::to_string(k) + (std::same_as<TA, bf16> ? "_bf16" : "_f16");
  }
}

// Checks the last profiled dispatch: only the family's MFMA ran, and (gfx950) col-layout reads from shared transposed.
template <class TA, class TB, class S>
void expect_family_instructions(bool col_from_shared) {
  const hk_host::Arch arch = hk_host::device_arch();
  const std::string want = family_mfma<TA, TB, S>(arch);
  int ours = 0, other = 0;
  for (const auto& t : hktest::last_instructions())
    if (t.starts_with("v_mfma")) (t.starts_with(want) ? ours : other)++;
  EXPECT_GT(ours, 0) << "no " << want;
  EXPECT_EQ(other, 0) << "other MFMAs than " << want;
  if (col_from_shared && arch == hk_host::Arch::gfx950) {
    const std::string tr = sizeof(TA) == 1 ? "ds_read_b64_tr_b8" : "ds_read_b64_tr_b16";
    EXPECT_TRUE(hktest::last_lds("ds_read").has(tr)) << "no " << tr << " for the col-layout operand";
  }
}

// ---- D = op(A) op(B) + C --------------------------------------------------------------------------------------------

// Which operands are transposed: A stored K x M (read in the col layout) and B stored N x K (read in the row layout).
enum class Op { AB, ABt, AtB, AtBt };
constexpr bool a_transposed(Op op) { return op == Op::AtB || op == Op::AtBt; }
constexpr bool b_transposed(Op op) { return op == Op::ABt || op == Op::AtBt; }
inline const char* op_name(Op op) { return op == Op::AB ? "AB" : op == Op::ABt ? "ABt" : op == Op::AtB ? "AtB" : "AtBt"; }

// Where both operands come from.
enum class Src { global, shared };

// An operand tile from global memory, or through a shared tile (Slot tells two shared operands of one type apart).
template <class RT, Src From, int Slot>
__device__ void load_operand(RT& r, const typename RT::dtype* p) {
  using T = typename RT::dtype;
  const gl<T, 1, 1, RT::rows, RT::cols> g(const_cast<T*>(p), 1, 1, RT::rows, RT::cols);
  if constexpr (From == Src::shared) {
    __shared__ st<T, RT::rows, RT::cols> s;
    load<wave>(s, g, {});
    barrier();
    load(r, s);
  } else {
    load(r, g, {});
  }
}

template <class TA, class TB, class S, Op O, Src From, int M, int N, int K>
__global__ void mma_kernel(const TA* a, const TB* b, const float* c, float* d) {
  constexpr bool at = a_transposed(O), bt = b_transposed(O);
  rt<TA, at ? K : M, at ? M : K, at ? layout::col : layout::row, S> ra;
  rt<TB, bt ? N : K, bt ? K : N, bt ? layout::row : layout::col, S> rb;
  load_operand<decltype(ra), From, 0>(ra, a);
  load_operand<decltype(rb), From, 1>(rb, b);
  rt_acc<M, N, S> acc;
  load(acc, gl<float, 1, 1, M, N>(const_cast<float*>(c), 1, 1, M, N), {});
  if constexpr (O == Op::AB) mma_AB(acc, ra, rb, acc);
  else if constexpr (O == Op::ABt) mma_ABt(acc, ra, rb, acc);
  else if constexpr (O == Op::AtB) mma_AtB(acc, ra, rb, acc);
  else mma_AtBt(acc, ra, rb, acc);
  store(gl<float, 1, 1, M, N>(d, 1, 1, M, N), acc, {});
}

// `limit`: the largest operand magnitude (fp8: every finite code up to it; INFINITY: all of them).
template <class TA, class TB, class S, Op O, Src From, int M, int N, int K>
void check_mma(float limit) {
  constexpr bool at = a_transposed(O), bt = b_transposed(O);
  const uint32_t seed = 7 * M + 5 * N + 3 * K + int(O);
  hktest::Buffer<TA> a(M * K, seed, limit);
  hktest::Buffer<TB> b(N * K, seed + 1, limit);
  hktest::Buffer<float> c(M * N, seed + 2, 4.f), d(M * N);
  const bool profiled = hktest::set_profiling(true);
  hipLaunchKernelGGL((mma_kernel<TA, TB, S, O, From, M, N, K>), dim3(1), dim3(64), 0, 0, a.dev, b.dev, c.dev, d.dev);
  HIP_ASSERT(hipDeviceSynchronize());
  if (profiled) hktest::set_profiling(false);
  const hk_host::Matrix A(at ? K : M, at ? M : K, a.host), B(bt ? N : K, bt ? K : N, b.host), C(M, N, c.host);
  const hk_host::Matmul ref{{A, at}, {B, bt}, &C, 1, 1};
  hk_host::expect_ok(hk_host::compare(hk_host::Matrix(M, N, d.read()), ref, hk_host::Type::fp32,
                                      std::string(op_name(O)) + " " + type_name<TA>() + " x " + type_name<TB>() + " mfma" +
                                          std::to_string(S::dim)));
  if (profiled) expect_family_instructions<TA, TB, S>(From == Src::shared && (at || !bt));  // A col or B col
}

// ---- attention's second product: O = P V --------------------------------------------------------------------------

// P, an fp32 accumulator (the softmax), becomes the A operand of type TP in registers or through a shared scratch
// tile; V (keys x head dim, row-major) sits in a shared tile and is read in the col layout for B.
enum class Via { registers, scratch };

template <class TP, class TV, class S, Via How, int M, int N, int D>
__global__ void pv_kernel(const float* p, const TV* v, float* o) {
  __shared__ st<TV, N, D> sv;
  load<wave>(sv, gl<TV, 1, 1, N, D>(const_cast<TV*>(v), 1, 1, N, D), {});
  barrier();
  rt_acc<M, N, S> pacc;
  load(pacc, gl<float, 1, 1, M, N>(const_cast<float*>(p), 1, 1, M, N), {});
  rt<TP, M, N, layout::row, S> pa;
  if constexpr (How == Via::registers) {
    acc_to_operand(pa, pacc);
  } else {
    __shared__ st<TP, M, N> scratch;
    acc_to_operand(pa, pacc, scratch);
  }
  rt<TV, N, D, layout::col, S> vb;
  load(vb, sv);
  rt_acc<M, D, S> out;
  zero(out);
  mma_AB(out, pa, vb, out);
  store(gl<float, 1, 1, M, D>(o, 1, 1, M, D), out, {});
}

template <class TP, class TV, class S, Via How, int M, int N, int D>
void check_pv() {
  hktest::Buffer<float> p(M * N, 91, 1.f), o(M * D);
  hktest::Buffer<TV> v(N * D, 92, is_fp8<TV> ? 8.f : 1.f);
  const bool profiled = hktest::set_profiling(true);
  hipLaunchKernelGGL((pv_kernel<TP, TV, S, How, M, N, D>), dim3(1), dim3(64), 0, 0, p.dev, v.dev, o.dev);
  HIP_ASSERT(hipDeviceSynchronize());
  if (profiled) hktest::set_profiling(false);
  // P as the device rounds it to TP (fp8: saturating), then the exact product.
  hk_host::Matrix P(M, N, p.host), V(N, D, v.host);
  P = hk_host::rounded(P, hktest::format_of<TP>());
  const hk_host::Matmul ref{{P}, {V}};
  hk_host::expect_ok(hk_host::compare(hk_host::Matrix(M, D, o.read()), ref, hk_host::Type::fp32,
                                      std::string("P V ") + type_name<TP>() + " x " + type_name<TV>() + " mfma" +
                                          std::to_string(S::dim) + (How == Via::scratch ? " (scratch)" : "")));
  if (profiled) expect_family_instructions<TP, TV, S>(true);
}

// ---- registration ---------------------------------------------------------------------------------------------------

// A googletest case that runs a function.
class Case : public testing::Test {
 public:
  explicit Case(std::function<void()> f) : f_(std::move(f)) {}
  void TestBody() override { f_(); }

 private:
  std::function<void()> f_;
};

inline void add_case(const std::string& suite, const std::string& name, std::function<void()> f) {
  testing::RegisterTest(suite.c_str(), name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                        [f]() -> testing::Test* { return new Case(f); });
}

// The family a case counts in ([hk summary]): 16-bit types by MFMA family; fp8 by formats, e4m3 by MFMA family.
template <class TA, class TB, class S>
std::string suite_of() {
  const std::string dim = S::dim == 32 ? "Mma32" : "";
  if constexpr (!is_fp8<TA>) return dim.empty() ? "Mma" : dim;
  else if constexpr (!std::same_as<TA, TB>) return "Fp8Mixed";
  else if constexpr (TA::format == arch::fp8_format::e5m2) return "Fp8E5m2";
  else return "Fp8" + dim;
}

// The shape of a case: a different number of base tiles along M, N and K for each orientation and source, so each
// dimension runs over one and several blocks.
template <class TA, class S, Op O, Src From>
struct CaseShape {
  static constexpr int o = int(O), s = int(From);
  static constexpr int m = S::dim * (1 + (o + s) % 2), n = S::dim * (1 + (o / 2 + s + 1) % 2);
  static constexpr int k = k_unit<TA, S> * (is_fp8<TA> ? 1 + (o + s) % 2 : (o == 1 ? 5 : 1 + (o + 2 * s) % 4));
};

template <class TA, class TB, class S, Op O, Src From>
void add_mma_case(float limit, const std::string& tag = "") {
  using Sh = CaseShape<TA, S, O, From>;
  const std::string types = std::same_as<TA, TB> ? type_name<TA>() : type_name<TA>() + "x" + type_name<TB>();
  add_case(suite_of<TA, TB, S>(),
           std::string(op_name(O)) + types + (S::dim == 32 ? "Mma32" : "Mma16") + (From == Src::shared ? "Shared" : "Global") +
               tag + "_" + std::to_string(Sh::m) + "x" + std::to_string(Sh::n) + "x" + std::to_string(Sh::k),
           [limit] { check_mma<TA, TB, S, O, From, Sh::m, Sh::n, Sh::k>(limit); });
}

// Every orientation from global and through shared, in both families.
template <class TA, class TB>
void add_mma_cases(float limit) {
  [&]<class... S>() {
    ((add_mma_case<TA, TB, S, Op::AB, Src::global>(limit), add_mma_case<TA, TB, S, Op::AB, Src::shared>(limit),
      add_mma_case<TA, TB, S, Op::ABt, Src::global>(limit), add_mma_case<TA, TB, S, Op::ABt, Src::shared>(limit),
      add_mma_case<TA, TB, S, Op::AtB, Src::global>(limit), add_mma_case<TA, TB, S, Op::AtB, Src::shared>(limit),
      add_mma_case<TA, TB, S, Op::AtBt, Src::global>(limit), add_mma_case<TA, TB, S, Op::AtBt, Src::shared>(limit)),
     ...);
  }.template operator()<mfma16, mfma32>();
}

// P V in both families, in registers and through scratch: 2 blocks of P's rows, 128 keys (a multiple of every K), a
// head dim of one block.
template <class TP, class TV>
void add_pv_cases() {
  [&]<class... S>() {
    ((add_case(suite_of<TP, TV, S>(),
               "PV" + type_name<TP>() + "x" + type_name<TV>() + (S::dim == 32 ? "Mma32" : "Mma16") + "Registers",
               [] { check_pv<TP, TV, S, Via::registers, 2 * S::dim, 128, S::dim>(); }),
      add_case(suite_of<TP, TV, S>(),
               "PV" + type_name<TP>() + "x" + type_name<TV>() + (S::dim == 32 ? "Mma32" : "Mma16") + "Scratch",
               [] { check_pv<TP, TV, S, Via::scratch, 2 * S::dim, 128, S::dim>(); })),
     ...);
  }.template operator()<mfma16, mfma32>();
}

}  // namespace hkmma
