// See attention.hpp.
#include "workloads/layers/attention.hpp"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "workloads/layers/kernel_profile.hpp"
#include "workloads/layers/layer_threads.hpp"
#include "workloads/layers/linear.hpp"
#include "workloads/layers/vec_math.hpp"

namespace dsgd {

namespace {

// Runs body(i) for i in [0, count) on layer_threads() threads, each (sample, head) pair on one
// thread with single-threaded BLAS inside (OpenBLAS set to 1 thread for the loop, then set
// back), so exactly --threads cores compute and every output is written by one thread:
// results do not depend on the thread count.
template <class Body>
void for_each_head(size_t count, Body body) {
  const int t = layer_threads();
#ifdef _OPENMP
  if (t > 1 && count > 1) {
    openblas_set_num_threads(1);
#pragma omp parallel for num_threads(t) schedule(static)
    for (long i = 0; i < static_cast<long>(count); ++i) body(static_cast<size_t>(i));
    openblas_set_num_threads(t);
    return;
  }
#endif
  for (size_t i = 0; i < count; ++i) body(i);
}

}  // namespace

// Each (sample, head) pair runs its query rows in tiles of kAttentionTile: tile [r0, r0 + m) sees
// only the keys [0, r0 + m), so every product below covers the lower block-triangle of the
// S×S square and the blocks above the diagonal tiles are never computed, written or read.
// The diagonal tile is computed whole and its upper part set to 0 by the softmax.

void attention_forward(const AttentionShape& s, const AttentionParams& p, const float* x, const AttentionCache& c,
                       float* y) {
  const size_t S = s.seq, D = s.d, H = s.heads, dh = D / H, N = s.batch * S;
  const int iS = static_cast<int>(S), idh = static_cast<int>(dh), ld3 = static_cast<int>(3 * D),
            iD = static_cast<int>(D);
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  {
    KernelTimer kt(Kernel::gpt_attn_proj);
    linear_forward(LinearShape{N, D, 3 * D}, x, p.w_qkv, p.b_qkv, c.qkv);
  }
  std::optional<KernelTimer> kt(std::in_place, Kernel::gpt_attn_fwd);
  for_each_head(s.batch * H, [&](size_t bh) {
    const size_t b = bh / H, h = bh % H;
    const float* q = c.qkv + b * S * 3 * D + h * dh;  // rows of stride 3d
    const float* k = q + D;
    const float* v = q + 2 * D;
    float* P = c.probs + (b * H + h) * S * S;  // S×S, row stride S
    float* ctx = c.ctx + b * S * D + h * dh;   // rows of stride d
    for (size_t r0 = 0; r0 < S; r0 += kAttentionTile) {
      const size_t m = std::min(kAttentionTile, S - r0), n = r0 + m;  // m query rows, n keys
      const int im = static_cast<int>(m), in = static_cast<int>(n);
      float* Pt = P + r0 * S;
      // Scores (m×n) = q[r0, r0+m) k[0, n)ᵀ / √dh.
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, im, in, idh, scale, q + r0 * 3 * D, ld3, k, ld3, 0.0f, Pt,
                  iS);
      for (size_t i = 0; i < m; ++i) {
        const size_t t = r0 + i;
        float* row = Pt + i * S;
        const float inv = 1.0f / row_exp_sum(row, row_max(row, t + 1), row, t + 1);
        for (size_t j = 0; j <= t; ++j) row[j] *= inv;
        for (size_t j = t + 1; j < n; ++j) row[j] = 0.0f;
      }
      // ctx[r0, r0+m) = P (m×n) v[0, n).
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, im, idh, in, 1.0f, Pt, iS, v, ld3, 0.0f, ctx + r0 * D, iD);
    }
  });
  kt.emplace(Kernel::gpt_attn_proj);
  linear_forward(LinearShape{N, D, D}, c.ctx, p.w_out, p.b_out, y);
}

void attention_backward(const AttentionShape& s, const AttentionParams& p, const float* x, const AttentionCache& c,
                        const float* dy, const AttentionScratch& scratch, float* dx, const AttentionGrads& g) {
  const size_t S = s.seq, D = s.d, H = s.heads, dh = D / H, N = s.batch * S;
  const int iS = static_cast<int>(S), idh = static_cast<int>(dh), ld3 = static_cast<int>(3 * D),
            iD = static_cast<int>(D);
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  std::optional<KernelTimer> kt(std::in_place, Kernel::gpt_attn_proj);
  linear_backward(LinearShape{N, D, D}, c.ctx, p.w_out, dy, scratch.dctx, g.w_out, g.b_out);
  kt.emplace(Kernel::gpt_attn_bwd);
  for_each_head(s.batch * H, [&](size_t bh) {
    const size_t b = bh / H, h = bh % H;
    const size_t off = b * S * 3 * D + h * dh;
    const float* q = c.qkv + off;
    const float* k = q + D;
    const float* v = q + 2 * D;
    float* dq = scratch.dqkv + off;
    float* dk = dq + D;
    float* dv = dq + 2 * D;
    const float* P = c.probs + (b * H + h) * S * S;
    const float* dctx = scratch.dctx + b * S * D + h * dh;
    float* dP = scratch.dprobs + bh * S * S;
    // By query tiles: dP = dctx vᵀ, then the softmax backward (with the 1/√dh of the scores folded
    // in: dScores = P ⊙ (dP − Σ P dP) · scale, in place), then dq = dScores k.
    for (size_t r0 = 0; r0 < S; r0 += kAttentionTile) {
      const size_t m = std::min(kAttentionTile, S - r0), n = r0 + m;
      const int im = static_cast<int>(m), in = static_cast<int>(n);
      float* dPt = dP + r0 * S;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, im, in, idh, 1.0f, dctx + r0 * D, iD, v, ld3, 0.0f, dPt, iS);
      for (size_t i = 0; i < m; ++i) {
        const size_t t = r0 + i;
        const float* pr = P + t * S;
        float* dr = dPt + i * S;
        const float dot = row_dot(pr, dr, t + 1);
        for (size_t j = 0; j <= t; ++j) dr[j] = pr[j] * (dr[j] - dot) * scale;
        for (size_t j = t + 1; j < n; ++j) dr[j] = 0.0f;
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, im, idh, in, 1.0f, dPt, iS, k, ld3, 0.0f, dq + r0 * ld3,
                  ld3);
    }
    // By key tiles [j0, j0 + w), which the queries [j0, S) see: dv = Pᵀ dctx, dk = dScoresᵀ q.
    for (size_t j0 = 0; j0 < S; j0 += kAttentionTile) {
      const int iw = static_cast<int>(std::min(kAttentionTile, S - j0)), rows = static_cast<int>(S - j0);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, iw, idh, rows, 1.0f, P + j0 * S + j0, iS, dctx + j0 * D, iD,
                  0.0f, dv + j0 * ld3, ld3);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, iw, idh, rows, 1.0f, dP + j0 * S + j0, iS, q + j0 * ld3, ld3,
                  0.0f, dk + j0 * ld3, ld3);
    }
  });
  kt.emplace(Kernel::gpt_attn_proj);
  linear_backward(LinearShape{N, D, 3 * D}, x, p.w_qkv, scratch.dqkv, dx, g.w_qkv, g.b_qkv);
}

namespace {

// Naive forward in double, keeping what the naive backward needs.
struct NaiveState {
  std::vector<double> qkv, probs, ctx;
};

NaiveState naive_forward_state(const AttentionShape& s, const AttentionParams& p, const float* x) {
  const size_t S = s.seq, D = s.d, H = s.heads, dh = D / H, N = s.batch * S;
  NaiveState st;
  st.qkv.assign(N * 3 * D, 0.0);
  st.probs.assign(s.batch * H * S * S, 0.0);
  st.ctx.assign(N * D, 0.0);
  for (size_t r = 0; r < N; ++r)
    for (size_t o = 0; o < 3 * D; ++o) {
      double acc = p.b_qkv[o];
      for (size_t k = 0; k < D; ++k) acc += double(x[r * D + k]) * p.w_qkv[o * D + k];
      st.qkv[r * 3 * D + o] = acc;
    }
  const double scale = 1.0 / std::sqrt(double(dh));
  for (size_t b = 0; b < s.batch; ++b)
    for (size_t h = 0; h < H; ++h)
      for (size_t t = 0; t < S; ++t) {
        std::vector<double> sc(t + 1);
        double mx = -1e300;
        for (size_t j = 0; j <= t; ++j) {
          double acc = 0;
          for (size_t e = 0; e < dh; ++e)
            acc += st.qkv[(b * S + t) * 3 * D + h * dh + e] * st.qkv[(b * S + j) * 3 * D + D + h * dh + e];
          sc[j] = acc * scale;
          mx = std::max(mx, sc[j]);
        }
        double sum = 0;
        for (size_t j = 0; j <= t; ++j) sum += std::exp(sc[j] - mx);
        double* P = st.probs.data() + ((b * H + h) * S + t) * S;
        for (size_t j = 0; j <= t; ++j) P[j] = std::exp(sc[j] - mx) / sum;
        for (size_t e = 0; e < dh; ++e) {
          double acc = 0;
          for (size_t j = 0; j <= t; ++j) acc += P[j] * st.qkv[(b * S + j) * 3 * D + 2 * D + h * dh + e];
          st.ctx[(b * S + t) * D + h * dh + e] = acc;
        }
      }
  return st;
}

}  // namespace

void attention_forward_naive(const AttentionShape& s, const AttentionParams& p, const float* x, float* y) {
  const size_t D = s.d, N = s.batch * s.seq;
  const NaiveState st = naive_forward_state(s, p, x);
  for (size_t r = 0; r < N; ++r)
    for (size_t o = 0; o < D; ++o) {
      double acc = p.b_out[o];
      for (size_t k = 0; k < D; ++k) acc += st.ctx[r * D + k] * p.w_out[o * D + k];
      y[r * D + o] = static_cast<float>(acc);
    }
}

void attention_backward_naive(const AttentionShape& s, const AttentionParams& p, const float* x, const float* dy,
                              float* dx, const AttentionGrads& g) {
  const size_t S = s.seq, D = s.d, H = s.heads, dh = D / H, N = s.batch * S;
  const NaiveState st = naive_forward_state(s, p, x);
  const double scale = 1.0 / std::sqrt(double(dh));
  // Output projection.
  std::vector<double> dctx(N * D, 0.0), dqkv(N * 3 * D, 0.0);
  for (size_t o = 0; o < D; ++o) {
    double db = 0;
    for (size_t r = 0; r < N; ++r) db += dy[r * D + o];
    g.b_out[o] = static_cast<float>(db);
    for (size_t k = 0; k < D; ++k) {
      double acc = 0;
      for (size_t r = 0; r < N; ++r) acc += double(dy[r * D + o]) * st.ctx[r * D + k];
      g.w_out[o * D + k] = static_cast<float>(acc);
    }
  }
  for (size_t r = 0; r < N; ++r)
    for (size_t k = 0; k < D; ++k) {
      double acc = 0;
      for (size_t o = 0; o < D; ++o) acc += double(dy[r * D + o]) * p.w_out[o * D + k];
      dctx[r * D + k] = acc;
    }
  // Per head: P, V, Q, K.
  for (size_t b = 0; b < s.batch; ++b)
    for (size_t h = 0; h < H; ++h)
      for (size_t t = 0; t < S; ++t) {
        const double* P = st.probs.data() + ((b * H + h) * S + t) * S;
        std::vector<double> dP(t + 1, 0.0);
        for (size_t j = 0; j <= t; ++j)
          for (size_t e = 0; e < dh; ++e) {
            const double dc = dctx[(b * S + t) * D + h * dh + e];
            dP[j] += dc * st.qkv[(b * S + j) * 3 * D + 2 * D + h * dh + e];
            dqkv[(b * S + j) * 3 * D + 2 * D + h * dh + e] += P[j] * dc;
          }
        double dot = 0;
        for (size_t j = 0; j <= t; ++j) dot += P[j] * dP[j];
        for (size_t j = 0; j <= t; ++j) {
          const double ds = P[j] * (dP[j] - dot) * scale;
          for (size_t e = 0; e < dh; ++e) {
            dqkv[(b * S + t) * 3 * D + h * dh + e] += ds * st.qkv[(b * S + j) * 3 * D + D + h * dh + e];
            dqkv[(b * S + j) * 3 * D + D + h * dh + e] += ds * st.qkv[(b * S + t) * 3 * D + h * dh + e];
          }
        }
      }
  // QKV projection.
  for (size_t o = 0; o < 3 * D; ++o) {
    double db = 0;
    for (size_t r = 0; r < N; ++r) db += dqkv[r * 3 * D + o];
    g.b_qkv[o] = static_cast<float>(db);
    for (size_t k = 0; k < D; ++k) {
      double acc = 0;
      for (size_t r = 0; r < N; ++r) acc += dqkv[r * 3 * D + o] * x[r * D + k];
      g.w_qkv[o * D + k] = static_cast<float>(acc);
    }
  }
  for (size_t r = 0; r < N; ++r)
    for (size_t k = 0; k < D; ++k) {
      double acc = 0;
      for (size_t o = 0; o < 3 * D; ++o) acc += dqkv[r * 3 * D + o] * p.w_qkv[o * D + k];
      dx[r * D + k] = static_cast<float>(acc);
    }
}

}  // namespace dsgd
