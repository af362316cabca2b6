// Host references for hk::rotary and hk::layer_norm / rms_norm (forward and backward), shared by their tests and
// hk-run: float64 arithmetic on the exact values the device holds, each result with a tolerance that names its
// sources; an independent host Philox4x32-10 (checked against the published known-answer vectors in norm_test); and a
// device array of bf16 / f16 / fp32 / uint8 elements kept next to its host values.
#pragma once
#include <hip/hip_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "host/scalar_type.h"
#include "kernels/philox_ref.h"

namespace rnref {

// ---- element types ----------------------------------------------------------------------------------------------


// Round to the device type, nearest even, and the largest relative error of one such rounding (the host toolkit).
inline float quantize(float f, hk::scalar_type t) { return hk_host::device_format(t).round(f); }
inline double roundoff(hk::scalar_type t) { return hk_host::unit_roundoff(hk_host::type_of(t)); }

// A device array of n elements of type t (bf16, f16, fp32, or uint8 as fp8_e4m3's byte width: use `bytes_type`),
// with its host values. Host values are always exactly representable in t.
struct DeviceArray {
  hk::scalar_type type;
  bool bytes = false;          // plain uint8 elements
  std::vector<float> host;
  void* dev = nullptr;
  DeviceArray(hk::scalar_type t, size_t n, bool as_bytes = false) : type(t), bytes(as_bytes), host(n, 0.f) {
    if (hipMalloc(&dev, std::max<size_t>(n * elem(), 1)) != hipSuccess) dev = nullptr;
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  ~DeviceArray() { (void)hipFree(dev); }
  size_t elem() const { return bytes ? 1 : size_of(type); }
  size_t size() const { return host.size(); }
  // Uniform values in [lo, hi), rounded to the type.
  DeviceArray& random(uint32_t seed, float lo = -1.f, float hi = 1.f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(lo, hi);
    for (auto& x : host) x = bytes ? float(rng() % 256) : quantize(u(rng), type);
    return upload();
  }
  DeviceArray& fill(float v) {
    for (auto& x : host) x = bytes ? v : quantize(v, type);
    return upload();
  }
  DeviceArray& upload() {
    std::vector<uint8_t> raw(host.size() * elem());
    const hk_host::Format f = hk_host::device_format(type);
    for (size_t i = 0; i < host.size(); ++i) {
      if (bytes) raw[i] = uint8_t(host[i]);
      else f.store(host[i], &raw[i * elem()]);
    }
    (void)hipMemcpy(dev, raw.data(), raw.size(), hipMemcpyHostToDevice);
    return *this;
  }
  std::vector<float> download() const {
    std::vector<uint8_t> raw(host.size() * elem());
    (void)hipMemcpy(raw.data(), dev, raw.size(), hipMemcpyDeviceToHost);
    std::vector<float> out(host.size());
    const hk_host::Format f = hk_host::device_format(type);
    for (size_t i = 0; i < host.size(); ++i) out[i] = bytes ? raw[i] : f.load(&raw[i * elem()]);
    return out;
  }
};

// A reference value and how far the device may be from it.
struct Expect {
  double value = 0, tol = 0;
  bool accepts(double got) const { return std::fabs(got - value) <= tol || got == value; }
};

// ---- Philox4x32-10 and the dropout mask: philox_ref.h ----------------------------------------------------------

using philox_ref::dropout_bits;
using philox_ref::dropout_keep;
using philox_ref::philox4x32_r;

// ---- rotary -------------------------------------------------------------------------------------------------------

struct RotaryShape {
  int batch, seqlen, heads, head_dim, rotary_dim;
  bool interleaved;
  long stride_b, stride_s, stride_h;  // of the input, elements
};

// The angles of token (b, s): from tables (cos / sin host values, row = position_offset + s), or computed from a base
// and positions (positions[b * seqlen + s] when given, else position_offset + s). `sign` -1 is the backward.
struct RotaryAngles {
  const std::vector<float>* cos = nullptr;
  const std::vector<float>* sin = nullptr;
  long table_stride = 0;
  double base = 0;
  const std::vector<int>* positions = nullptr;
  long position_offset = 0;
  double sign = 1;
  // cos and sin of pair i of token (b, s), and the bound on the device's angle error: none for tables; for computed
  // angles, fp32 rounds theta = position * base^(-2i/d) and base^(-2i/d) itself (exp2 of an fp32 exponent).
  void at(const RotaryShape& sh, int b, int s, int i, double& c, double& sn, double& angle_tol) const {
    if (cos) {
      const long row = position_offset + s;
      c = (*cos)[row * table_stride + i], sn = sign * (*sin)[row * table_stride + i], angle_tol = 0;
      return;
    }
    const double pos = positions ? (*positions)[long(b) * sh.seqlen + s] : double(position_offset + s);
    const double theta = pos * std::pow(base, -2.0 * i / sh.rotary_dim);
    c = std::cos(theta), sn = sign * std::sin(theta);
    angle_tol = (std::fabs(theta) + std::fabs(pos)) * 0x1p-22;
  }
};

// Expected output (dense batch, seqlen, heads, head_dim) of the rotation of `in` (host values at the given strides).
inline std::vector<Expect> rotary_reference(const RotaryShape& sh, const std::vector<float>& in, const RotaryAngles& ang,
                                            hk::scalar_type t) {
  std::vector<Expect> out(size_t(sh.batch) * sh.seqlen * sh.heads * sh.head_dim);
  const int half = sh.rotary_dim / 2;
  for (int b = 0; b < sh.batch; ++b)
    for (int s = 0; s < sh.seqlen; ++s)
      for (int h = 0; h < sh.heads; ++h) {
        const float* x = &in[b * sh.stride_b + s * sh.stride_s + h * sh.stride_h];
        Expect* o = &out[((size_t(b) * sh.seqlen + s) * sh.heads + h) * sh.head_dim];
        for (int d = sh.rotary_dim; d < sh.head_dim; ++d) o[d] = {x[d], 0};
        for (int i = 0; i < half; ++i) {
          const int e0 = sh.interleaved ? 2 * i : i, e1 = sh.interleaved ? 2 * i + 1 : i + half;
          double c, sn, angle_tol;
          ang.at(sh, b, s, i, c, sn, angle_tol);
          const double x0 = x[e0], x1 = x[e1], mag = std::fabs(x0) + std::fabs(x1);
          const double y0 = x0 * c - x1 * sn, y1 = x0 * sn + x1 * c;
          // fp32 products and sums, sincosf, and the angle; then one rounding to the tensor's type.
          const double arith = mag * (angle_tol + 0x1p-20);
          o[e0] = {y0, 1.01 * roundoff(t) * std::fabs(y0) + arith};
          o[e1] = {y1, 1.01 * roundoff(t) * std::fabs(y1) + arith};
        }
      }
  return out;
}

// ---- norms ----------------------------------------------------------------------------------------------------------

struct NormShape {
  int rows, cols;
  bool rms;
  float eps, p;
  uint64_t seed, offset;
};

struct NormForwardRef {
  std::vector<Expect> r, y, mean, rstd;
  std::vector<uint8_t> mask;
};

// r = residual + dropout(x) / (1 - p), then the norm, from dense rows x cols host values (residual, bias may be empty).
inline NormForwardRef norm_forward_reference(const NormShape& sh, const std::vector<float>& x,
                                             const std::vector<float>& residual, const std::vector<float>& weight,
                                             const std::vector<float>& bias, hk::scalar_type t, hk::scalar_type wt) {
  NormForwardRef out;
  const size_t n = size_t(sh.rows) * sh.cols;
  out.r.resize(n), out.y.resize(n), out.mean.resize(sh.rows), out.rstd.resize(sh.rows), out.mask.resize(n);
  const double scale = 1.0 / (1.0 - double(sh.p));
  std::vector<double> r(sh.cols);
  for (int i = 0; i < sh.rows; ++i) {
    double sum = 0, mag = 0;
    for (int j = 0; j < sh.cols; ++j) {
      const size_t at = size_t(i) * sh.cols + j;
      const bool keep = dropout_keep(sh.p, sh.seed, sh.offset, i, j);
      out.mask[at] = keep;
      const double dropped = keep ? x[at] * scale : 0.0, res = residual.empty() ? 0.0 : residual[at];
      r[j] = dropped + res;
      // The device scales in fp32 (1 / (1 - p) rounded, the product rounded) and adds in fp32.
      out.r[at] = {r[j], 1.01 * roundoff(t) * std::fabs(r[j]) + (std::fabs(dropped) + std::fabs(res)) * 0x1p-22};
      sum += r[j], mag += std::fabs(r[j]);
    }
    const double mean = sh.rms ? 0.0 : sum / sh.cols;
    double sq = 0;
    for (int j = 0; j < sh.cols; ++j) sq += (r[j] - mean) * (r[j] - mean);
    const double var = sq / sh.cols, rstd = 1.0 / std::sqrt(var + sh.eps);
    // fp32 sums of cols terms: relative error well under cols * 2^-24 (tree order); the statistics' inputs differ by
    // the fp32 r's rounding. mean's tolerance is relative to the magnitudes summed.
    const double stat_rel = (sh.cols + 8) * 0x1p-24;
    out.mean[i] = {mean, stat_rel * mag / sh.cols + 1e-30};
    // rstd: var's relative error (including mean's error times the deviations) halves through the square root.
    const double var_err = stat_rel * (var + 2 * std::fabs(out.mean[i].tol) * mag / sh.cols + mean * mean * 0x1p-22);
    out.rstd[i] = {rstd, rstd * (0.5 * var_err / (var + sh.eps) + 4 * 0x1p-24)};
    const double rel_rstd = out.rstd[i].tol / rstd;
    for (int j = 0; j < sh.cols; ++j) {
      const size_t at = size_t(i) * sh.cols + j;
      const double xhat = (r[j] - mean) * rstd, w = weight[j], b = bias.empty() ? 0.0 : bias[j];
      const double y = xhat * w + b;
      const double dev_err = (std::fabs(r[j]) * 0x1p-22 + out.mean[i].tol) * rstd;  // r - mean in fp32
      const double arith = (std::fabs(xhat) * rel_rstd + dev_err) * std::fabs(w) + (std::fabs(xhat * w) + std::fabs(b)) * 0x1p-21;
      out.y[at] = {y, 1.01 * roundoff(t) * std::fabs(y) + arith};
    }
    (void)wt;
  }
  return out;
}

struct NormBackwardRef {
  std::vector<Expect> dx, dresidual, dweight, dbias;
};

// The backward from dense host values of dy, r (as stored), mean and rstd (as saved, fp32), weight, dresidual_in
// (may be empty).
inline NormBackwardRef norm_backward_reference(const NormShape& sh, const std::vector<float>& dy,
                                               const std::vector<float>& r, const std::vector<float>& mean,
                                               const std::vector<float>& rstd, const std::vector<float>& weight,
                                               const std::vector<float>& dresidual_in, hk::scalar_type t, hk::scalar_type wt) {
  NormBackwardRef out;
  const size_t n = size_t(sh.rows) * sh.cols;
  out.dx.resize(n), out.dresidual.resize(n);
  std::vector<double> dw(sh.cols, 0.0), db(sh.cols, 0.0), dw_mag(sh.cols, 0.0), db_mag(sh.cols, 0.0);
  const double scale = 1.0 / (1.0 - double(sh.p));
  std::vector<double> xhat(sh.cols), g(sh.cols);
  for (int i = 0; i < sh.rows; ++i) {
    const double m = sh.rms ? 0.0 : mean[i], rs = rstd[i];
    double sum_g = 0, sum_gx = 0, mag_g = 0, mag_gx = 0;
    for (int j = 0; j < sh.cols; ++j) {
      const size_t at = size_t(i) * sh.cols + j;
      xhat[j] = (r[at] - m) * rs;
      g[j] = double(dy[at]) * weight[j];
      sum_g += g[j], sum_gx += g[j] * xhat[j], mag_g += std::fabs(g[j]), mag_gx += std::fabs(g[j] * xhat[j]);
      dw[j] += dy[at] * xhat[j], db[j] += dy[at];
      dw_mag[j] += std::fabs(dy[at] * xhat[j]), db_mag[j] += std::fabs(dy[at]);
    }
    const double mean_g = sh.rms ? 0.0 : sum_g / sh.cols, mean_gx = sum_gx / sh.cols;
    const double stat_rel = (sh.cols + 8) * 0x1p-24;
    for (int j = 0; j < sh.cols; ++j) {
      const size_t at = size_t(i) * sh.cols + j;
      const double in = dresidual_in.empty() ? 0.0 : dresidual_in[at];
      const double dr = rs * (g[j] - mean_g - xhat[j] * mean_gx) + in;
      // fp32: xhat to a few ulps (r - mean, times rstd), the two means to stat_rel of the magnitudes summed.
      const double arith = rs * ((std::fabs(g[j]) + std::fabs(mean_g) + std::fabs(xhat[j] * mean_gx)) * 0x1p-20 +
                                 stat_rel * (sh.rms ? 0.0 : mag_g / sh.cols) +
                                 std::fabs(xhat[j]) * stat_rel * mag_gx / sh.cols +
                                 std::fabs(mean_gx) * (std::fabs(r[at]) + std::fabs(m)) * rs * 0x1p-22) +
                           std::fabs(in) * 0x1p-24;
      out.dresidual[at] = {dr, 1.01 * roundoff(t) * std::fabs(dr) + arith};
      const bool keep = dropout_keep(sh.p, sh.seed, sh.offset, i, j);
      const double dx = keep ? dr * scale : 0.0;
      out.dx[at] = {dx, keep ? 1.01 * roundoff(t) * std::fabs(dx) + (arith + std::fabs(dr) * 0x1p-22) * scale : 0.0};
    }
  }
  out.dweight.resize(sh.cols), out.dbias.resize(sh.cols);
  // fp32 sums over rows (per team, then over teams), each term with xhat's few-ulp error.
  const double sum_rel = (sh.rows + 8) * 0x1p-24 + 0x1p-20;
  for (int j = 0; j < sh.cols; ++j) {
    out.dweight[j] = {dw[j], 1.01 * roundoff(wt) * std::fabs(dw[j]) + sum_rel * dw_mag[j]};
    out.dbias[j] = {db[j], 1.01 * roundoff(wt) * std::fabs(db[j]) + sum_rel * db_mag[j]};
  }
  return out;
}

// Counts the elements of `got` outside their expectation; `where(i)` names element i in messages via `report`.
template <class Report>
inline size_t count_misses(const std::vector<float>& got, const std::vector<Expect>& want, Report report) {
  size_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i)
    if (!want[i].accepts(got[i]) && bad++ < 5) report(i, got[i], want[i]);
  return bad;
}

}  // namespace rnref
