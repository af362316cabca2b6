// The decode append: flash_attn_with_kvcache's new keys and values written into the KV cache in place (key
// cache_seqlens[b] + i of sequence b, through the block table when paged), the keys and Q optionally rotated first,
// launched on the stream before the decode kernel (attention_decode.h), which then reads seqlens[b] + seqlen_new keys.
//
// The work is a few rows per sequence (seqlen_new keys and values, Sq query rows): nothing to schedule beyond one
// workgroup per row. Workgroup r < B * seqlen_new takes new row (b, i) = (r / seqlen_new, r % seqlen_new): its K row of
// every KV head is rotated (rotary_pairs: the rotation hk::rotary uses, written once in rotary_kernel.h) or copied, its
// V row copied, 16 bytes per access where the row allows; the rest of the grid (with rotary) takes Q's rows (b, i),
// rotated from q into the workspace's copy that the decode kernel reads. The angles of the row's position (keys:
// cache_seqlens[b] + i; queries: the same when causal or windowed, else cache_seqlens[b] for every row, flash-attention's
// rule) are read from the tables into LDS once per workgroup. The host has checked that no two written rows meet and
// that nothing written is read by this kernel, so the rows are independent.
#pragma once
#include "attention_decode.h"
#include "rotary/rotary_kernel.h"

namespace hk::kernels {

struct DecodeAppendArgs {
  const void *k_new, *v_new;               // (B, seqlen_new, Hkv, D) in the caches' type
  long kn_bs, kn_rs, kn_hs, vn_bs, vn_rs, vn_hs;
  const void* q_in;                        // rotary: Q as given (DecodeArgs.q is its rotated copy)
  long qi_bs, qi_rs, qi_hs;
  const void *cos, *sin;                   // rotary tables (null: no rotary), fp32 or T
  bool table_fp32, interleaved, q_each_row;  // q_each_row: query i at cache_seqlens + i (causal or windowed)
  int rotary_dim;
  long table_stride;
};

inline constexpr int decode_append_threads = 256;

// T: Q's type; KV: the caches' (T, or fp8 codes copied as bytes). P pairs per rotation item, as 16-byte accesses when
// Vec (rotary_dim / 2 a multiple of P = 16 / sizeof(T); every row starts on 16 bytes).
template <class T, class KV, int D, int P, bool Vec>
__global__ __launch_bounds__(decode_append_threads) void attention_decode_append(DecodeArgs p, DecodeAppendArgs a) {
  __shared__ __attribute__((aligned(16))) float cs[D / 2], ss[D / 2];
  const int kv_rows = p.batch * p.seqlen_new;
  int id = int(blockIdx.x);
  const bool is_q = id >= kv_rows;
  if (is_q) id -= kv_rows;
  const int per = is_q ? p.seqlen_q : p.seqlen_new, b = id / per, i = id % per;
  const int base = p.seqlens[b], half = a.cos ? a.rotary_dim / 2 : 0;
  if (half) {
    const long row = (long(base) + (is_q && !a.q_each_row ? 0 : i)) * a.table_stride;
    for (int j = int(threadIdx.x); j < half; j += decode_append_threads) {
      cs[j] = a.table_fp32 ? static_cast<const float*>(a.cos)[row + j] : float(static_cast<const T*>(a.cos)[row + j]);
      ss[j] = a.table_fp32 ? static_cast<const float*>(a.sin)[row + j] : float(static_cast<const T*>(a.sin)[row + j]);
    }
    barrier();
  }
  // Rotates (or, without tables, copies) the rows of `heads` heads from `in` to `out` (head strides ih, oh).
  auto place = [&](const KV* in, long ih, KV* out, long oh, int heads, bool rotate) __attribute__((always_inline)) {
    if constexpr (std::is_same_v<KV, T>) {
      if (rotate) {
        for_items(1, heads, half / P, [&](int, int h, int item) {
          rotate_pairs<T, P, Vec>(in + h * ih, out + h * oh, item * P, half, a.interleaved, cs + item * P, ss + item * P);
        });
        for_items(1, heads, D - 2 * half, [&](int, int h, int e) { out[h * oh + 2 * half + e] = in[h * ih + 2 * half + e]; });
        return;
      }
    }
    constexpr int C = D * int(sizeof(KV)) / 16;  // 16-byte chunks of a row
    for_items(1, heads, C, [&](int, int h, int c) {
      reinterpret_cast<uint4*>(out + h * oh)[c] = reinterpret_cast<const uint4*>(in + h * ih)[c];
    });
  };
  if (is_q) {
    const T* in = static_cast<const T*>(a.q_in) + b * a.qi_bs + i * a.qi_rs;
    T* out = static_cast<T*>(const_cast<void*>(p.q)) + b * p.q_bs + i * p.q_rs;
    if constexpr (std::is_same_v<KV, T>) place(in, a.qi_hs, out, p.q_hs, p.heads_q, true);
    return;
  }
  const unsigned j = unsigned(base + i);
  const long page = p.block_table ? p.block_table[long(b) * p.bt_stride + j / unsigned(p.page_size)] : b;
  const long row = p.block_table ? j % unsigned(p.page_size) : j;
  KV* kc = static_cast<KV*>(const_cast<void*>(p.k)) + page * p.k_ps + row * p.k_rs;
  KV* vc = static_cast<KV*>(const_cast<void*>(p.v)) + page * p.v_ps + row * p.v_rs;
  place(static_cast<const KV*>(a.k_new) + b * a.kn_bs + i * a.kn_rs, a.kn_hs, kc, p.k_hs, p.heads_kv, half > 0);
  place(static_cast<const KV*>(a.v_new) + b * a.vn_bs + i * a.vn_rs, a.vn_hs, vc, p.v_hs, p.heads_kv, false);
}

}  // namespace hk::kernels
