// Transformer layers (workloads/layers/{embedding,layernorm,attention,gelu}): each fast kernel
// against its double-precision naive reference, each backward against central finite
// differences of the fast float forward (tests/unit/grad_check.hpp; default tolerances
// atol 2e-3, rtol 2e-2, h 1e-2, justified there: objectives are Σ r·y over ≤ 100 outputs of
// O(1), so float rounding contributes ≤ 1e-5 / 2h = 5e-4 to the difference quotient).
// Fast vs naive: within tol·(1 + |ref|) (float_compare.hpp's all_near_rel with rtol = atol =
// tol): tol = 1e-5 is the error at magnitude 1 of float accumulation over ≤ 64 terms plus
// fast_exp's ≤ 2e-7 relative error (the inputs here are O(1), the outputs mostly ≤ 10), is
// relative above it and a floor near 0; an index or a missing term moves outputs by ≥ 1e-2.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "float_compare.hpp"
#include "grad_check.hpp"
#include "workloads/layers/attention.hpp"
#include "workloads/layers/embedding.hpp"
#include "workloads/layers/gelu.hpp"
#include "workloads/layers/layer_threads.hpp"
#include "workloads/layers/layernorm.hpp"
#include "workloads/layers/linear.hpp"
#include "workloads/layers/softmax_cross_entropy.hpp"
#include "workloads/layers/vec_math.hpp"

namespace dsgd {
namespace {

using testing::dot;
using testing::expect_gradient_matches;
using testing::projection_weights;

std::vector<float> random_vector(size_t n, unsigned seed, float amplitude = 1.0f) {
  auto v = projection_weights(n, seed);
  for (auto& x : v) x *= 2.0f * amplitude;  // in [-amplitude, amplitude)
  return v;
}

// |a[i] − b[i]| ≤ tol·(1 + |b[i]|) for every i (tol 0: equal).
void expect_near_all(const std::vector<float>& a, const std::vector<float>& b, double tol, const char* what) {
  EXPECT_TRUE(testing::all_near_rel(a, b, tol, tol)) << what;
}

TEST(VecMath, FastExpAndTanhAreAccurate) {
  double worst_exp = 0, worst_tanh = 0;
  for (float x = -80.0f; x <= 80.0f; x += 0.013f) {
    worst_exp = std::max(worst_exp, std::fabs(fast_exp(x) / std::exp(double(x)) - 1.0));
    worst_tanh = std::max(worst_tanh, std::fabs(fast_tanh(x / 8) - std::tanh(double(x) / 8)));
  }
  EXPECT_LT(worst_exp, 5e-7);
  EXPECT_LT(worst_tanh, 5e-7);
  EXPECT_EQ(fast_exp(-1000.0f), fast_exp(-87.0f));  // clamped: no denormals, no zero
  EXPECT_TRUE(std::isfinite(fast_exp(1000.0f)));
  EXPECT_EQ(fast_tanh(50.0f), 1.0f);
  EXPECT_EQ(fast_tanh(-50.0f), -1.0f);
}

// The lane-order row reductions against double sums, at lengths below, at and past a whole
// number of lanes; tolerance: ≤ 100 float additions of O(1) terms, ~1e-6 relative.
TEST(VecMath, RowReductionsMatchDouble) {
  for (size_t n : {size_t{1}, kLanes - 1, kLanes, kLanes + 1, 3 * kLanes + 5, size_t{100}}) {
    const auto a = random_vector(n, 61, 3.0f), b = random_vector(n, 62);
    double sum = 0, dotp = 0, mx = a[0], es = 0;
    for (size_t j = 0; j < n; ++j) {
      sum += a[j];
      dotp += double(a[j]) * b[j];
      mx = std::max(mx, double(a[j]));
    }
    for (size_t j = 0; j < n; ++j) es += std::exp(a[j] - mx);
    EXPECT_NEAR(row_sum(a.data(), n), sum, 1e-5 * (1 + n)) << n;
    EXPECT_NEAR(row_dot(a.data(), b.data(), n), dotp, 1e-5 * (1 + n)) << n;
    EXPECT_EQ(row_max(a.data(), n), float(mx)) << n;
    std::vector<float> e(n);
    EXPECT_NEAR(row_exp_sum(a.data(), float(mx), e.data(), n), es, 1e-6 * es * (1 + n)) << n;
    EXPECT_EQ(row_exp_sum(a.data(), float(mx), n), row_exp_sum(a.data(), float(mx), e.data(), n)) << n;
    for (size_t j = 0; j < n; ++j) EXPECT_EQ(e[j], fast_exp(a[j] - float(mx))) << n << ", " << j;
  }
}

TEST(Gelu, MatchesNaiveAndFiniteDifferences) {
  auto x = random_vector(97, 1, 4.0f);  // covers the tails, where tanh saturates
  const auto r = projection_weights(x.size(), 2);
  std::vector<float> y(x.size()), y_ref(x.size()), dx(x.size()), dx_ref(x.size());
  gelu_forward(x.data(), y.data(), x.size());
  gelu_forward_naive(x.data(), y_ref.data(), x.size());
  expect_near_all(y, y_ref, 1e-5, "y");
  gelu_backward(x.data(), r.data(), dx.data(), x.size());
  gelu_backward_naive(x.data(), r.data(), dx_ref.data(), x.size());
  expect_near_all(dx, dx_ref, 1e-5, "dx");
  // Known values of the tanh approximation: gelu(1) = 0.841192, gelu(-1) = -0.158808.
  const float pts[2] = {1.0f, -1.0f};
  float out[2];
  gelu_forward(pts, out, 2);
  EXPECT_NEAR(out[0], 0.841192, 1e-5);
  EXPECT_NEAR(out[1], -0.158808, 1e-5);
  auto f = [&] {
    gelu_forward(x.data(), y.data(), x.size());
    return dot(y, r);
  };
  expect_gradient_matches(f, x, dx, "dx");
  // In place (dx aliasing dy).
  std::vector<float> inplace = r;
  gelu_backward(x.data(), inplace.data(), inplace.data(), x.size());
  expect_near_all(inplace, dx, 0.0, "in place");
}

TEST(LayerNorm, MatchesNaiveAndFiniteDifferences) {
  const LayerNormShape s{5, 12};
  auto x = random_vector(s.n * s.d, 3, 2.0f);
  for (size_t k = 0; k < s.d; ++k) x[k] += 3.0f;  // a row with a large mean
  auto gamma = random_vector(s.d, 4), beta = random_vector(s.d, 5);
  for (auto& g : gamma) g += 1.0f;
  const auto r = projection_weights(s.n * s.d, 6);
  std::vector<float> y(x.size()), y_ref(x.size()), mean(s.n), rstd(s.n), mean_ref(s.n), rstd_ref(s.n);
  layernorm_forward(s, x.data(), gamma.data(), beta.data(), y.data(), mean.data(), rstd.data());
  layernorm_forward_naive(s, x.data(), gamma.data(), beta.data(), y_ref.data(), mean_ref.data(), rstd_ref.data());
  expect_near_all(y, y_ref, 1e-5, "y");
  expect_near_all(mean, mean_ref, 1e-5, "mean");
  expect_near_all(rstd, rstd_ref, 1e-5, "rstd");
  for (bool accumulate : {false, true}) {
    std::vector<float> dx(x.size(), 0.5f), dg(s.d), db(s.d), dx_ref(x.size(), 0.5f), dg_ref(s.d), db_ref(s.d);
    layernorm_backward(s, x.data(), gamma.data(), mean.data(), rstd.data(), r.data(), dx.data(), dg.data(), db.data(),
                       accumulate);
    layernorm_backward_naive(s, x.data(), gamma.data(), r.data(), dx_ref.data(), dg_ref.data(), db_ref.data(),
                             accumulate);
    expect_near_all(dx, dx_ref, 1e-5, "dx");
    expect_near_all(dg, dg_ref, 1e-5, "dgamma");
    expect_near_all(db, db_ref, 1e-5, "dbeta");
  }
  std::vector<float> dx(x.size()), dg(s.d), db(s.d);
  layernorm_backward(s, x.data(), gamma.data(), mean.data(), rstd.data(), r.data(), dx.data(), dg.data(), db.data());
  auto f = [&] {
    layernorm_forward(s, x.data(), gamma.data(), beta.data(), y.data(), mean.data(), rstd.data());
    return dot(y, r);
  };
  expect_gradient_matches(f, x, dx, "dx");
  expect_gradient_matches(f, gamma, dg, "dgamma");
  expect_gradient_matches(f, beta, db, "dbeta");
}

TEST(Embedding, MatchesNaiveAndFiniteDifferences) {
  const EmbeddingShape s{2, 5, 7, 4};
  const std::vector<int32_t> tokens = {0, 3, 3, 6, 1, 2, 3, 0, 0, 5};  // repeats: scatter must add
  auto wte = random_vector(s.vocab * s.d, 7), wpe = random_vector(s.seq * s.d, 8);
  const auto r = projection_weights(s.batch * s.seq * s.d, 9);
  std::vector<float> x(s.batch * s.seq * s.d), x_ref(x.size());
  embedding_forward(s, tokens.data(), wte.data(), wpe.data(), x.data());
  embedding_forward_naive(s, tokens.data(), wte.data(), wpe.data(), x_ref.data());
  expect_near_all(x, x_ref, 1e-6, "x");
  std::vector<float> dwte(wte.size(), 9.0f), dwpe(wpe.size(), 9.0f), dwte_ref(wte.size()), dwpe_ref(wpe.size());
  embedding_backward(s, tokens.data(), r.data(), dwte.data(), dwpe.data());
  embedding_backward_naive(s, tokens.data(), r.data(), dwte_ref.data(), dwpe_ref.data());
  expect_near_all(dwte, dwte_ref, 1e-6, "dwte");
  expect_near_all(dwpe, dwpe_ref, 1e-6, "dwpe");
  for (size_t k = 0; k < s.d; ++k) EXPECT_EQ(dwte[4 * s.d + k], 0.0f);  // token 4 is absent
  auto f = [&] {
    embedding_forward(s, tokens.data(), wte.data(), wpe.data(), x.data());
    return dot(x, r);
  };
  expect_gradient_matches(f, wte, dwte, "dwte");
  expect_gradient_matches(f, wpe, dwpe, "dwpe");
}

struct AttentionFixture {
  AttentionShape s{2, 5, 8, 2};
  size_t N = s.batch * s.seq;
  std::vector<float> x = random_vector(N * s.d, 11);
  std::vector<float> w_qkv = random_vector(3 * s.d * s.d, 12, 0.5f), b_qkv = random_vector(3 * s.d, 13, 0.2f);
  std::vector<float> w_out = random_vector(s.d * s.d, 14, 0.5f), b_out = random_vector(s.d, 15, 0.2f);
  std::vector<float> qkv = std::vector<float>(N * 3 * s.d),
                     probs = std::vector<float>(s.batch * s.heads * s.seq * s.seq);
  std::vector<float> ctx = std::vector<float>(N * s.d), dctx = ctx, dqkv = qkv,
                     dprobs = std::vector<float>(s.batch * s.heads * s.seq * s.seq);
  AttentionParams params() const { return {w_qkv.data(), b_qkv.data(), w_out.data(), b_out.data()}; }
  AttentionCache cache() { return {qkv.data(), probs.data(), ctx.data()}; }
  AttentionScratch scratch() { return {dctx.data(), dqkv.data(), dprobs.data()}; }
};

TEST(Attention, MatchesNaive) {
  AttentionFixture a;
  std::vector<float> y(a.N * a.s.d), y_ref(y.size());
  attention_forward(a.s, a.params(), a.x.data(), a.cache(), y.data());
  attention_forward_naive(a.s, a.params(), a.x.data(), y_ref.data());
  expect_near_all(y, y_ref, 1e-5, "y");
  // Causal: every probability row sums to 1 and is zero above the diagonal.
  for (size_t row = 0; row < a.s.batch * a.s.heads * a.s.seq; ++row) {
    const size_t t = row % a.s.seq;
    double sum = 0;
    for (size_t j = 0; j < a.s.seq; ++j) {
      sum += a.probs[row * a.s.seq + j];
      if (j > t) {
        EXPECT_EQ(a.probs[row * a.s.seq + j], 0.0f);
      }
    }
    EXPECT_NEAR(sum, 1.0, 1e-6);
  }
  const auto dy = projection_weights(y.size(), 16);
  std::vector<float> dx(a.x.size()), gq(a.w_qkv.size()), gbq(a.b_qkv.size()), go(a.w_out.size()), gbo(a.b_out.size());
  std::vector<float> dx_r(a.x.size()), gq_r(gq.size()), gbq_r(gbq.size()), go_r(go.size()), gbo_r(gbo.size());
  attention_backward(a.s, a.params(), a.x.data(), a.cache(), dy.data(), a.scratch(), dx.data(),
                     {gq.data(), gbq.data(), go.data(), gbo.data()});
  attention_backward_naive(a.s, a.params(), a.x.data(), dy.data(), dx_r.data(),
                           {gq_r.data(), gbq_r.data(), go_r.data(), gbo_r.data()});
  expect_near_all(dx, dx_r, 1e-5, "dx");
  expect_near_all(gq, gq_r, 1e-5, "dW_qkv");
  expect_near_all(gbq, gbq_r, 1e-5, "db_qkv");
  expect_near_all(go, go_r, 1e-5, "dW_out");
  expect_near_all(gbo, gbo_r, 1e-5, "db_out");
}

TEST(Attention, GradientsMatchFiniteDifferences) {
  AttentionFixture a;
  std::vector<float> y(a.N * a.s.d);
  const auto r = projection_weights(y.size(), 17);
  auto f = [&] {
    attention_forward(a.s, a.params(), a.x.data(), a.cache(), y.data());
    return dot(y, r);
  };
  f();
  std::vector<float> dx(a.x.size()), gq(a.w_qkv.size()), gbq(a.b_qkv.size()), go(a.w_out.size()), gbo(a.b_out.size());
  attention_backward(a.s, a.params(), a.x.data(), a.cache(), r.data(), a.scratch(), dx.data(),
                     {gq.data(), gbq.data(), go.data(), gbo.data()});
  expect_gradient_matches(f, a.x, dx, "dx");
  expect_gradient_matches(f, a.w_qkv, gq, "dW_qkv");
  expect_gradient_matches(f, a.b_qkv, gbq, "db_qkv");
  expect_gradient_matches(f, a.w_out, go, "dW_out");
  expect_gradient_matches(f, a.b_out, gbo, "db_out");
}

TEST(Attention, IsCausal) {
  // Changing the last position's input changes no earlier position's output.
  AttentionFixture a;
  std::vector<float> y1(a.N * a.s.d), y2(y1.size());
  attention_forward(a.s, a.params(), a.x.data(), a.cache(), y1.data());
  const size_t last = a.s.seq - 1;
  for (size_t k = 0; k < a.s.d; ++k) a.x[last * a.s.d + k] += 1.0f;  // sample 0, last position
  attention_forward(a.s, a.params(), a.x.data(), a.cache(), y2.data());
  for (size_t i = 0; i < last * a.s.d; ++i) EXPECT_EQ(y1[i], y2[i]) << i;
  double changed = 0;
  for (size_t k = 0; k < a.s.d; ++k) changed += std::fabs(y1[last * a.s.d + k] - y2[last * a.s.d + k]);
  EXPECT_GT(changed, 1e-3);
}

// A second, independent reference for the tiled causal products: everything in double over the
// full S×S square, the masked scores set to −∞ before the softmax (so the masked probabilities
// are exactly 0 and the full-square products reduce to the causal ones), the backward as the
// plain full-square matrix products dP = dctx vᵀ, dv = Pᵀ dctx, dq = dS k, dk = dSᵀ q.
struct FullSquareAttention {
  std::vector<double> y, dx, g_qkv, gb_qkv, g_out, gb_out;
};

FullSquareAttention attention_full_square(const AttentionShape& s, const std::vector<float>& x,
                                          const std::vector<float>& w_qkv, const std::vector<float>& b_qkv,
                                          const std::vector<float>& w_out, const std::vector<float>& b_out,
                                          const std::vector<float>& dy) {
  const size_t S = s.seq, D = s.d, H = s.heads, dh = D / H, N = s.batch * S;
  const double scale = 1.0 / std::sqrt(double(dh));
  // (n×k) · (m×k)ᵀ for row-major double matrices, the building block of every product below.
  auto mul_bt = [](const double* a, const double* b, size_t n, size_t m, size_t k, double* c) {
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < m; ++j) {
        double acc = 0;
        for (size_t e = 0; e < k; ++e) acc += a[i * k + e] * b[j * k + e];
        c[i * m + j] = acc;
      }
  };
  auto transpose = [](const double* a, size_t n, size_t m) {
    std::vector<double> t(n * m);
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < m; ++j) t[j * n + i] = a[i * m + j];
    return t;
  };
  const std::vector<double> xd(x.begin(), x.end()), wq(w_qkv.begin(), w_qkv.end()), wo(w_out.begin(), w_out.end()),
      dyd(dy.begin(), dy.end());
  std::vector<double> qkv(N * 3 * D), ctx(N * D, 0.0), dctx(N * D), dqkv(N * 3 * D, 0.0);
  mul_bt(xd.data(), wq.data(), N, 3 * D, D, qkv.data());
  for (size_t r = 0; r < N; ++r)
    for (size_t o = 0; o < 3 * D; ++o) qkv[r * 3 * D + o] += b_qkv[o];
  FullSquareAttention out;
  out.y.assign(N * D, 0.0);
  mul_bt(dyd.data(), transpose(wo.data(), D, D).data(), N, D, D, dctx.data());  // dctx = dy W_out
  for (size_t b = 0; b < s.batch; ++b)
    for (size_t h = 0; h < H; ++h) {
      // This head's q, k, v, dctx as dense S×dh matrices.
      std::vector<double> q(S * dh), k(S * dh), v(S * dh), dc(S * dh);
      for (size_t t = 0; t < S; ++t)
        for (size_t e = 0; e < dh; ++e) {
          const double* row = qkv.data() + (b * S + t) * 3 * D + h * dh + e;
          q[t * dh + e] = row[0];
          k[t * dh + e] = row[D];
          v[t * dh + e] = row[2 * D];
          dc[t * dh + e] = dctx[(b * S + t) * D + h * dh + e];
        }
      std::vector<double> P(S * S), dP(S * S), c(S * dh), dq(S * dh), dk(S * dh), dv(S * dh);
      mul_bt(q.data(), k.data(), S, S, dh, P.data());
      for (size_t t = 0; t < S; ++t) {
        double* row = P.data() + t * S;
        double mx = -INFINITY, sum = 0;
        for (size_t j = 0; j < S; ++j) {
          row[j] = j > t ? -INFINITY : row[j] * scale;
          mx = std::max(mx, row[j]);
        }
        for (size_t j = 0; j < S; ++j) sum += (row[j] = std::exp(row[j] - mx));
        for (size_t j = 0; j < S; ++j) row[j] /= sum;
      }
      const auto vt = transpose(v.data(), S, dh), Pt = transpose(P.data(), S, S);
      mul_bt(P.data(), vt.data(), S, dh, S, c.data());                             // ctx = P v
      mul_bt(dc.data(), v.data(), S, S, dh, dP.data());                            // dP = dctx vᵀ
      mul_bt(Pt.data(), transpose(dc.data(), S, dh).data(), S, dh, S, dv.data());  // dv = Pᵀ dctx
      for (size_t t = 0; t < S; ++t) {
        double dot = 0;
        for (size_t j = 0; j < S; ++j) dot += P[t * S + j] * dP[t * S + j];
        for (size_t j = 0; j < S; ++j) dP[t * S + j] = P[t * S + j] * (dP[t * S + j] - dot) * scale;
      }
      mul_bt(dP.data(), transpose(k.data(), S, dh).data(), S, dh, S, dq.data());                          // dq = dS k
      mul_bt(transpose(dP.data(), S, S).data(), transpose(q.data(), S, dh).data(), S, dh, S, dk.data());  // dSᵀ q
      for (size_t t = 0; t < S; ++t)
        for (size_t e = 0; e < dh; ++e) {
          ctx[(b * S + t) * D + h * dh + e] = c[t * dh + e];
          double* drow = dqkv.data() + (b * S + t) * 3 * D + h * dh + e;
          drow[0] = dq[t * dh + e];
          drow[D] = dk[t * dh + e];
          drow[2 * D] = dv[t * dh + e];
        }
    }
  mul_bt(ctx.data(), wo.data(), N, D, D, out.y.data());
  for (size_t r = 0; r < N; ++r)
    for (size_t o = 0; o < D; ++o) out.y[r * D + o] += b_out[o];
  out.g_out.assign(D * D, 0.0);
  out.g_qkv.assign(3 * D * D, 0.0);
  out.dx.assign(N * D, 0.0);
  mul_bt(transpose(dyd.data(), N, D).data(), transpose(ctx.data(), N, D).data(), D, D, N, out.g_out.data());
  mul_bt(transpose(dqkv.data(), N, 3 * D).data(), transpose(xd.data(), N, D).data(), 3 * D, D, N, out.g_qkv.data());
  mul_bt(dqkv.data(), transpose(wq.data(), 3 * D, D).data(), N, D, 3 * D, out.dx.data());
  out.gb_out.assign(D, 0.0);
  out.gb_qkv.assign(3 * D, 0.0);
  for (size_t r = 0; r < N; ++r) {
    for (size_t o = 0; o < D; ++o) out.gb_out[o] += dy[r * D + o];
    for (size_t o = 0; o < 3 * D; ++o) out.gb_qkv[o] += dqkv[r * 3 * D + o];
  }
  return out;
}

std::vector<float> to_float(const std::vector<double>& v) {
  return std::vector<float>(v.begin(), v.end());
}

// The tiled causal attention (forward and every gradient) against the full-square masked
// reference above, at sequence lengths below, at, just past and well past the tile, and not
// multiples of it. Cache and scratch start as NaN, so an entry of the block-triangle that the
// kernels read before writing (or a masked one they read at all) turns the results into NaN.
// Tolerance tol·(1 + |ref|), tol = 2e-5: the float sums run over at most ~200 terms of O(1)
// (P·v over ≤ 97 keys, weight gradients over 2·97 rows), so rounding stays near
// sqrt(200)·6e-8 ≈ 1e-6 of the magnitudes compared; measured worst 8.6e-7, 23x inside. A
// missing or extra key or query in a tile moves the outputs by ~1/S ≥ 1e-2 of their size (checked:
// the dv/dk products over the diagonal tile's queries only, or a softmax that leaves the diagonal
// tile's masked scores in place, fail here; the first passes every other attention test).
TEST(Attention, TiledMatchesFullSquareReference) {
  const size_t T = kAttentionTile;
  for (size_t S : {size_t{1}, size_t{5}, T - 1, T, T + 1, 2 * T + 6, 3 * T + 1}) {
    const AttentionShape s{2, S, 8, 2};
    const size_t N = s.batch * S, D = s.d, BHSS = s.batch * s.heads * S * S;
    const auto x = random_vector(N * D, 21), w_qkv = random_vector(3 * D * D, 22, 0.5f),
               b_qkv = random_vector(3 * D, 23, 0.2f), w_out = random_vector(D * D, 24, 0.5f),
               b_out = random_vector(D, 25, 0.2f), dy = random_vector(N * D, 26);
    const float nan = std::nanf("");
    std::vector<float> qkv(N * 3 * D, nan), probs(BHSS, nan), ctx(N * D, nan), dctx(N * D, nan), dqkv(N * 3 * D, nan),
        dprobs(BHSS, nan);
    const AttentionParams p{w_qkv.data(), b_qkv.data(), w_out.data(), b_out.data()};
    const AttentionCache cache{qkv.data(), probs.data(), ctx.data()};
    std::vector<float> y(N * D, nan), dx(N * D, nan), gq(3 * D * D, nan), gbq(3 * D, nan), go(D * D, nan), gbo(D, nan);
    attention_forward(s, p, x.data(), cache, y.data());
    attention_backward(s, p, x.data(), cache, dy.data(), AttentionScratch{dctx.data(), dqkv.data(), dprobs.data()},
                       dx.data(), AttentionGrads{gq.data(), gbq.data(), go.data(), gbo.data()});
    const FullSquareAttention ref = attention_full_square(s, x, w_qkv, b_qkv, w_out, b_out, dy);
    SCOPED_TRACE("seq " + std::to_string(S));
    const double tol = 2e-5;
    expect_near_all(y, to_float(ref.y), tol, "y");
    expect_near_all(dx, to_float(ref.dx), tol, "dx");
    expect_near_all(gq, to_float(ref.g_qkv), tol, "dW_qkv");
    expect_near_all(gbq, to_float(ref.gb_qkv), tol, "db_qkv");
    expect_near_all(go, to_float(ref.g_out), tol, "dW_out");
    expect_near_all(gbo, to_float(ref.gb_out), tol, "db_out");
    // The cached probabilities: rows sum to 1, zero from t + 1 to the end of t's diagonal tile.
    for (size_t row = 0; row < s.batch * s.heads * S; ++row) {
      const size_t t = row % S, tile_end = std::min(S, (t / T + 1) * T);
      double sum = 0;
      for (size_t j = 0; j < tile_end; ++j) {
        const float v = probs[row * S + j];
        if (j > t) {
          EXPECT_EQ(v, 0.0f) << "row " << t << ", key " << j;
        }
        sum += v;
      }
      EXPECT_NEAR(sum, 1.0, 1e-5) << "row " << t;
    }
  }
}

// The GPT kernels split over the --threads threads (attention by (sample, head) with
// single-threaded BLAS inside, LayerNorm by rows and then by column ranges for dγ/dβ, GELU and the
// loss gradient by elements/rows, the bias gradient by column ranges) give bitwise the same
// results on 1, 2 and 3 threads; the shapes are above the threading thresholds (the streaming
// loops' 1M floats for LayerNorm, the bias gradient and the loss gradient). (OpenBLAS's own
// SGEMM is not always bitwise the same across its thread counts, e.g. linear_forward's output at
// n = 300, in = 8, out = 130, so pure-GEMM outputs are left out.)
TEST(GptKernels, DoNotDependOnThreadCount) {
  AttentionFixture a;
  a.s = AttentionShape{2, kAttentionTile + 8, 32, 4};  // two query tiles
  a.N = a.s.batch * a.s.seq;
  const size_t N = a.N, D = a.s.d, BHSS = a.s.batch * a.s.heads * a.s.seq * a.s.seq;
  a.x = random_vector(N * D, 91);
  a.w_qkv = random_vector(3 * D * D, 92, 0.3f);
  a.b_qkv = random_vector(3 * D, 93, 0.1f);
  a.w_out = random_vector(D * D, 94, 0.3f);
  a.b_out = random_vector(D, 95, 0.1f);
  a.qkv.assign(N * 3 * D, 0.0f);
  a.probs.assign(BHSS, 0.0f);
  a.ctx.assign(N * D, 0.0f);
  a.dctx = a.ctx;
  a.dqkv = a.qkv;
  a.dprobs.assign(BHSS, 0.0f);
  const auto dy = random_vector(N * D, 96);
  const LayerNormShape ln{6560, 160};
  ASSERT_GE(ln.n * ln.d, kParallelMinStreamFloats);
  const auto lx = random_vector(ln.n * ln.d, 97), ldy = random_vector(ln.n * ln.d, 98), lg = random_vector(ln.d, 99);
  const LinearShape lin{8100, 8, 130};
  ASSERT_GE(lin.n * lin.out, kParallelMinStreamFloats);
  const auto fx = random_vector(lin.n * lin.in, 100), fw = random_vector(lin.out * lin.in, 101),
             fdy = random_vector(lin.n * lin.out, 102);
  const size_t cn = 4100, cc = 256;
  ASSERT_GE(cn * cc, kParallelMinStreamFloats);
  const auto logits = random_vector(cn * cc, 103, 3.0f);
  std::vector<int32_t> targets(cn);
  for (size_t i = 0; i < cn; ++i) targets[i] = static_cast<int32_t>((i * 7) % cc);
  const int before = openblas_get_num_threads();
  std::vector<float> ref;
  for (int t : {1, 2, 3}) {
    openblas_set_num_threads(t);
    std::vector<float> y(N * D), dx(N * D), gw(3 * D * D), gb(3 * D), go(D * D), gob(D);
    attention_forward(a.s, a.params(), a.x.data(), a.cache(), y.data());
    attention_backward(a.s, a.params(), a.x.data(), a.cache(), dy.data(), a.scratch(), dx.data(),
                       AttentionGrads{gw.data(), gb.data(), go.data(), gob.data()});
    std::vector<float> ly(lx.size()), lm(ln.n), lr(ln.n), ldx(lx.size(), 0.5f), ldg(ln.d), ldb(ln.d);
    layernorm_forward(ln, lx.data(), lg.data(), lg.data(), ly.data(), lm.data(), lr.data());
    layernorm_backward(ln, lx.data(), lg.data(), lm.data(), lr.data(), ldy.data(), ldx.data(), ldg.data(), ldb.data(),
                       true);
    std::vector<float> ge(lx.size()), gd(lx.size());
    gelu_forward(lx.data(), ge.data(), lx.size());
    gelu_backward(lx.data(), ldy.data(), gd.data(), lx.size());
    std::vector<float> fy(lin.n * lin.out), fdx(lin.n * lin.in), fdw(fw.size()), fdb(lin.out);
    linear_forward(lin, fx.data(), fw.data(), fw.data(), fy.data());
    linear_backward(lin, fx.data(), fw.data(), fdy.data(), fdx.data(), fdw.data(), fdb.data());
    std::vector<float> dl(logits.size());
    softmax_cross_entropy_backward(logits.data(), targets.data(), cn, cc, 0.01f, dl.data());
    std::vector<float> all;
    for (const auto* v : {&y, &dx, &gw, &gb, &go, &gob, &a.probs, &ly, &lm, &lr, &ldx, &ldg, &ldb, &ge, &gd, &fdb, &dl})
      all.insert(all.end(), v->begin(), v->end());
    if (t == 1) {
      ref = all;
      continue;
    }
    size_t at = 0, part = 0;
    for (const auto* v :
         {&y, &dx, &gw, &gb, &go, &gob, &a.probs, &ly, &lm, &lr, &ldx, &ldg, &ldb, &ge, &gd, &fdb, &dl}) {
      EXPECT_TRUE(std::equal(v->begin(), v->end(), ref.begin() + long(at)))
          << "output " << part << ", " << t << " threads";
      at += v->size();
      ++part;
    }
  }
  openblas_set_num_threads(before);
}

}  // namespace
}  // namespace dsgd
