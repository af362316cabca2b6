// Host matrices for references: seeded random operands exact in a device type, a matmul reference in double with the
// error bound of fp32 accumulation, and elementwise comparison that reports the first misses. Plain C++ (no HIP, no
// googletest); tests wrap a Comparison in googletest's checks (tests/host/gtest.h), tools print it.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "numerics.h"

namespace hk_host {

// rows x cols floats, row-major with leading dimension ld >= cols (the padding past cols is part of `values`).
struct Matrix {
  long rows = 0, cols = 0, ld = 0;
  std::vector<float> values;
  Matrix() = default;
  Matrix(long r, long c, long ld_ = 0) : rows(r), cols(c), ld(ld_ ? ld_ : c), values(size_t(r) * (ld_ ? ld_ : c)) {}
  Matrix(long r, long c, std::vector<float> v) : rows(r), cols(c), ld(c), values(std::move(v)) {}  // r * c of them
  float& operator()(long i, long j) { return values[size_t(i) * ld + j]; }
  float operator()(long i, long j) const { return values[size_t(i) * ld + j]; }
};

// Seeded random values, each exact in the format: uniform in [-limit, limit] and rounded, or for fp8 codes drawn
// uniformly among the finite ones of magnitude <= limit (so values spread over the binades, subnormals included;
// limit = INFINITY: every finite code).
inline std::vector<float> random_values(size_t n, Format f, uint32_t seed, float limit = 1.f) {
  std::vector<float> v(n);
  std::mt19937 rng(seed);
  if (is_fp8(f.type)) {
    const Fp8& fp8 = f.fp8();
    for (auto& x : v) {
      do x = fp8.value(uint8_t(rng()));
      while (!(std::isfinite(x) && std::fabs(x) <= limit));
    }
  } else {
    std::uniform_real_distribution<float> u(-limit, limit);
    for (auto& x : v) x = f.round(u(rng));
  }
  return v;
}

inline Matrix random_matrix(long rows, long cols, Format f, uint32_t seed, float limit = 1.f, long ld = 0) {
  Matrix m(rows, cols, ld);
  m.values = random_values(m.values.size(), f, seed, limit);
  return m;
}

// Rounds every element to the format (what storing the matrix in that type keeps).
inline Matrix rounded(Matrix m, Format f) {
  for (auto& x : m.values) x = f.round(x);
  return m;
}

// A matmul operand as the product reads it: the stored matrix or its transpose.
struct Operand {
  const Matrix& m;
  bool transposed = false;
  float operator()(long i, long k) const { return transposed ? m(k, i) : m(i, k); }
  long rows() const { return transposed ? m.cols : m.rows; }
  long cols() const { return transposed ? m.rows : m.cols; }
};

// D = alpha * A B + beta * C in double. Each element comes with the sum of its terms' magnitudes, which bounds the
// error of fp32 accumulation in any order.
struct Matmul {
  Operand a, b;
  const Matrix* c = nullptr;
  double alpha = 1, beta = 0;
  struct Element {
    double value, magnitude;
  };
  long m() const { return a.rows(); }
  long n() const { return b.cols(); }
  long k() const { return a.cols(); }
  Element at(long i, long j) const {
    double s = 0, mag = 0;
    for (long x = 0; x < k(); ++x) {
      const double t = double(a(i, x)) * b(x, j);
      s += t, mag += std::fabs(t);
    }
    Element e{alpha * s, std::fabs(alpha) * mag};
    if (c) e.value += beta * (*c)(i, j), e.magnitude += std::fabs(beta * (*c)(i, j));
    return e;
  }
  Matrix all() const {
    Matrix d(m(), n());
    for (long i = 0; i < m(); ++i)
      for (long j = 0; j < n(); ++j) d(i, j) = float(at(i, j).value);
    return d;
  }
};

// How far fp32 accumulation of `terms` products may land from the exact sum: products of 16-bit and 8-bit inputs are
// exact in fp32, and each fp32 addition, in any order and with any rounding, moves the sum by at most 2^-23 of the
// magnitudes summed so far (8 more roundings leave room for alpha, beta and the hardware's partial sums).
inline double fp32_sum_bound(long terms, double magnitude) { return double(terms + 8) * 0x1p-23 * magnitude; }

// The tolerance of one element of a matmul with fp32 accumulation stored as `out`.
inline double matmul_tolerance(const Matmul::Element& e, long k, Type out) {
  return fp32_sum_bound(k, e.magnitude) + unit_roundoff(out) * std::fabs(e.value);
}

// The outcome of an elementwise comparison: counts, the worst error relative to its tolerance, the first misses.
class Comparison {
 public:
  explicit Comparison(std::string what, int keep = 5) : what_(std::move(what)), keep_(keep) {}
  // Checks one element (row -1: a flat index in col): |got - want| <= tol, or both NaN, or equal (infinities).
  bool check(long row, long col, double got, double want, double tol) {
    ++checked_;
    const double err = std::fabs(got - want);
    const bool ok = err <= tol || got == want || (std::isnan(got) && std::isnan(want));
    const double ratio = err / (tol > 0 ? tol : 1);
    if (!ok) worst_ = std::max(worst_, std::isnan(ratio) ? INFINITY : ratio);
    else if (!std::isnan(ratio)) worst_ = std::max(worst_, ratio);
    if (ok) return true;
    if (failed_++ < keep_) {
      std::ostringstream s;
      s << what_ << (row >= 0 ? " [" + std::to_string(row) + "][" + std::to_string(col) + "]" : " [" + std::to_string(col) + "]")
        << ": got " << got << ", want " << want << " (tolerance " << tol << ")";
      misses_.push_back(s.str());
    }
    return false;
  }
  bool ok() const { return failed_ == 0; }
  long checked() const { return checked_; }
  long failed() const { return failed_; }
  double worst() const { return worst_; }  // the largest |got - want| / tolerance seen (NaN misses count as inf)
  const std::vector<std::string>& first_misses() const { return misses_; }
  std::string summary() const {
    return what_ + ": " + std::to_string(failed_) + " of " + std::to_string(checked_) + " elements differ";
  }

 private:
  std::string what_;
  int keep_;
  long checked_ = 0, failed_ = 0;
  double worst_ = 0;
  std::vector<std::string> misses_;
};

// got[i] against want[i] within atol + rtol |want[i]|.
inline Comparison compare(const std::vector<float>& got, const std::vector<float>& want, double atol, double rtol,
                          std::string what) {
  Comparison c(std::move(what));
  if (got.size() != want.size()) {
    c.check(-1, -1, double(got.size()), double(want.size()), 0);  // a size mismatch is one (reported) miss
    return c;
  }
  for (size_t i = 0; i < got.size(); ++i) c.check(-1, long(i), got[i], want[i], atol + rtol * std::fabs(want[i]));
  return c;
}

// A device's matmul result `got` (m x n, stored as `out`) against the reference, every `step`-th element in row-major
// order (1: all of them).
inline Comparison compare(const Matrix& got, const Matmul& ref, Type out, std::string what, size_t step = 1) {
  Comparison c(std::move(what));
  const size_t total = size_t(ref.m()) * ref.n();
  for (size_t idx = 0; idx < total; idx += step) {
    const long i = long(idx / ref.n()), j = long(idx % ref.n());
    const Matmul::Element e = ref.at(i, j);
    c.check(i, j, got(i, j), e.value, matmul_tolerance(e, ref.k(), out));
  }
  return c;
}

}  // namespace hk_host
