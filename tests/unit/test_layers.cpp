// Shared layers (workloads/layers/): each fast kernel against its naive reference, and
// each backward against central finite differences (tests/unit/grad_check.hpp). Fast vs
// naive: float_compare.hpp's tolerances (a reduction of k terms within 4·ε·sqrt(k)·Σ|t_i|;
// elementwise results within a few ε of their own magnitude).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "float_compare.hpp"
#include "grad_check.hpp"
#include "workloads/layers/linear.hpp"
#include "workloads/layers/softmax_cross_entropy.hpp"

namespace dsgd {
namespace {

using testing::abs_of;
using testing::dot;
using testing::expect_gradient_matches;
using testing::float_sums_close;
using testing::kFloatEps;
using testing::near_rel;
using testing::projection_weights;

std::vector<float> random_vector(size_t n, unsigned seed) {
  auto v = projection_weights(n, seed);
  for (auto& x : v) x *= 2.0f;  // in [-1, 1)
  return v;
}

TEST(Linear, BlasMatchesNaive) {
  const LinearShape s{7, 13, 5};
  auto x = random_vector(s.n * s.in, 1), w = random_vector(s.out * s.in, 2), b = random_vector(s.out, 3);
  auto dy = random_vector(s.n * s.out, 4);
  // Σ|t_i| of every output: the naive pass on |x|, |W|, |b|, |dy| (and |initial dW, db|).
  const auto ax = abs_of(x), aw = abs_of(w), ab = abs_of(b), ady = abs_of(dy);
  std::vector<float> y(s.n * s.out), y_ref(y.size()), y_abs(y.size());
  linear_forward(s, x.data(), w.data(), b.data(), y.data());
  linear_forward_naive(s, x.data(), w.data(), b.data(), y_ref.data());
  linear_forward_naive(s, ax.data(), aw.data(), ab.data(), y_abs.data());
  EXPECT_TRUE(float_sums_close(y, y_ref, y_abs, s.in + 1)) << "y";
  for (bool accumulate : {false, true}) {
    std::vector<float> dx(x.size()), dw(w.size(), 0.5f), db(b.size(), 0.25f);
    std::vector<float> dx_ref(x.size()), dw_ref(w.size(), 0.5f), db_ref(b.size(), 0.25f);
    std::vector<float> dx_abs(x.size()), dw_abs(w.size(), 0.5f), db_abs(b.size(), 0.25f);
    linear_backward(s, x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data(), accumulate);
    linear_backward_naive(s, x.data(), w.data(), dy.data(), dx_ref.data(), dw_ref.data(), db_ref.data(), accumulate);
    linear_backward_naive(s, ax.data(), aw.data(), ady.data(), dx_abs.data(), dw_abs.data(), db_abs.data(), accumulate);
    EXPECT_TRUE(float_sums_close(dx, dx_ref, dx_abs, s.out)) << "dx, accumulate " << accumulate;
    EXPECT_TRUE(float_sums_close(dw, dw_ref, dw_abs, s.n + 1)) << "dW, accumulate " << accumulate;
    EXPECT_TRUE(float_sums_close(db, db_ref, db_abs, s.n + 1)) << "db, accumulate " << accumulate;
  }
}

TEST(Linear, GradientsMatchFiniteDifferences) {
  const LinearShape s{3, 4, 5};
  auto x = random_vector(s.n * s.in, 11), w = random_vector(s.out * s.in, 12), b = random_vector(s.out, 13);
  const auto r = projection_weights(s.n * s.out, 14);
  std::vector<float> y(s.n * s.out);
  auto f = [&] {
    linear_forward(s, x.data(), w.data(), b.data(), y.data());
    return dot(y, r);
  };
  std::vector<float> dx(x.size()), dw(w.size()), db(b.size());
  linear_backward(s, x.data(), w.data(), r.data(), dx.data(), dw.data(), db.data());
  expect_gradient_matches(f, x, dx, "dx");
  expect_gradient_matches(f, w, dw, "dW");
  expect_gradient_matches(f, b, db, "db");
}

TEST(SoftmaxCrossEntropy, MatchesNaiveAndFiniteDifferences) {
  const size_t n = 4, c = 6;
  auto logits = random_vector(n * c, 21);
  for (auto& v : logits) v *= 3.0f;
  const std::vector<int32_t> targets = {0, 5, 2, 2};
  double correct = -1;
  const double loss = softmax_cross_entropy_forward(logits.data(), targets.data(), n, c, &correct);
  // Each row's log Σ exp(l_k − max) − (l_t − max) is computed in float from logits of size
  // up to max|l|: its rounding is a few ε·max|l| (the subtraction of the max and the log's
  // argument), whatever the loss's own size; 16·ε·(1 + max|l|) bounds it with a margin.
  double max_logit = 0;
  for (float v : logits) max_logit = std::max(max_logit, double(std::fabs(v)));
  const double loss_atol = 16 * kFloatEps * (1 + max_logit);
  EXPECT_TRUE(near_rel(loss, softmax_cross_entropy_forward_naive(logits.data(), targets.data(), n, c), 0, loss_atol));
  EXPECT_GE(correct, 0);
  EXPECT_LE(correct, double(n));
  std::vector<float> d(n * c), d_ref(n * c);
  softmax_cross_entropy_backward(logits.data(), targets.data(), n, c, 1.0f / n, d.data());
  softmax_cross_entropy_backward_naive(logits.data(), targets.data(), n, c, 1.0f / n, d_ref.data());
  // d = scale·(p − onehot): p carries the same few-ε·max|l| relative error, so
  // |d − d_ref| ≤ scale·16·ε·(1 + max|l|).
  EXPECT_TRUE(testing::all_near_rel(d, d_ref, 0, (1.0 / n) * loss_atol));
  auto f = [&] { return softmax_cross_entropy_forward(logits.data(), targets.data(), n, c); };
  expect_gradient_matches(f, logits, d, "dlogits");
  // In place (dlogits aliasing logits) gives the same result.
  std::vector<float> inplace = logits;
  softmax_cross_entropy_backward(inplace.data(), targets.data(), n, c, 1.0f / n, inplace.data());
  for (size_t i = 0; i < d.size(); ++i) EXPECT_FLOAT_EQ(inplace[i], d[i]) << i;
}

TEST(SoftmaxCrossEntropy, StableForLargeLogits) {
  const std::vector<float> logits = {1000.0f, 0.0f, -1000.0f};
  const std::vector<int32_t> target = {0};
  // Tolerances as above: 16·ε·(1 + max|l|) (2e-3 here; an unstable form gives inf or NaN).
  const double atol = 16 * kFloatEps * 1001;
  EXPECT_TRUE(near_rel(softmax_cross_entropy_forward(logits.data(), target.data(), 1, 3), 0.0, 0, atol));
  const std::vector<int32_t> wrong = {1};
  EXPECT_TRUE(near_rel(softmax_cross_entropy_forward(logits.data(), wrong.data(), 1, 3), 1000.0, 0, atol));
}

}  // namespace
}  // namespace dsgd
