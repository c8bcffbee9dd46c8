// Shared layers (workloads/layers/): each fast kernel against its naive reference, and
// each backward against central finite differences (tests/unit/grad_check.hpp).
#include <gtest/gtest.h>

#include <vector>

#include "grad_check.hpp"
#include "workloads/layers/linear.hpp"
#include "workloads/layers/softmax_cross_entropy.hpp"

namespace dsgd {
namespace {

using testing::dot;
using testing::expect_gradient_matches;
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
  std::vector<float> y(s.n * s.out), y_ref(y.size());
  linear_forward(s, x.data(), w.data(), b.data(), y.data());
  linear_forward_naive(s, x.data(), w.data(), b.data(), y_ref.data());
  for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], y_ref[i], 1e-5) << i;
  for (bool accumulate : {false, true}) {
    std::vector<float> dx(x.size()), dw(w.size(), 0.5f), db(b.size(), 0.25f);
    std::vector<float> dx_ref(x.size()), dw_ref(w.size(), 0.5f), db_ref(b.size(), 0.25f);
    linear_backward(s, x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data(), accumulate);
    linear_backward_naive(s, x.data(), w.data(), dy.data(), dx_ref.data(), dw_ref.data(), db_ref.data(), accumulate);
    for (size_t i = 0; i < dx.size(); ++i) EXPECT_NEAR(dx[i], dx_ref[i], 1e-5) << i;
    for (size_t i = 0; i < dw.size(); ++i) EXPECT_NEAR(dw[i], dw_ref[i], 1e-5) << i;
    for (size_t i = 0; i < db.size(); ++i) EXPECT_NEAR(db[i], db_ref[i], 1e-5) << i;
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
  EXPECT_NEAR(loss, softmax_cross_entropy_forward_naive(logits.data(), targets.data(), n, c), 1e-6);
  EXPECT_GE(correct, 0);
  EXPECT_LE(correct, double(n));
  std::vector<float> d(n * c), d_ref(n * c);
  softmax_cross_entropy_backward(logits.data(), targets.data(), n, c, 1.0f / n, d.data());
  softmax_cross_entropy_backward_naive(logits.data(), targets.data(), n, c, 1.0f / n, d_ref.data());
  for (size_t i = 0; i < d.size(); ++i) EXPECT_NEAR(d[i], d_ref[i], 1e-6) << i;
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
  EXPECT_NEAR(softmax_cross_entropy_forward(logits.data(), target.data(), 1, 3), 0.0, 1e-6);
  const std::vector<int32_t> wrong = {1};
  EXPECT_NEAR(softmax_cross_entropy_forward(logits.data(), wrong.data(), 1, 3), 1000.0, 1e-3);
}

}  // namespace
}  // namespace dsgd
