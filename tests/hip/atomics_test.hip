// Atomics on global memory (int and float add, max, compare-and-swap) and on LDS, with many work-items of
// several workgroups contending for the same words; then every atomic function of HIP on every type it takes, in
// global memory and LDS, returning and not, checked from the old values each work-item got back.
#include <hip/hip_bf16.h>
#include <hip/hip_fp16.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <random>
#include <unordered_map>
#include <vector>

#include "hip_check.h"
#include "host/numerics.h"

__global__ void global_atomics(int* counter, float* fsum, int* maximum, const int* values, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  atomicAdd(counter, 1);
  atomicAdd(fsum, 0.5f);
  atomicMax(maximum, values[i]);
}

// An increment built from compare-and-swap, the way lock-free updates are written.
__global__ void cas_increment(int* counter, int* attempts) {
  int old = *counter, seen;
  int tries = 0;
  do {
    seen = old;
    old = atomicCAS(counter, seen, seen + 1);
    ++tries;
  } while (old != seen);
  atomicAdd(attempts, tries);
}

// A 16-bin histogram kept in LDS with LDS atomics, then merged into global memory.
__global__ void lds_histogram(const int* values, int n, int* bins) {
  __shared__ int local[16];
  if (threadIdx.x < 16) local[threadIdx.x] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&local[values[i] & 15], 1);
  __syncthreads();
  if (threadIdx.x < 16) atomicAdd(&bins[threadIdx.x], local[threadIdx.x]);
}

// LDS max and exchange: every lane proposes its id; the largest wins; atomicExch hands out unique tickets.
__global__ void lds_max_exch(int* result_max, int* tickets) {
  __shared__ int best;
  __shared__ int ticket;
  if (threadIdx.x == 0) best = -1, ticket = 0;
  __syncthreads();
  atomicMax(&best, int((threadIdx.x * 37) % blockDim.x));
  int mine = atomicAdd(&ticket, 1);
  __syncthreads();
  if (threadIdx.x == 0) *result_max = best;
  tickets[mine] = threadIdx.x + 1;
}

TEST(Atomics, GlobalAddMax) {
  const int n = 3000;
  std::vector<int> values(n);
  for (int i = 0; i < n; ++i) values[i] = (i * 7919) % 10007;
  DeviceBuffer<int> counter(1), maximum(1), dvalues(n);
  DeviceBuffer<float> fsum(1);
  HIP_ASSERT(hipMemset(counter.ptr, 0, sizeof(int)));
  HIP_ASSERT(hipMemset(fsum.ptr, 0, sizeof(float)));
  HIP_ASSERT(hipMemsetD32(maximum.ptr, -1, 1));
  HIP_ASSERT(hipMemcpy(dvalues.ptr, values.data(), dvalues.bytes(), hipMemcpyHostToDevice));
  global_atomics<<<(n + 255) / 256, 256>>>(counter.ptr, fsum.ptr, maximum.ptr, dvalues.ptr, n);
  HIP_ASSERT(hipGetLastError());
  int c = 0, m = 0;
  float f = 0;
  HIP_ASSERT(hipMemcpy(&c, counter.ptr, sizeof c, hipMemcpyDeviceToHost));
  HIP_ASSERT(hipMemcpy(&f, fsum.ptr, sizeof f, hipMemcpyDeviceToHost));
  HIP_ASSERT(hipMemcpy(&m, maximum.ptr, sizeof m, hipMemcpyDeviceToHost));
  EXPECT_EQ(c, n);
  EXPECT_EQ(f, 0.5f * n);  // exact: every partial sum is a multiple of 0.5 below 2^23
  EXPECT_EQ(m, *std::max_element(values.begin(), values.end()));
}

TEST(Atomics, CompareAndSwapIncrement) {
  const int blocks = 4, block = 192;
  DeviceBuffer<int> counter(1), attempts(1);
  HIP_ASSERT(hipMemset(counter.ptr, 0, sizeof(int)));
  HIP_ASSERT(hipMemset(attempts.ptr, 0, sizeof(int)));
  cas_increment<<<blocks, block>>>(counter.ptr, attempts.ptr);
  HIP_ASSERT(hipGetLastError());
  int c = 0, a = 0;
  HIP_ASSERT(hipMemcpy(&c, counter.ptr, sizeof c, hipMemcpyDeviceToHost));
  HIP_ASSERT(hipMemcpy(&a, attempts.ptr, sizeof a, hipMemcpyDeviceToHost));
  EXPECT_EQ(c, blocks * block);
  EXPECT_GE(a, blocks * block);  // every work-item succeeded once, some after retries
}

TEST(Atomics, LdsHistogram) {
  const int n = 5000;
  std::vector<int> values(n), expected(16, 0), bins(16);
  for (int i = 0; i < n; ++i) values[i] = (i * 31 + i / 7) % 1000, ++expected[values[i] & 15];
  DeviceBuffer<int> dvalues(n), dbins(16);
  HIP_ASSERT(hipMemcpy(dvalues.ptr, values.data(), dvalues.bytes(), hipMemcpyHostToDevice));
  HIP_ASSERT(hipMemset(dbins.ptr, 0, dbins.bytes()));
  lds_histogram<<<3, 256>>>(dvalues.ptr, n, dbins.ptr);
  HIP_ASSERT(hipGetLastError());
  HIP_ASSERT(hipMemcpy(bins.data(), dbins.ptr, dbins.bytes(), hipMemcpyDeviceToHost));
  EXPECT_EQ(bins, expected);
}

TEST(Atomics, LdsMaxAndTickets) {
  const int block = 256;
  DeviceBuffer<int> dmax(1), dtickets(block);
  HIP_ASSERT(hipMemset(dtickets.ptr, 0, dtickets.bytes()));
  lds_max_exch<<<1, block>>>(dmax.ptr, dtickets.ptr);
  HIP_ASSERT(hipGetLastError());
  int m = 0;
  std::vector<int> tickets(block);
  HIP_ASSERT(hipMemcpy(&m, dmax.ptr, sizeof m, hipMemcpyDeviceToHost));
  HIP_ASSERT(hipMemcpy(tickets.data(), dtickets.ptr, dtickets.bytes(), hipMemcpyDeviceToHost));
  EXPECT_EQ(m, block - 1);
  // Every ticket was handed out exactly once: the holders are a permutation of the work-items.
  std::sort(tickets.begin(), tickets.end());
  for (int i = 0; i < block; ++i) ASSERT_EQ(tickets[i], i + 1);
}

// --- Every atomic HIP's functions lower to, proven from the values they return ------------------------------------
// Many waves apply one atomic to one word (global: 4 workgroups of 256 on one word; LDS: 256 work-items of each of 2
// workgroups on their workgroup's word). Each work-item keeps the old value it got back. The results are right iff
// some order of the work-items explains them: starting from the initial value, each one's old value is the word as
// the previous ones left it, and the last leaves the final value. `explained` searches for that order with the host's
// model of the operation (float rounding to nearest even, packed f16/bf16 rounding per half). The form whose result is
// unused (clang then emits the no-return instruction) is checked on its final value, for order-independent operations.

template <class T>
uint64_t to_bits(const T& x) {
  if constexpr (sizeof(T) == 4) {
    uint32_t b;
    std::memcpy(&b, &x, 4);
    return b;
  } else {
    uint64_t b;
    std::memcpy(&b, &x, 8);
    return b;
  }
}
template <class T>
T from_bits(uint64_t b) {
  T x;
  if constexpr (sizeof(T) == 4) {
    const uint32_t n = uint32_t(b);
    std::memcpy(&x, &n, 4);
  } else {
    std::memcpy(&x, &b, 8);
  }
  return x;
}

using HostOp = std::function<uint64_t(uint64_t old, uint64_t value)>;

// Whether some order of the updates (old[i] -> op(old[i], value[i])) leads from `init` to `final`.
bool explained(uint64_t init, uint64_t final, const std::vector<uint64_t>& olds, const std::vector<uint64_t>& values,
               const HostOp& op) {
  std::unordered_map<uint64_t, std::vector<int>> by_old;
  for (int i = 0; i < int(olds.size()); ++i) by_old[olds[i]].push_back(i);
  std::vector<char> used(olds.size(), 0);
  std::function<bool(uint64_t, size_t)> walk = [&](uint64_t cur, size_t left) -> bool {
    std::vector<int> taken;  // consumed at this level, given back if the search fails here
    auto fail = [&] {
      for (int i : taken) used[i] = 0;
      return false;
    };
    for (;;) {
      if (left == 0) return cur == final || fail();
      auto it = by_old.find(cur);
      if (it == by_old.end()) return fail();
      // Updates that leave the word as it is fit anywhere it holds this value: take them now.
      std::vector<int> changing;
      for (int i : it->second) {
        if (used[i]) continue;
        if (op(cur, values[i]) == cur) used[i] = 1, taken.push_back(i), --left;
        else changing.push_back(i);
      }
      if (changing.empty()) {
        if (left == 0) continue;
        return fail();
      }
      // One update per distinct value: updates with equal values are interchangeable.
      std::vector<int> distinct;
      for (int i : changing)
        if (std::none_of(distinct.begin(), distinct.end(), [&](int j) { return values[j] == values[i]; }))
          distinct.push_back(i);
      if (distinct.size() == 1) {
        const int i = distinct[0];
        used[i] = 1, taken.push_back(i), --left;
        cur = op(cur, values[i]);
        continue;
      }
      for (int i : distinct) {
        used[i] = 1;
        if (walk(op(cur, values[i]), left - 1)) return true;
        used[i] = 0;
      }
      return fail();
    }
  };
  return walk(init, olds.size());
}

// `zeros` (all 0) makes the word's address opaque to the compiler: with an address it can see is uniform, LLVM's atomic
// optimizer turns a wave's atomics into one, whose single update the lanes share (a float sum then rounds in the
// optimizer's order, not the atomic's); an opaque one keeps one atomic per lane, the instruction under test.
template <class Op, class T, bool Lds, bool Returns>
__global__ void contend(T* word_or_finals, const T* values, T* olds, T init, const int* zeros) {
  __shared__ alignas(8) unsigned char lds_word[8];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  T* word = word_or_finals + zeros[i];
  if constexpr (Lds) {
    if (threadIdx.x == 0) *reinterpret_cast<T*>(lds_word) = init;
    word = reinterpret_cast<T*>(lds_word) + zeros[i];
    __syncthreads();
  }
  if constexpr (Returns) olds[i] = Op::apply(word, values[i]);
  else Op::apply(word, values[i]);
  if constexpr (Lds) {
    __syncthreads();
    if (threadIdx.x == 0) word_or_finals[blockIdx.x] = *reinterpret_cast<T*>(lds_word);
  }
}

#define HK_ATOMIC_OP(NAME, EXPR)                             \
  struct NAME {                                                                                          \
    template <class T>                                                                                   \
    __device__ static T apply(T* p, T v) { return EXPR; }                                                \
  };
HK_ATOMIC_OP(Add, atomicAdd(p, v))
HK_ATOMIC_OP(Sub, atomicSub(p, v))
HK_ATOMIC_OP(Exch, atomicExch(p, v))
HK_ATOMIC_OP(Min, atomicMin(p, v))
HK_ATOMIC_OP(Max, atomicMax(p, v))
HK_ATOMIC_OP(And, atomicAnd(p, v))
HK_ATOMIC_OP(Or, atomicOr(p, v))
HK_ATOMIC_OP(Xor, atomicXor(p, v))
HK_ATOMIC_OP(Inc, atomicInc(p, v))
HK_ATOMIC_OP(Dec, atomicDec(p, v))
HK_ATOMIC_OP(UnsafeAdd, unsafeAtomicAdd(p, v))
HK_ATOMIC_OP(UnsafeMax, unsafeAtomicMax(p, v))
HK_ATOMIC_OP(UnsafeMin, unsafeAtomicMin(p, v))
#undef HK_ATOMIC_OP
// Compare-and-swap as lock-free code uses it: add `v` by retrying until the word did not change in between.
struct CasAdd {
  template <class T>
  __device__ static T apply(T* p, T v) {
    T seen = __hip_atomic_load(p, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT), old;
    while ((old = atomicCAS(p, seen, T(seen + v))) != seen) seen = old;
    return seen;
  }
};

enum class Order { free, exchange };  // how the no-return form's final value is checked
enum class Forms { all, global_returning };  // buffer atomics: global memory, and only the returning form here

// Runs Op on T in global memory and in LDS, returning and not, and checks old values and final values.
// `exact`: the values for the no-return form when rounding makes the result of `values` depend on the order.
template <class Op, class T>
void check_atomic(const char* name, T init, const std::vector<T>& values, const HostOp& op, Order order = Order::free,
                  const std::vector<T>& exact = {}, Forms forms = Forms::all) {
  constexpr int block = 256, global_blocks = 4, lds_blocks = 2;
  ASSERT_EQ(values.size(), size_t(block * global_blocks));
  std::vector<uint64_t> vbits(values.size());
  DeviceBuffer<T> dvalues(values.size()), olds(values.size()), words(global_blocks);
  DeviceBuffer<int> zeros(values.size());
  HIP_ASSERT(hipMemset(zeros.ptr, 0, zeros.bytes()));
  auto upload = [&](const std::vector<T>& v) {
    for (size_t i = 0; i < v.size(); ++i) vbits[i] = to_bits(v[i]);
    EXPECT_EQ(hipMemcpy(dvalues.ptr, v.data(), dvalues.bytes(), hipMemcpyHostToDevice), hipSuccess);
  };
  auto read = [](const DeviceBuffer<T>& b, size_t n) {
    std::vector<T> h(n);
    EXPECT_EQ(hipMemcpy(h.data(), b.ptr, n * sizeof(T), hipMemcpyDeviceToHost), hipSuccess);
    std::vector<uint64_t> bits(n);
    for (size_t i = 0; i < n; ++i) bits[i] = to_bits(h[i]);
    return bits;
  };
  // The final value of the no-return form: the updates in any order (order-free operations), or one of the values.
  auto check_final = [&](uint64_t final, size_t first, size_t n, const char* where) {
    if (order == Order::exchange) {
      EXPECT_NE(std::find(vbits.begin() + first, vbits.begin() + first + n, final), vbits.begin() + first + n)
          << name << " " << where << ": final value is none of the exchanged values";
      return;
    }
    uint64_t want = to_bits(init);
    for (size_t i = first; i < first + n; ++i) want = op(want, vbits[i]);
    EXPECT_EQ(final, want) << name << " " << where << " (no return)";
  };
  for (bool lds : {false, true}) {
    for (bool returns : {true, false}) {
      if (forms == Forms::global_returning && (lds || !returns)) continue;
      SCOPED_TRACE(std::string(name) + (lds ? " LDS" : " global") + (returns ? "" : " no-return"));
      const int blocks = lds ? lds_blocks : global_blocks;
      upload(!returns && !exact.empty() ? exact : values);
      HIP_ASSERT(hipMemcpy(words.ptr, &init, sizeof(T), hipMemcpyHostToDevice));
      auto kernel = lds ? (returns ? contend<Op, T, true, true> : contend<Op, T, true, false>)
                        : (returns ? contend<Op, T, false, true> : contend<Op, T, false, false>);
      kernel<<<blocks, block>>>(words.ptr, dvalues.ptr, olds.ptr, init, zeros.ptr);
      HIP_ASSERT(hipDeviceSynchronize());
      const std::vector<uint64_t> finals = read(words, blocks), got = read(olds, values.size());
      const int chains = lds ? lds_blocks : 1;
      const size_t per_chain = lds ? block : values.size();
      for (int c = 0; c < chains; ++c) {
        const size_t first = size_t(c) * per_chain;
        if (!returns) {
          check_final(finals[c], first, per_chain, lds ? "LDS" : "global");
          continue;
        }
        const std::vector<uint64_t> o(got.begin() + first, got.begin() + first + per_chain),
            v(vbits.begin() + first, vbits.begin() + first + per_chain);
        EXPECT_TRUE(explained(to_bits(init), finals[c], o, v, op))
            << name << (lds ? " LDS" : " global") << ": no order of the " << per_chain
            << " updates gives the old values returned and the final value 0x" << std::hex << finals[c];
      }
    }
  }
}

constexpr size_t kContenders = 1024;

template <class T, class Gen>
std::vector<T> generate(uint32_t seed, Gen gen) {
  std::mt19937 rng(seed);
  std::vector<T> v(kContenders);
  for (size_t i = 0; i < v.size(); ++i) v[i] = gen(rng, i);
  return v;
}

// Host models on the bit patterns.
template <class T, class F>
HostOp model(F f) {
  return [f](uint64_t o, uint64_t v) { return to_bits(T(f(from_bits<T>(o), from_bits<T>(v)))); };
}

template <class T>
void check_integer_ops() {
  using U = std::make_unsigned_t<T>;
  auto small = generate<T>(11, [](std::mt19937& r, size_t) { return T(1 + r() % 1000); });
  auto any = generate<T>(12, [](std::mt19937& r, size_t) { return T(uint64_t(r()) << 32 ^ r()); });
  auto distinct = generate<T>(13, [](std::mt19937&, size_t i) { return T(uint32_t(i * 2654435761u + 1)); });
  auto one_bit_set = generate<T>(14, [](std::mt19937& r, size_t) { return T(T(1) << (r() % (8 * sizeof(T)))); });
  check_atomic<Add, T>("add", T(5), small, model<T>([](T o, T v) { return T(U(o) + U(v)); }));
  check_atomic<Exch, T>("exch", T(7), distinct, model<T>([](T, T v) { return v; }), Order::exchange);
  check_atomic<Min, T>("min", T(0), any, model<T>([](T o, T v) { return std::min(o, v); }));
  check_atomic<Max, T>("max", T(0), any, model<T>([](T o, T v) { return std::max(o, v); }));
  check_atomic<And, T>("and", T(~T(0)), generate<T>(15, [](std::mt19937& r, size_t) {
                         return T(~(T(1) << (r() % (8 * sizeof(T)))));
                       }), model<T>([](T o, T v) { return T(o & v); }));
  check_atomic<Or, T>("or", T(0), one_bit_set, model<T>([](T o, T v) { return T(o | v); }));
  check_atomic<Xor, T>("xor", T(0), any, model<T>([](T o, T v) { return T(o ^ v); }));
  check_atomic<CasAdd, T>("cas", T(3), small, model<T>([](T o, T v) { return T(U(o) + U(v)); }));
  check_atomic<Sub, T>("sub", T(1) << 30, small, model<T>([](T o, T v) { return T(U(o) - U(v)); }));
}

TEST(AtomicsEveryOp, Int) { check_integer_ops<int>(); }
TEST(AtomicsEveryOp, Unsigned) {
  check_integer_ops<unsigned>();
  // atomicInc / atomicDec wrap at their operand: every work-item passes the same limit, as code does.
  const std::vector<unsigned> limit(kContenders, 37);
  check_atomic<Inc, unsigned>("inc", 0, limit, model<unsigned>([](unsigned o, unsigned v) { return o >= v ? 0 : o + 1; }));
  check_atomic<Dec, unsigned>("dec", 20, limit,
                              model<unsigned>([](unsigned o, unsigned v) { return o == 0 || o > v ? v : o - 1; }));
}
TEST(AtomicsEveryOp, UnsignedLongLong) { check_integer_ops<unsigned long long>(); }
TEST(AtomicsEveryOp, LongLongMinMax) {
  auto any = generate<long long>(16, [](std::mt19937& r, size_t) { return (long long)(uint64_t(r()) << 32 ^ r()); });
  check_atomic<Min, long long>("min", 0, any, model<long long>([](long long o, long long v) { return std::min(o, v); }));
  check_atomic<Max, long long>("max", 0, any, model<long long>([](long long o, long long v) { return std::max(o, v); }));
}

// Float adds round at every step: values with full mantissas make the order of the steps visible in the results.
// The no-return forms get exact values (small integers), so their final sum does not depend on the order.
template <class F>
void check_float_ops() {
  auto rounding = generate<F>(21, [](std::mt19937& r, size_t) { return F(1) + F(r() % (1u << 23)) / F(1u << 23); });
  auto signed_any = generate<F>(22, [](std::mt19937& r, size_t) { return (F(r() % 2000000) - F(1000000)) / F(1000); });
  auto whole = generate<F>(23, [](std::mt19937& r, size_t) { return F(r() % 100); });
  auto add = model<F>([](F o, F v) { return o + v; });
  check_atomic<Add, F>("add", F(0.5), rounding, add, Order::free, whole);
  check_atomic<UnsafeAdd, F>("unsafe add", F(0.5), rounding, add, Order::free, whole);
  check_atomic<Sub, F>("sub", F(4096), rounding, model<F>([](F o, F v) { return o - v; }), Order::free, whole);
  check_atomic<Exch, F>("exch", F(-1), signed_any, model<F>([](F, F v) { return v; }), Order::exchange);
  check_atomic<Min, F>("min", F(0), signed_any, model<F>([](F o, F v) { return std::fmin(o, v); }));
  check_atomic<Max, F>("max", F(0), signed_any, model<F>([](F o, F v) { return std::fmax(o, v); }));
  check_atomic<UnsafeMin, F>("unsafe min", F(0), signed_any, model<F>([](F o, F v) { return std::fmin(o, v); }));
  check_atomic<UnsafeMax, F>("unsafe max", F(0), signed_any, model<F>([](F o, F v) { return std::fmax(o, v); }));
}
TEST(AtomicsEveryOp, Float) { check_float_ops<float>(); }
TEST(AtomicsEveryOp, Double) { check_float_ops<double>(); }

// Packed halves: each half is added in f32 and rounded once to f16 / bf16 (round to nearest even).
template <class T, class Round>
void check_packed_add(const char* name, Round round_half) {
  auto values = generate<uint32_t>(31, [&](std::mt19937& r, size_t) {
    auto half = [&] { return uint32_t(round_half(0.25f + float(r() % 4096) / 16384.f)); };
    return half() | half() << 16;
  });
  std::vector<T> typed(values.size()), exact(values.size());
  for (size_t i = 0; i < values.size(); ++i) typed[i] = from_bits<T>(values[i]);
  // Exact sums for the no-return form: 1.0 in each half of every 16th value, zeros elsewhere.
  const uint32_t one = uint32_t(round_half(1.f));
  for (size_t i = 0; i < values.size(); ++i) exact[i] = from_bits<T>(i % 16 == 0 ? one | one << 16 : 0u);
  const bool bf16 = std::is_same_v<T, __hip_bfloat162>;
  auto value = [&](uint32_t h) { return bf16 ? hk_host::bf16_value(uint16_t(h)) : hk_host::f16_value(uint16_t(h)); };
  auto bits = [&](float f) { return uint32_t(bf16 ? hk_host::bf16_bits(f) : hk_host::f16_bits(f)); };
  HostOp add = [&](uint64_t o, uint64_t v) -> uint64_t {
    const uint32_t lo = bits(value(uint32_t(o) & 0xffff) + value(uint32_t(v) & 0xffff));
    const uint32_t hi = bits(value(uint32_t(o) >> 16) + value(uint32_t(v) >> 16));
    return lo | hi << 16;
  };
  check_atomic<UnsafeAdd, T>(name, from_bits<T>(bits(1.f) | bits(2.f) << 16), typed, add, Order::free, exact);
}
TEST(AtomicsEveryOp, Half2) { check_packed_add<__half2>("half2 add", hk_host::f16_bits); }
TEST(AtomicsEveryOp, Bfloat162) { check_packed_add<__hip_bfloat162>("bfloat162 add", hk_host::bf16_bits); }

// Buffer atomics: clang-21 has no builtins for them, so kernel libraries write them as inline assembly, as here (the
// returning form, sc0, on a raw buffer over the word). Packed halves travel as their 32-bit patterns.
using v4i = int __attribute__((ext_vector_type(4)));
// The V# lives in SGPRs: the word's address (the same in every lane) is read from the first lane. A macro, so that
// the asm's "s" operand is the readfirstlanes' result itself at every optimization level (at -O0 a function's result
// comes back per lane, in VGPRs).
#define HK_RAW_BUFFER_OVER(p)                                                                            \
  (v4i{__builtin_amdgcn_readfirstlane(int(uint32_t(reinterpret_cast<uint64_t>(p)))),                     \
       __builtin_amdgcn_readfirstlane(int(reinterpret_cast<uint64_t>(p) >> 32)) & 0xffff, 16, 0x00020000})
#define HK_BUFFER_ATOMIC(NAME, INSN)                                                                     \
  struct NAME {                                                                                          \
    template <class T>                                                                                   \
    __device__ static T apply(T* p, T v) {                                                               \
      asm volatile(INSN " %0, %1, %2, 0 offen sc0\n\ts_waitcnt vmcnt(0)"                                 \
                   : "+v"(v) : "v"(0u), "s"(HK_RAW_BUFFER_OVER(p)) : "memory");                          \
      return v;                                                                                          \
    }                                                                                                    \
  };
HK_BUFFER_ATOMIC(BufferAdd, "buffer_atomic_add")
HK_BUFFER_ATOMIC(BufferSmax, "buffer_atomic_smax")
HK_BUFFER_ATOMIC(BufferUmin, "buffer_atomic_umin")
HK_BUFFER_ATOMIC(BufferXor, "buffer_atomic_xor")
HK_BUFFER_ATOMIC(BufferSwap, "buffer_atomic_swap")
HK_BUFFER_ATOMIC(BufferInc, "buffer_atomic_inc")
HK_BUFFER_ATOMIC(BufferAddX2, "buffer_atomic_add_x2")
HK_BUFFER_ATOMIC(BufferSmaxX2, "buffer_atomic_smax_x2")
HK_BUFFER_ATOMIC(BufferAddF32, "buffer_atomic_add_f32")
HK_BUFFER_ATOMIC(BufferAddF64, "buffer_atomic_add_f64")
HK_BUFFER_ATOMIC(BufferMaxF64, "buffer_atomic_max_f64")
HK_BUFFER_ATOMIC(BufferPkAddF16, "buffer_atomic_pk_add_f16")
#if defined(__gfx950__) || !defined(__HIP_DEVICE_COMPILE__)
HK_BUFFER_ATOMIC(BufferPkAddBf16, "buffer_atomic_pk_add_bf16")
#else
struct BufferPkAddBf16 {
  template <class T>
  __device__ static T apply(T*, T v) { return v; }
};
#endif
#undef HK_BUFFER_ATOMIC
// buffer_atomic_cmpswap{,_x2}: {new, compare} in, the old value back in the first half; an add retried until it lands.
struct BufferCasAdd {
  template <class T>
  __device__ static T apply(T* p, T v) {
    using Pair = T __attribute__((ext_vector_type(2)));
    T seen = __hip_atomic_load(p, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
    for (;;) {
      Pair d{T(seen + v), seen};
      if constexpr (sizeof(T) == 4)
        asm volatile("buffer_atomic_cmpswap %0, %1, %2, 0 offen sc0\n\ts_waitcnt vmcnt(0)"
                     : "+v"(d) : "v"(0u), "s"(HK_RAW_BUFFER_OVER(p)) : "memory");
      else
        asm volatile("buffer_atomic_cmpswap_x2 %0, %1, %2, 0 offen sc0\n\ts_waitcnt vmcnt(0)"
                     : "+v"(d) : "v"(0u), "s"(HK_RAW_BUFFER_OVER(p)) : "memory");
      if (d.x == seen) return seen;
      seen = d.x;
    }
  }
};

TEST(AtomicsEveryOp, BufferForms) {
  constexpr Order any = Order::free;
  constexpr Forms buffer = Forms::global_returning;
  auto small = generate<unsigned>(41, [](std::mt19937& r, size_t) { return 1 + r() % 1000; });
  auto any32 = generate<unsigned>(42, [](std::mt19937& r, size_t) { return unsigned(r()); });
  auto distinct = generate<unsigned>(43, [](std::mt19937&, size_t i) { return unsigned(i * 2654435761u + 1); });
  auto any64 = generate<unsigned long long>(44, [](std::mt19937& r, size_t) { return uint64_t(r()) << 32 ^ r(); });
  using u64 = unsigned long long;
  auto add32 = model<unsigned>([](unsigned o, unsigned v) { return o + v; });
  check_atomic<BufferAdd, unsigned>("buffer add", 5, small, add32, any, {}, buffer);
  check_atomic<BufferCasAdd, unsigned>("buffer cmpswap", 5, small, add32, any, {}, buffer);
  check_atomic<BufferSmax, unsigned>("buffer smax", 0, any32,
                                     model<unsigned>([](unsigned o, unsigned v) { return unsigned(std::max(int(o), int(v))); }),
                                     any, {}, buffer);
  check_atomic<BufferUmin, unsigned>("buffer umin", ~0u, any32,
                                     model<unsigned>([](unsigned o, unsigned v) { return std::min(o, v); }), any, {}, buffer);
  check_atomic<BufferXor, unsigned>("buffer xor", 0, any32, model<unsigned>([](unsigned o, unsigned v) { return o ^ v; }),
                                    any, {}, buffer);
  check_atomic<BufferSwap, unsigned>("buffer swap", 7, distinct, model<unsigned>([](unsigned, unsigned v) { return v; }),
                                     any, {}, buffer);
  check_atomic<BufferInc, unsigned>("buffer inc", 0, std::vector<unsigned>(kContenders, 37),
                                    model<unsigned>([](unsigned o, unsigned v) { return o >= v ? 0 : o + 1; }), any, {}, buffer);
  auto add64 = model<u64>([](u64 o, u64 v) { return o + v; });
  auto small64 = generate<u64>(45, [](std::mt19937& r, size_t) { return u64(1 + r() % 1000) << 33; });
  check_atomic<BufferAddX2, u64>("buffer add_x2", 5, small64, add64, any, {}, buffer);
  check_atomic<BufferCasAdd, u64>("buffer cmpswap_x2", 5, small64, add64, any, {}, buffer);
  check_atomic<BufferSmaxX2, u64>("buffer smax_x2", 0, any64,
                                  model<u64>([](u64 o, u64 v) { return u64(std::max((long long)o, (long long)v)); }), any,
                                  {}, buffer);
  // Float adds with full mantissas (the order shows in the rounding), and max_f64 over signed values.
  auto rounding32 = generate<float>(46, [](std::mt19937& r, size_t) { return 1.f + float(r() % (1u << 23)) / float(1u << 23); });
  auto rounding64 = generate<double>(47, [](std::mt19937& r, size_t) { return 1. + double(r() % (1u << 30)) / double(1u << 30); });
  auto signed64 = generate<double>(48, [](std::mt19937& r, size_t) { return (double(r() % 2000000) - 1e6) / 1e3; });
  check_atomic<BufferAddF32, float>("buffer add_f32", 0.5f, rounding32, model<float>([](float o, float v) { return o + v; }),
                                    any, {}, buffer);
  check_atomic<BufferAddF64, double>("buffer add_f64", 0.5, rounding64,
                                     model<double>([](double o, double v) { return o + v; }), any, {}, buffer);
  check_atomic<BufferMaxF64, double>("buffer max_f64", -1e9, signed64,
                                     model<double>([](double o, double v) { return std::fmax(o, v); }), any, {}, buffer);
  // Packed halves as 32-bit patterns, each half rounded once (f16; bf16 on gfx950, the only arch that has it).
  for (bool bf16 : {false, true}) {
    if (bf16 && test_arch() != "gfx950") continue;
    auto round = [bf16](float f) { return uint32_t(bf16 ? hk_host::bf16_bits(f) : hk_host::f16_bits(f)); };
    auto value = [bf16](uint32_t h) { return bf16 ? hk_host::bf16_value(uint16_t(h)) : hk_host::f16_value(uint16_t(h)); };
    auto values = generate<unsigned>(49, [&](std::mt19937& r, size_t) {
      return round(0.25f + float(r() % 4096) / 16384.f) | round(0.25f + float(r() % 4096) / 16384.f) << 16;
    });
    HostOp add = [&](uint64_t o, uint64_t v) -> uint64_t {
      return round(value(uint32_t(o) & 0xffff) + value(uint32_t(v) & 0xffff)) |
             round(value(uint32_t(o) >> 16) + value(uint32_t(v) >> 16)) << 16;
    };
    const unsigned init = round(1.f) | round(2.f) << 16;
    if (bf16) check_atomic<BufferPkAddBf16, unsigned>("buffer pk_add_bf16", init, values, add, any, {}, buffer);
    else check_atomic<BufferPkAddF16, unsigned>("buffer pk_add_f16", init, values, add, any, {}, buffer);
  }
}
