// The float64 host reference of attention forward, shared by attention_test and hk-run: O and LSE of every query
// row, and how far a correct device result may be from them. Independent of the kernel: plain softmax over the
// visible keys in double, no online rescaling.
//
// Host tensors are packed by sequence: element (sequence b, row i, head h, x) of Q is q[((start_b + i) * Hq + h) * D
// + x], start_b the sum of the earlier sequences' lengths (K and V alike with Hkv); O likewise; LSE is [(start_b + i) * Hq + h].
#pragma once
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace attn_ref {

struct Shape {
  std::vector<int> len_q, len_k;  // one per sequence (padded batches: all the same)
  int hq = 1, hkv = 1, d = 64;
  bool causal = false;
  int left = -1, right = -1;      // window; -1 = unbounded
  double scale = 0;               // 0 = 1 / sqrt(d)
  double softmax_scale() const { return scale > 0 ? scale : 1.0 / std::sqrt(double(d)); }
  long total_q() const { long t = 0; for (int n : len_q) t += n; return t; }
  long total_k() const { long t = 0; for (int n : len_k) t += n; return t; }
};

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
inline Result forward(const Shape& s, const std::vector<float>& q, const std::vector<float>& k,
                      const std::vector<float>& v, bool bf16) {
  const int d = s.d, ratio = s.hq / s.hkv;
  const double scale = s.softmax_scale(), u = unit_roundoff(bf16), fp32_u = std::ldexp(1.0, -24);
  Result r;
  const long tq = s.total_q();
  r.o.assign(tq * s.hq * d, 0), r.o_tol.assign(r.o.size(), 0);
  r.lse.assign(tq * s.hq, -std::numeric_limits<double>::infinity()), r.lse_tol.assign(r.lse.size(), 0);
  long start_q = 0, start_k = 0;
  std::vector<double> score, mag;
  for (size_t b = 0; b < s.len_q.size(); ++b) {
    const long sq = s.len_q[b], sk = s.len_k[b];
    for (int h = 0; h < s.hq; ++h) {
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
          score[j] = dot * scale, mag[j] = m * scale;
          mx = std::max(mx, score[j]), mag_max = std::max(mag_max, m * scale);
        }
        const long row = (start_q + i) * s.hq + h;
        if (mx == -std::numeric_limits<double>::infinity()) continue;  // no visible key: O 0, LSE -inf, exactly
        double l = 0, vmax = 0;
        std::vector<double> acc(d, 0), acc_abs(d, 0);
        for (long j = 0; j < sk; ++j) {
          if (score[j] == -std::numeric_limits<double>::infinity()) continue;
          const double p = std::exp(score[j] - mx);
          const float* vj = &v[((start_k + j) * s.hkv + hk) * d];
          l += p;
          for (int x = 0; x < d; ++x) acc[x] += p * vj[x], acc_abs[x] += p * std::fabs(vj[x]), vmax = std::max(vmax, double(std::fabs(vj[x])));
        }
        const double score_err = 16 * fp32_u * mag_max;  // natural-log units
        for (int x = 0; x < d; ++x) {
          const double o = acc[x] / l, mean_abs = acc_abs[x] / l;
          r.o[row * d + x] = o;
          r.o_tol[row * d + x] = (2 * u + 2 * score_err) * mean_abs + u * std::fabs(o) + sk * std::ldexp(1.0, -25) * vmax + 1e-7;
        }
        r.lse[row] = mx + std::log(l);
        r.lse_tol[row] = 2 * score_err + 8 * fp32_u * (std::fabs(mx) + std::log(l)) + sk * 4 * fp32_u + 1e-6;
      }
    }
    start_q += sq, start_k += sk;
  }
  return r;
}

}  // namespace attn_ref
