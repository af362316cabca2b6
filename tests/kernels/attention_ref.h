// The float64 host reference of attention, shared by the attention tests and hk-run: the forward's O and LSE of every
// query row, the backward's dQ, dK and dV, and how far a correct device result may be from them. Independent of the
// kernels: plain softmax over the visible keys in double, no online rescaling, no tiles.
//
// Host tensors are packed by sequence: element (sequence b, row i, head h, x) of Q is q[((start_b + i) * Hq + h) * D
// + x], start_b the sum of the earlier sequences' lengths (K alike with Hkv, V with Hkv and DV); dQ like Q, O and dO
// like Q with DV, dK like K, dV like V; LSE is [(start_b + i) * Hq + h].
#pragma once
#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>
#include <utility>
#include <vector>

#include "kernels/philox_ref.h"

namespace attn_ref {

struct Shape {
  std::vector<int> len_q, len_k;  // one per sequence (padded batches: all the same)
  int hq = 1, hkv = 1, d = 64;
  bool causal = false;
  int left = -1, right = -1;      // window; -1 = unbounded
  double scale = 0;               // 0 = 1 / sqrt(d)
  double softcap = 0;             // > 0: logits cap tanh(logit / cap)
  std::vector<double> sinks;      // empty, or one logit per query head in every row's denominator (a key with no value)
  std::vector<double> alibi;      // empty, or ALiBi slopes: (hq), or (sequences, hq) with alibi_batched
  bool alibi_batched = false;
  double dropout = 0;             // dropout_p; the mask: hk's attention dropout (philox_ref.h) under seed, offset
  uint64_t seed = 0, offset = 0;
  int dv = 0;                     // V's and O's head dim; 0 = d
  int vd() const { return dv ? dv : d; }
  // What dropout makes of P's element (sequence b, head h, query i, key j): 1 / (1 - p) where it is kept, else 0.
  double dropped(size_t b, int h, long i, long j) const {
    if (!(dropout > 0)) return 1;
    const uint64_t stream = offset + uint64_t(b) * uint64_t(hq) + uint64_t(h);
    return philox_ref::attn_dropout_keep(float(dropout), seed, stream, i, j) ? 1 / (1 - double(float(dropout))) : 0;
  }
  // ALiBi's bias of query i and key j of sequence b (sq queries, sk keys), head h: -slope |i + sk - sq - j|.
  double bias(size_t b, int h, long i, long j, long sq, long sk) const {
    if (alibi.empty()) return 0;
    return -alibi[(alibi_batched ? b * hq : 0) + h] * std::fabs(double(i + sk - sq - j));
  }
  double softmax_scale() const { return scale > 0 ? scale : 1.0 / std::sqrt(double(d)); }
  // The logit of a dot product q . k, and its derivative in the scaled dot product (1 without a cap).
  double logit(double dot) const {
    const double x = dot * softmax_scale();
    return softcap > 0 ? softcap * std::tanh(x / softcap) : x;
  }
  double logit_slope(double dot) const {
    if (!(softcap > 0)) return 1;
    const double t = std::tanh(dot * softmax_scale() / softcap);
    return 1 - t * t;
  }
  // The error a device's cap adds to a logit: its tanh is within 1.6e-5 of tanh (a polynomial of exp2(-2 |y|):
  // AttnArgs::Softcap::tanh_error), and a few fp32 ulps of the cap.
  double cap_error() const { return softcap > 0 ? softcap * (1.6e-5 + 16 * std::ldexp(1.0, -24)) : 0; }
  long total_q() const { long t = 0; for (int n : len_q) t += n; return t; }
  long total_k() const { long t = 0; for (int n : len_k) t += n; return t; }
};

// Sinks' logits for tests and tools: spread around the scores' range, exact in fp32.
inline std::vector<float> sample_sinks(int hq) {
  std::vector<float> z;
  for (int h = 0; h < hq; ++h) z.push_back(-1.5f + 0.75f * float(h % 5));
  return z;
}

// ALiBi slopes for tests and tools: the ALiBi paper's geometric sequence 2^(-8 (h + 1) / Hq), `rows` times ((rows, hq)
// for per-sequence slopes), row b scaled by 1 + b / 4 so that the sequences differ.
inline std::vector<float> sample_alibi(int hq, int rows = 1) {
  std::vector<float> slopes;
  for (int b = 0; b < rows; ++b)
    for (int h = 0; h < hq; ++h) slopes.push_back(std::exp2(-8.f * float(h + 1) / float(hq)) * (1.f + 0.25f * float(b)));
  return slopes;
}

// flash-attention's visibility: causal aligned bottom-right, window (left, right) around the diagonal i + Sk - Sq.
inline bool visible(const Shape& s, long i, long j, long sq, long sk) {
  const long diag = i + sk - sq;
  if ((s.causal || s.right >= 0) && j > diag + (s.causal ? 0 : s.right)) return false;
  if (s.left >= 0 && j < diag - s.left) return false;
  return true;
}

// Per-dtype unit roundoff of what the kernel rounds, P before the P V product and O on the way out: 2^-p for a
// p-bit significand (2^-8 for bf16, 2^-11 for f16).
inline double unit_roundoff(bool bf16) { return bf16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11); }

struct Result {
  std::vector<double> o, lse;          // as the host tensors above; a row that sees no key: O 0, LSE -inf
  std::vector<double> o_tol, lse_tol;  // allowed |device - reference| per element (0: must be exact)
};

// O and LSE for q, k, v (values exactly as the device holds them) and the tolerance of a kernel that computes the
// scores in fp32, rounds P and O to the element type (unit roundoff u) and accumulates in fp32:
//   - P's and O's rounding: u times the row's weighted mean of |v| (sum p |v| / sum p), doubled for slack, plus u |O|;
//   - the fp32 scores: an error of at most 16 * 2^-24 * sum |q k| each (MFMA blocks summed in an unspecified order),
//     which moves p by that much times the scale, relatively;
//   - f16's subnormal P: 2^-25 per key, times max |v|;
//   - LSE: the score error and a few fp32 ulps of its magnitude.
// f(first, last) over [0, n) in contiguous parts, one per host core (at most n), joined before returning.
template <class F>
inline void parallel_for(size_t n, F&& f) {
  const size_t threads = std::min<size_t>(n, std::max(1u, std::thread::hardware_concurrency()));
  if (threads <= 1) return f(size_t(0), n);
  std::vector<std::thread> pool;
  for (size_t t = 0; t < threads; ++t) pool.emplace_back([&, t] { f(n * t / threads, n * (t + 1) / threads); });
  for (auto& th : pool) th.join();
}

inline Result forward(const Shape& s, const std::vector<float>& q, const std::vector<float>& k,
                      const std::vector<float>& v, bool bf16) {
  const int d = s.d, dv = s.vd(), ratio = s.hq / s.hkv;
  const double scale = s.softmax_scale(), u = unit_roundoff(bf16), fp32_u = std::ldexp(1.0, -24);
  Result r;
  const long tq = s.total_q();
  r.o.assign(tq * s.hq * dv, 0), r.o_tol.assign(r.o.size(), 0);
  r.lse.assign(tq * s.hq, -std::numeric_limits<double>::infinity()), r.lse_tol.assign(r.lse.size(), 0);
  // (sequence, head) pairs are independent (their rows of O and LSE apart): spread over the host's cores.
  const size_t nb = s.len_q.size();
  std::vector<long> starts_q(nb + 1, 0), starts_k(nb + 1, 0);
  for (size_t b = 0; b < nb; ++b) starts_q[b + 1] = starts_q[b] + s.len_q[b], starts_k[b + 1] = starts_k[b] + s.len_k[b];
  auto pair = [&](size_t b, int h, std::vector<double>& score, std::vector<double>& mag) {
    const long sq = s.len_q[b], sk = s.len_k[b], start_q = starts_q[b], start_k = starts_k[b];
    {
      const int hk = h / ratio;
      for (long i = 0; i < sq; ++i) {
        const float* qi = &q[((start_q + i) * s.hq + h) * d];
        score.assign(sk, -std::numeric_limits<double>::infinity()), mag.assign(sk, 0);
        double mx = -std::numeric_limits<double>::infinity(), mag_max = 0;
        for (long j = 0; j < sk; ++j) {
          if (!visible(s, i, j, sq, sk)) continue;
          const float* kj = &k[((start_k + j) * s.hkv + hk) * d];
          double dot = 0, m = 0;
          for (int x = 0; x < d; ++x) dot += double(qi[x]) * kj[x], m += std::fabs(double(qi[x]) * kj[x]);
          const double bias = s.bias(b, h, i, j, sq, sk);
          score[j] = s.logit(dot) + bias, mag[j] = m * scale + std::fabs(bias);
          mx = std::max(mx, score[j]), mag_max = std::max(mag_max, mag[j]);
        }
        const long row = (start_q + i) * s.hq + h;
        const double sink = s.sinks.empty() ? -std::numeric_limits<double>::infinity() : s.sinks[h];
        if (mx == -std::numeric_limits<double>::infinity()) {  // no visible key: O 0, LSE -inf (or the sink), exactly
          if (!s.sinks.empty()) r.lse[row] = sink, r.lse_tol[row] = 4 * fp32_u * std::fabs(sink) + 1e-6;
          continue;
        }
        double l = std::exp(sink - mx), vmax = 0;  // the sink's term (0 without one)
        std::vector<double> acc(dv, 0), acc_abs(dv, 0);
        for (long j = 0; j < sk; ++j) {
          if (score[j] == -std::numeric_limits<double>::infinity()) continue;
          const double p = std::exp(score[j] - mx), pd = p * s.dropped(b, h, i, j);  // l takes the whole P
          const float* vj = &v[((start_k + j) * s.hkv + hk) * dv];
          l += p;
          for (int x = 0; x < dv; ++x) acc[x] += pd * vj[x], acc_abs[x] += pd * std::fabs(vj[x]), vmax = std::max(vmax, double(std::fabs(vj[x])));
        }
        const double score_err = 16 * fp32_u * mag_max + s.cap_error();  // natural-log units (a cap's slope is <= 1)
        for (int x = 0; x < dv; ++x) {
          const double o = acc[x] / l, mean_abs = acc_abs[x] / l;
          r.o[row * dv + x] = o;
          r.o_tol[row * dv + x] = (2 * u + 2 * score_err) * mean_abs + u * std::fabs(o) + sk * std::ldexp(1.0, -25) * vmax + 1e-7;
        }
        r.lse[row] = mx + std::log(l);
        r.lse_tol[row] = 2 * score_err + 8 * fp32_u * (std::fabs(mx) + std::log(l)) + sk * 4 * fp32_u + 1e-6;
      }
    }
  };
  parallel_for(nb * s.hq, [&](size_t first, size_t last) {
    std::vector<double> score, mag;
    for (size_t i = first; i < last; ++i) pair(i / s.hq, int(i % s.hq), score, mag);
  });
  return r;
}

struct Gradients {
  std::vector<double> dq, dk, dv;              // as the host tensors above
  std::vector<double> dq_tol, dk_tol, dv_tol;  // allowed |device - reference| per element
  std::vector<double> dsinks, dsinks_tol;      // with sinks: dz_h = -sum over head h's rows of exp(z_h - LSE) delta
};

// dQ, dK and dV of the loss sum(O * dO) (dO: `dout`, values exactly as the device holds them), with
//   P = softmax(scale S) row by row, dV = P^T dO, dP = dO V^T, delta = rowsum(dO * O), dS = P * (dP - delta),
//   dQ = scale dS K, dK = scale dS^T Q,
// and the tolerance of a backward that recomputes P in fp32 from the forward's LSE (within that forward's tolerance),
// takes delta from the forward's rounded O, rounds P and dS to the element type (unit roundoff u) for the MFMAs and
// accumulates in fp32: with e the relative error of a recomputed p (scores and LSE),
//   - dV: (2u + 2e) sum_i p |dO|;
//   - dS: p ((2u + 2e) |dP - delta| + the error of delta (u |O| + O's tolerance, times |dO|, summed)), and f16's
//     subnormal dS and P (2^-25 each);
//   - dQ, dK: scale times the sum of dS's error times |K| or |Q|, plus fp32 sums (2^-22 of sum |dS| |K|).
inline Gradients backward(const Shape& s, const std::vector<float>& q, const std::vector<float>& k,
                          const std::vector<float>& v, const std::vector<float>& dout, bool bf16) {
  const Result fwd = forward(s, q, k, v, bf16);
  const int d = s.d, dv = s.vd(), ratio = s.hq / s.hkv;
  const double scale = s.softmax_scale(), u = unit_roundoff(bf16), fp32_u = std::ldexp(1.0, -24),
               sub = std::ldexp(1.0, -25);
  Gradients g;
  const long tq = s.total_q(), tk = s.total_k();
  g.dq.assign(tq * s.hq * d, 0), g.dq_tol.assign(g.dq.size(), 0);
  g.dk.assign(tk * s.hkv * d, 0), g.dk_tol.assign(g.dk.size(), 0);
  g.dv.assign(tk * s.hkv * dv, 0), g.dv_tol.assign(g.dv.size(), 0);
  if (!s.sinks.empty()) g.dsinks.assign(s.hq, 0), g.dsinks_tol.assign(s.hq, 0);
  long start_q = 0, start_k = 0;
  for (size_t b = 0; b < s.len_q.size(); ++b) {
    const long sq = s.len_q[b], sk = s.len_k[b];
    for (int h = 0; h < s.hq; ++h) {
      const int hk = h / ratio;
      for (long i = 0; i < sq; ++i) {
        const long row = (start_q + i) * s.hq + h;
        if (std::isinf(fwd.lse[row])) continue;  // sees no key: every gradient term is 0
        const float* qi = &q[row * d];
        const float* doi = &dout[row * dv];
        const double* oi = &fwd.o[row * dv];
        double delta = 0, delta_err = 0, mag_max = 0;
        for (int x = 0; x < dv; ++x) {
          delta += doi[x] * oi[x];
          delta_err += std::fabs(doi[x]) * (2 * u * std::fabs(oi[x]) + fwd.o_tol[row * dv + x]);
        }
        delta_err += 8 * fp32_u * dv * std::fabs(delta);
        if (!s.sinks.empty()) {
          const double p_sink = std::exp(s.sinks[h] - fwd.lse[row]);
          g.dsinks[h] -= p_sink * delta;
          g.dsinks_tol[h] += p_sink * (delta_err + std::fabs(delta) * (2 * fwd.lse_tol[row] + 16 * fp32_u));
        }
        for (long j = 0; j < sk; ++j) {
          if (!visible(s, i, j, sq, sk)) continue;
          const float* kj = &k[((start_k + j) * s.hkv + hk) * d];
          double m = 0;
          for (int x = 0; x < d; ++x) m += std::fabs(double(qi[x]) * kj[x]);
          mag_max = std::max(mag_max, m * scale + std::fabs(s.bias(b, h, i, j, sq, sk)));
        }
        const double e = 2 * 16 * fp32_u * mag_max + fwd.lse_tol[row];  // relative error of a recomputed p
        for (long j = 0; j < sk; ++j) {
          if (!visible(s, i, j, sq, sk)) continue;
          const long col = (start_k + j) * s.hkv + hk;
          const float* kj = &k[col * d];
          const float* vj = &v[col * dv];
          double dot = 0, dp = 0, dp_mag = 0;
          for (int x = 0; x < d; ++x) dot += double(qi[x]) * kj[x];
          for (int x = 0; x < dv; ++x) dp += double(doi[x]) * vj[x], dp_mag += std::fabs(double(doi[x]) * vj[x]);
          const double logit = s.logit(dot) + s.bias(b, h, i, j, sq, sk), p = std::exp(logit - fwd.lse[row]),
                       slope = s.logit_slope(dot), drop = s.dropped(b, h, i, j);
          dp *= drop, dp_mag *= drop;  // dropout: dP of the dropped P, whose element is p drop
          const double ds_logit = p * (dp - delta), ds = ds_logit * slope;
          double ds_err = p * ((2 * u + 2 * e) * std::fabs(dp - delta) + delta_err + 8 * fp32_u * dp_mag) + sub;
          if (s.softcap > 0) {
            // The device finds tanh again from p and the LSE: off by p's error and fp32 rounding of both, over the cap.
            const double t_err = (2 * e + 16 * fp32_u * (std::fabs(fwd.lse[row]) + std::fabs(logit) + 1)) / s.softcap;
            ds_err = ds_err * slope + std::fabs(ds_logit) * 2 * t_err;
          }
          for (int x = 0; x < dv; ++x) {
            g.dv[col * dv + x] += p * drop * doi[x];
            g.dv_tol[col * dv + x] += ((2 * u + 2 * e) * p + sub) * drop * std::fabs(doi[x]);
          }
          for (int x = 0; x < d; ++x) {
            g.dq[row * d + x] += scale * ds * kj[x];
            g.dq_tol[row * d + x] += scale * (ds_err + 4 * fp32_u * std::fabs(ds)) * std::fabs(kj[x]);
            g.dk[col * d + x] += scale * ds * qi[x];
            g.dk_tol[col * d + x] += scale * (ds_err + 4 * fp32_u * std::fabs(ds)) * std::fabs(qi[x]);
          }
        }
      }
    }
    start_q += sq, start_k += sk;
  }
  // The output's own rounding to the element type, and a floor for sums that cancel.
  for (auto [val, tol] : {std::pair{&g.dq, &g.dq_tol}, {&g.dk, &g.dk_tol}, {&g.dv, &g.dv_tol}, {&g.dsinks, &g.dsinks_tol}})
    for (size_t n = 0; n < val->size(); ++n) (*tol)[n] += u * std::fabs((*val)[n]) + 1e-6;
  return g;
}

}  // namespace attn_ref
