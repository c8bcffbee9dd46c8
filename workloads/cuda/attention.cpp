// See attention.hpp. Row-major shapes of one (sample, head) pair, as the CPU pass:
//   q, k, v: S×dh with row stride 3d (inside qkv);  P, dP: S×S;  ctx, dctx: S×dh, row stride d.
#include "workloads/cuda/attention.hpp"

#include <cmath>

#include "workloads/cuda/gemm.hpp"
#include "workloads/cuda/linear.hpp"
#include "workloads/cuda/softmax.hpp"

namespace dsgd {

void attention_forward_cuda(const GpuContext& g, const AttentionShape& s, const AttentionParams& p, const float* x,
                            const AttentionCache& c, float* y) {
  const size_t S = s.seq, D = s.d, H = s.heads, dh = D / H, N = s.batch * S;
  const int iS = int(S), idh = int(dh), ld3 = int(3 * D), iD = int(D), iH = int(H);
  const float scale = 1.0f / std::sqrt(float(dh));
  linear_forward_cuda(g, LinearShape{N, D, 3 * D}, x, p.w_qkv, p.b_qkv, c.qkv);
  for (size_t b = 0; b < s.batch; ++b) {
    const float* q = c.qkv + b * S * 3 * D;
    float* P = c.probs + b * H * S * S;
    // P_h = scale · q_h k_hᵀ.
    gemm_strided_batched(g, GemmShape{false, true, iS, iS, idh, ld3, ld3, iS}, scale, q, int64_t(dh), q + D,
                         int64_t(dh), 0.0f, P, int64_t(S * S), iH);
  }
  causal_softmax_forward_cuda(c.probs, s.batch * H, S, g.stream());
  for (size_t b = 0; b < s.batch; ++b) {
    const float* v = c.qkv + b * S * 3 * D + 2 * D;
    // ctx_h = P_h v_h.
    gemm_strided_batched(g, GemmShape{false, false, iS, idh, iS, iS, ld3, iD}, 1.0f, c.probs + b * H * S * S,
                         int64_t(S * S), v, int64_t(dh), 0.0f, c.ctx + b * S * D, int64_t(dh), iH);
  }
  linear_forward_cuda(g, LinearShape{N, D, D}, c.ctx, p.w_out, p.b_out, y);
}

void attention_backward_cuda(const GpuContext& g, const AttentionShape& s, const AttentionParams& p, const float* x,
                             const AttentionCache& c, const float* dy, const AttentionScratch& scratch, float* dx,
                             const AttentionGrads& gr) {
  const size_t S = s.seq, D = s.d, H = s.heads, dh = D / H, N = s.batch * S;
  const int iS = int(S), idh = int(dh), ld3 = int(3 * D), iD = int(D), iH = int(H);
  const float scale = 1.0f / std::sqrt(float(dh));
  linear_backward_cuda(g, LinearShape{N, D, D}, c.ctx, p.w_out, dy, scratch.dctx, gr.w_out, gr.b_out);
  for (size_t b = 0; b < s.batch; ++b) {
    const size_t off = b * S * 3 * D;
    const float* P = c.probs + b * H * S * S;
    const float* dctx = scratch.dctx + b * S * D;
    float* dP = scratch.dprobs + b * H * S * S;
    // dV_h = P_hᵀ dctx_h;  dP_h = dctx_h V_hᵀ.
    gemm_strided_batched(g, GemmShape{true, false, iS, idh, iS, iS, iD, ld3}, 1.0f, P, int64_t(S * S), dctx,
                         int64_t(dh), 0.0f, scratch.dqkv + off + 2 * D, int64_t(dh), iH);
    gemm_strided_batched(g, GemmShape{false, true, iS, iS, idh, iD, ld3, iS}, 1.0f, dctx, int64_t(dh),
                         c.qkv + off + 2 * D, int64_t(dh), 0.0f, dP, int64_t(S * S), iH);
  }
  // dScores = P ⊙ (dP − Σ P dP) · scale, the masked half 0.
  causal_softmax_backward_cuda(c.probs, scratch.dprobs, s.batch * H, S, scale, g.stream());
  for (size_t b = 0; b < s.batch; ++b) {
    const size_t off = b * S * 3 * D;
    const float* dP = scratch.dprobs + b * H * S * S;
    const float* q = c.qkv + off;
    // dQ_h = dScores_h K_h;  dK_h = dScores_hᵀ Q_h.
    gemm_strided_batched(g, GemmShape{false, false, iS, idh, iS, iS, ld3, ld3}, 1.0f, dP, int64_t(S * S), q + D,
                         int64_t(dh), 0.0f, scratch.dqkv + off, int64_t(dh), iH);
    gemm_strided_batched(g, GemmShape{true, false, iS, idh, iS, iS, ld3, ld3}, 1.0f, dP, int64_t(S * S), q, int64_t(dh),
                         0.0f, scratch.dqkv + off + D, int64_t(dh), iH);
  }
  linear_backward_cuda(g, LinearShape{N, D, 3 * D}, x, p.w_qkv, scratch.dqkv, dx, gr.w_qkv, gr.b_qkv);
}

}  // namespace dsgd
