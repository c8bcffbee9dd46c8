// Causal multi-head self-attention (GPT-2): qkv = x W_qkvᵀ + b_qkv (one linear, 3d outputs:
// q, k, v, each split into `heads` heads of d/heads columns); per sample and head,
// P = softmax(q kᵀ / √dh) over the causal positions s ≤ t (the rest of each row is 0),
// ctx = P v written back into that head's columns; y = ctx W_outᵀ + b_out.
// x, y: (batch·seq)×d row-major. W_qkv is 3d×d, W_out is d×d (nn.Linear layout).
// Fast pass: the projections on linear.hpp (SGEMM), the per-(sample, head) products as
// strided SGEMMs straight on the qkv buffer (no copies), the softmax with fast_exp. The causal
// products are tiled: query rows go in tiles of kAttentionTile, and tile [r0, r0 + m) is
// multiplied only against keys [0, r0 + m) (and, in the backward, key tile [j0, j0 + w) only
// against queries [j0, seq)), so the blocks above the diagonal tiles are never computed; only the
// diagonal tiles' upper triangles are computed and masked (about (seq + tile)/(2·seq) of the
// full square: 62 % at seq 128). The softmax and its backward visit positions ≤ t only. The
// (sample, head) pairs run on layer_threads() threads with single-threaded BLAS each (the
// projections use the BLAS threads); results do not depend on the thread count. A
// double-precision naive reference is beside.
#pragma once

#include <cstddef>

namespace dsgd {

// Rows per query tile (and columns per key tile) of the causal products.
constexpr size_t kAttentionTile = 32;

struct AttentionShape {
  size_t batch = 0;
  size_t seq = 0;
  size_t d = 0;  // model width; heads divides it
  size_t heads = 0;
};

struct AttentionParams {
  const float* w_qkv;  // 3d×d
  const float* b_qkv;  // 3d
  const float* w_out;  // d×d
  const float* b_out;  // d
};

struct AttentionGrads {
  float* w_qkv;
  float* b_qkv;
  float* w_out;
  float* b_out;
};

// What forward saves for backward (caller-owned).
struct AttentionCache {
  float* qkv;    // (batch·seq)×3d
  float* probs;  // batch×heads×seq×seq: row t holds P[t, 0..t], then zeros to the end of t's diagonal
                 // tile; the entries past it are neither written nor read
  float* ctx;    // (batch·seq)×d
};

// Backward scratch (caller-owned).
struct AttentionScratch {
  float* dctx;    // (batch·seq)×d
  float* dqkv;    // (batch·seq)×3d
  float* dprobs;  // batch×heads×seq×seq (one seq×seq block per (sample, head): they run in parallel;
                  // written and read on the same block-triangle as probs)
};

void attention_forward(const AttentionShape& s, const AttentionParams& p, const float* x, const AttentionCache& c,
                       float* y);
// Gradients overwritten; dx overwritten.
void attention_backward(const AttentionShape& s, const AttentionParams& p, const float* x, const AttentionCache& c,
                        const float* dy, const AttentionScratch& scratch, float* dx, const AttentionGrads& g);

// Naive references: everything recomputed from x in double (no cache).
void attention_forward_naive(const AttentionShape& s, const AttentionParams& p, const float* x, float* y);
void attention_backward_naive(const AttentionShape& s, const AttentionParams& p, const float* x, const float* dy,
                              float* dx, const AttentionGrads& g);

}  // namespace dsgd
