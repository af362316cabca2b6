// hk::attention_decode: attention of a few new queries per sequence over a KV cache, flash-attention's
// flash_attn_with_kvcache, on the current HIP device (gfx942, gfx950):
//   - Q is (B, Sq, Hq, D), Sq from 1 to 16 (speculative decoding), D 64 or 128; O is like Q; LSE (optional) is fp32
//     (B, Hq, Sq), contiguous, the natural log of each row's softmax denominator (-inf and O = 0 for a row that sees
//     no key).
//   - the caches (bf16 / f16 as Q, or e4m3 in the arch's format: FNUZ on gfx942, OCP e4m3fn on gfx950, with fp32
//     per-tensor or per-KV-head descales) are contiguous (B, S_max, Hkv, D) (block_table null; cache_rows = S_max) or paged (num_blocks,
//     page_size, Hkv, D) (cache_rows = page_size, any size from 1): key j of sequence b is row j % page_size of page
//     block_table[b * max_blocks + j / page_size]. K and V have their own strides (page or batch, row, head).
//   - cache_seqlens (B int32, device) keys per sequence, at most the capacity (S_max, or max_blocks * page_size).
//   - query head h reads KV head h / (Hq / Hkv); causal is bottom-right (query i sees keys j <= i + seqlen - Sq),
//     windows (left, right) as hk::attention_forward's.
//   - appending (k_new / v_new, (B, seqlen_new, Hkv, D) in the caches' type): row i of sequence b is written into the
//     caches in place as key cache_seqlens[b] + i (through the block table when paged) before the attention, which
//     then sees cache_seqlens[b] + seqlen_new keys; cache_seqlens itself is not changed (flash-attention's rule).
//     With rotary tables (rotary_cos / rotary_sin: rotary_rows x rotary_dim / 2, Q's type or fp32) the new keys are
//     rotated at positions cache_seqlens[b] + i, and Q (into a copy in the workspace; q itself is not written) at
//     cache_seqlens[b] + i when causal or windowed, else every query at cache_seqlens[b]; pairs (i, i + rotary_dim / 2)
//     or, interleaved, (2 i, 2 i + 1), as hk::rotary's. Rotary needs a cache of Q's type (an fp8 cache takes k_new /
//     v_new as codes, copied).
// Every argument is validated first (the block table and seqlens are read back, which waits for the stream): a
// problem the kernel cannot run returns an error and launches nothing. Long caches with few (sequence, KV head) pairs
// are split over workgroups and combined in a fixed order (deterministic); the partials (and a rotated Q) need a workspace of
// attention_decode_workspace_bytes(p) bytes: pass one to keep the call asynchronous after the checks, or the call
// allocates its own and waits for the stream before freeing it. With rotary the workspace starts with the rotated Q,
// packed (B, Sq, Hq, D) in Q's type.
#pragma once
#include "attention/attention.h"

namespace hk {

struct AttentionDecodeProblem {
  using Strides = AttentionInputs::Strides;  // in elements; zero: contiguous
  int batch = 0, seqlen_q = 0, heads_q = 0, heads_kv = 0, head_dim = 0;
  const void* q = nullptr;
  Strides q_strides;
  const void* k_cache = nullptr;  // (B, S_max, Hkv, D) or (num_blocks, page_size, Hkv, D)
  Strides k_strides;              // .batch: between sequences (contiguous) or pages (paged)
  const void* v_cache = nullptr;
  Strides v_strides;
  int cache_rows = 0;             // S_max (contiguous) or page_size (paged)
  int num_blocks = 0;             // paged: pages in each cache
  const int* block_table = nullptr;  // paged: (B, max_blocks) int32 device array; null: contiguous caches
  int max_blocks = 0;
  const int* cache_seqlens = nullptr;  // (B) int32 device array, required
  scalar_type type = scalar_type::bf16;     // Q and O: bf16 or f16
  scalar_type kv_type = scalar_type::bf16;  // the caches: the same as type, or fp8_e4m3 (the arch's e4m3)
  // FP8 caches: key / value = the code's value times its descale; fp32 device arrays of 1 entry (per tensor) or
  // heads_kv entries (*_per_head), positive and finite, or null (1). Refused with other caches.
  const float* k_descale = nullptr;
  const float* v_descale = nullptr;
  // per_batch: (B, Hkv) entries with per_head (flash-attention 3's shape), (B) without.
  bool k_descale_per_head = false, v_descale_per_head = false;
  bool k_descale_per_batch = false, v_descale_per_batch = false;
  // Appending (both or neither; seqlen_new >= 1 with them): written into the caches, read before anything is written.
  const void* k_new = nullptr;
  Strides k_new_strides;
  const void* v_new = nullptr;
  Strides v_new_strides;
  int seqlen_new = 0;
  // Rotary of Q and the new keys (with k_new only): cos / sin tables of rotary_rows rows (at least the largest
  // position used plus one) of rotary_dim / 2 entries (rotary_stride apart; 0: packed); rotary_dim even, 2 .. D.
  const void* rotary_cos = nullptr;
  const void* rotary_sin = nullptr;
  scalar_type rotary_type = scalar_type::fp32;  // fp32 or Q's type
  int rotary_dim = 0, rotary_rows = 0;
  long rotary_stride = 0;
  bool rotary_interleaved = false;
  float softmax_scale = 0.f;  // 0 = 1 / sqrt(D)
  bool causal = false;
  int window_left = -1, window_right = -1;
  void* o = nullptr;
  Strides o_strides;
  float* lse = nullptr;  // may be null
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  hipStream_t stream = nullptr;
};

Status attention_decode(const AttentionDecodeProblem& p);

// The workspace the problem needs: the split partials (when its keys are split) and the rotated copy of Q (with
// rotary); 0 when neither. Needs the current device.
size_t attention_decode_workspace_bytes(const AttentionDecodeProblem& p);

}  // namespace hk
