// hk::attention_forward: O = softmax(scale * Q K^T + mask) V and its log-sum-exp, on the current HIP device, for
// gfx942 and gfx950, with flash-attention's conventions:
//   - Q is (B, Sq, Hq, D), K is (B, Sk, Hkv, D), V is (B, Sk, Hkv, DV), O is (B, Sq, Hq, DV): D = DV = 64, 128, 192
//     or 256, or D = 192 with DV = 128 (DeepSeek-V3's MLA); each tensor has its own batch, row (sequence)
//     and head strides in elements (the last dimension is contiguous), so BSHD and BHSD layouts both work.
//   - query head h reads KV head h / (Hq / Hkv) (MHA: Hq = Hkv; GQA/MQA: any Hq that is a multiple of Hkv).
//   - causal is aligned bottom-right: query i sees keys j <= i + Sk - Sq. A window (left, right) keeps keys in
//     [i + Sk - Sq - left, i + Sk - Sq + right]; -1 leaves that side unbounded; causal is right = 0.
//   - softcap > 0 caps the scaled scores before the softmax, as flash-attention's softcap: x -> softcap tanh(x /
//     softcap); the backward differentiates through it.
//   - ALiBi (flash-attention's alibi_slopes): -slope(b, h) |i + Sk - Sq - j| is added to the scaled score of query i
//     and key j (after softcapping: the capped logit takes it; the two together at head dims 192 and 256 only). The
//     LSE includes the bias (for causal masks flash-attention's drops its per-row constant; O is the same). The
//     slopes get no gradient.
//   - sinks: one logit z_h per query head joins every row's softmax denominator as a key with no value (gpt-oss):
//     O = sum_j e^(x_j) v_j / (e^(z_h) + sum_j e^(x_j)); the LSE includes it; the backward also gives dz (dsinks).
//   - LSE is fp32, the natural log of the row's softmax denominator (scores scaled): (B, Hq, Sq), contiguous. A row
//     that sees no key has LSE -inf and O = 0.
//   - varlen: with cu_seqlens_q / cu_seqlens_k (int32 device arrays of B + 1 offsets, starting at 0, non-decreasing)
//     Q, K, V and O are packed (total, H, D): sequence b is rows cu_seqlens[b] .. cu_seqlens[b + 1] - 1 and the batch
//     strides are not used; LSE is (Hq, total_q), contiguous.
// Every argument is validated first: a problem the kernel cannot run returns an error and launches nothing.
//
// hk::attention_backward: dQ, dK and dV of a loss L given dO = dL/dO, for the same problems (shapes, layouts, masks,
// varlen), from Q, K, V, the forward's O and LSE. dQ, dK, dV are written as the element type, each summed in fp32 by
// one wave in a fixed order: deterministic (bit-identical run after run; no atomics). A row that sees no key (LSE
// -inf) contributes nothing: its dQ is 0, and keys no query sees get dK = dV = 0. The backward needs a workspace of
// fp32 delta = rowsum(dO * O), laid out like LSE (B, Hq, Sq) or (Hq, total_q) for varlen:
// attention_backward_workspace_bytes(p) bytes of device memory. Pass it (workspace, workspace_bytes) to keep the call
// asynchronous; without one the call allocates its own and waits for the stream to finish before freeing it.
#pragma once
#include "common/api.h"

namespace hk {

// What the forward and the backward problems share: the shape, Q, K and V, the masks, the varlen offsets and the
// stream.
struct AttentionInputs {
  // Strides in elements. Zero means that of a contiguous (B, S, H, D) tensor (packed (total, H, D) for varlen).
  struct Strides {
    long batch = 0, row = 0, head = 0;
  };
  int batch = 0;                     // B: sequences (varlen: cu_seqlens hold B + 1 entries)
  int seqlen_q = 0, seqlen_k = 0;    // Sq, Sk (varlen: the longest sequences, as flash_attn_varlen_func's max_seqlen;
                                     // 0 = found from cu_seqlens)
  int heads_q = 0, heads_kv = 0;     // Hq, a multiple of Hkv
  int head_dim = 0;                  // D, of Q and K: 64, 128, 192 or 256
  int head_dim_v = 0;                // DV, of V and O: 0 = D; else D, or 128 with D = 192 (DeepSeek-V3)
  const void* q = nullptr;
  Strides q_strides;
  const void* k = nullptr;
  Strides k_strides;
  const void* v = nullptr;
  Strides v_strides;
  scalar_type type = scalar_type::bf16;          // of Q, K, V and O (the backward: of every tensor but LSE): bf16 or f16;
                                                 // the forward also fp8_e4m3 (AttentionProblem: O bf16)
  float softmax_scale = 0.f;         // > 0; 0 = 1 / sqrt(D)
  float softcap = 0.f;               // > 0: each scaled score x becomes softcap * tanh(x / softcap) (Gemma 2); 0 = off
  const float* sinks = nullptr;      // (Hq) fp32 device array: attention sinks (gpt-oss), or null
  const float* alibi_slopes = nullptr;  // fp32 device array: ALiBi slopes of (b, h) at b * alibi_batch_stride + h, or null
  long alibi_batch_stride = 0;          // 0: one slope per head, (Hq); else (B, Hq) rows this far apart (>= Hq)
  // Dropout (flash-attention's dropout_p): 0 <= p < 1; P's element (b, h, i, j) is dropped with probability p, the kept
  // ones scaled by 1 / (1 - p) in P V (the softmax's denominator and the LSE take the whole P). The mask is hk's
  // dropout stream (include/hk/ops/philox.h) at row i, column j of stream dropout_offset + b * heads_q + h under
  // dropout_seed: a function of the problem alone (not of tiles, launches or arch), which the backward regenerates.
  // Flash-attention's 8-bit decisions: an element is kept when its 8 random bits are <= floor(255 (1 - p)), so with
  // probability within 1/256 of 1 - p; p at most 1 - 2^-8.
  // Alone or with softcap and ALiBi, in any combination, at every head dim.
  float dropout_p = 0.f;
  uint64_t dropout_seed = 0, dropout_offset = 0;
  bool causal = false;
  int window_left = -1, window_right = -1;  // -1 = unbounded; causal needs window_right -1 or 0
  const int* cu_seqlens_q = nullptr;  // varlen: both or neither (device memory, read by the validation)
  const int* cu_seqlens_k = nullptr;
  hipStream_t stream = nullptr;
};

struct AttentionProblem : AttentionInputs {
  void* o = nullptr;
  Strides o_strides;
  float* lse = nullptr;              // may be null: not written
  // The FP8 forward: type fp8_e4m3 (the arch's e4m3: FNUZ on gfx942, OCP e4m3fn on gfx950; head dims 64 and 128, with
  // softcap, no ALiBi or dropout) takes Q, K and V as codes, each value its code's times the descale, and writes O in
  // bf16. The descales are fp32 device arrays (null: 1) of one entry, or per (batch, KV head) as flash-attention 3's
  // (B, Hkv) with descale_per_batch and descale_per_head ((B) or (Hkv) with one of them), the same shape for all
  // three: q_descale k_descale scales the scores (softmax_scale applies on top; the LSE is that of the scaled true
  // scores), v_descale the output. Their values are not read by the validation (it stays asynchronous).
  const float* q_descale = nullptr;
  const float* k_descale = nullptr;
  const float* v_descale = nullptr;
  bool descale_per_batch = false, descale_per_head = false;
  // The FP8 forward's workspace (V decoded into bf16 before the kernel): at least attention_forward_workspace_bytes(p)
  // bytes of device memory, 16-byte aligned. Without one the call allocates its own and waits for the stream to
  // finish before freeing it. Other types need none.
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

// Validates `p` and launches the forward pass on p.stream. Asynchronous like any kernel launch, except that a varlen
// problem's cu_seqlens are read back for validation first (and an FP8 problem without a workspace waits, see above).
Status attention_forward(const AttentionProblem& p);

// The workspace the forward needs: 0, or for fp8 2 bytes per element of V (B Sk Hkv DV; for varlen it reads
// cu_seqlens_k's last entry).
size_t attention_forward_workspace_bytes(const AttentionProblem& p);

struct AttentionBackwardProblem : AttentionInputs {
  const void* o = nullptr;     // the forward's output
  Strides o_strides;
  const void* dout = nullptr;  // dO, shaped like O
  Strides do_strides;
  const float* lse = nullptr;  // the forward's LSE (required)
  void* dq = nullptr;          // shaped like Q
  Strides dq_strides;
  void* dk = nullptr;          // shaped like K
  Strides dk_strides;
  void* dv = nullptr;          // shaped like V
  Strides dv_strides;
  float* dsinks = nullptr;     // with sinks: their gradient (Hq fp32), summed in a fixed order; may be null
  void* workspace = nullptr;   // optional: device memory of at least attention_backward_workspace_bytes(p) bytes
  size_t workspace_bytes = 0;
};

// Validates `p` (as the forward, plus dO, dQ, dK, dV, LSE and the workspace; no output may overlap another tensor)
// and launches the backward on p.stream.
Status attention_backward(const AttentionBackwardProblem& p);

// For tools that report each kernel of the backward (hk-run): the backward's kernels in `steps` only (bit 0: delta,
// bit 1: dK and dV, bit 2: dQ, bit 3: the sinks' gradient), each step reading what the earlier ones left in the workspace, which must be given.
// attention_backward(p) is the same as the four steps in order.
Status attention_backward_steps(const AttentionBackwardProblem& p, unsigned steps);

// The workspace the backward needs: 4 bytes per (query row, query head); for varlen it reads cu_seqlens_q's last entry.
size_t attention_backward_workspace_bytes(const AttentionBackwardProblem& p);

}  // namespace hk
