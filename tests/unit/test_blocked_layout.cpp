// The nChw8c activation layout (workloads/layers/blocked_layout, batchnorm_blocked, the
// pooling _blocked forms, and DnnlConv2d with nChw8c operands): each against the CNHW kernels
// or the naive references through the conversion, with the tolerances of test_conv.cpp
// (convolutions: float_sums_close, float_compare.hpp; BN as its CNHW tests), and bitwise the
// same results at 1 and 2 threads.
#include <cblas.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "conv_reference.hpp"
#include "core/errors.hpp"
#include "float_compare.hpp"
#include "grad_check.hpp"
#include "workloads/layers/batchnorm.hpp"
#include "workloads/layers/batchnorm_blocked.hpp"
#include "workloads/layers/blocked_layout.hpp"
#include "workloads/layers/conv2d.hpp"
#include "workloads/layers/conv2d_dnnl.hpp"
#include "workloads/layers/pooling.hpp"
#include "workloads/layers/relu.hpp"

namespace dsgd {
namespace {

using testing::all_near_rel;
using testing::near_rel;

std::vector<float> random_vector(size_t n, unsigned seed) {
  auto v = testing::projection_weights(n, seed);
  for (auto& x : v) x *= 2.0f;  // in [-1, 1)
  return v;
}

// The layout's definition, element by element.
size_t blocked_index(size_t c_total, size_t hw, size_t n, size_t c, size_t p) {
  return ((n * (c_total / 8) + c / 8) * hw + p) * 8 + c % 8;
}

std::vector<float> to_blocked(const std::vector<float>& cnhw, size_t n, size_t c, size_t hw) {
  std::vector<float> out(cnhw.size());
  cnhw_to_nchw8c(cnhw.data(), out.data(), n, c, hw);
  return out;
}
std::vector<float> to_cnhw(const std::vector<float>& blk, size_t n, size_t c, size_t hw) {
  std::vector<float> out(blk.size());
  nchw8c_to_cnhw(blk.data(), out.data(), n, c, hw, false);
  return out;
}

struct Threads {  // sets OpenBLAS's (and so the layer loops') thread count for a scope
  int before = openblas_get_num_threads();
  explicit Threads(int t) { openblas_set_num_threads(t); }
  ~Threads() { openblas_set_num_threads(before); }
};

// Both conversions against the index formula, on pixel counts with and without a multiple
// of 8 (the AVX transposes' scalar tails), and accumulate adding onto what is there.
TEST(BlockedLayout, ConversionsFollowTheDefinition) {
  for (auto [n, c, hw] : {std::array<size_t, 3>{2, 16, 64}, {3, 8, 49}, {1, 24, 5}, {2, 8, 1}}) {
    const auto x = random_vector(n * c * hw, 11);
    const auto b = to_blocked(x, n, c, hw);
    for (size_t i = 0; i < n; ++i)
      for (size_t ch = 0; ch < c; ++ch)
        for (size_t p = 0; p < hw; ++p)
          ASSERT_EQ(b[blocked_index(c, hw, i, ch, p)], x[(ch * n + i) * hw + p]) << n << " " << c << " " << hw;
    EXPECT_EQ(to_cnhw(b, n, c, hw), x);
    std::vector<float> acc(x.size(), 0.5f);
    nchw8c_to_cnhw(b.data(), acc.data(), n, c, hw, true);
    for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(acc[i], 0.5f + x[i]) << i;
    std::vector<float> y(x.size(), 1.0f);
    add_into(y.data(), x.data(), y.size());
    for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(y[i], 1.0f + x[i]) << i;
  }
}

// BN (fused ReLU, relu_affine) on nChw8c against the naive CNHW references, with M values per
// channel over 1024 in one image (a flush mid-image) and 49-pixel images, a large mean in one
// channel (the shifted moments must not cancel), and bitwise the same at 1 and 2 threads.
TEST(BlockedBatchNorm, MatchesNaiveAndDoesNotDependOnThreadCount) {
  for (auto [n, c, hw] : {std::array<size_t, 3>{2, 16, 1300}, {40, 8, 49}}) {
    const size_t m = n * hw;
    const BatchNormShape cs{c, m};
    const BlockedBatchNormShape bs{c, n, hw};
    const BatchNormOptions o;
    auto x = random_vector(c * m, 71), dy = random_vector(c * m, 72);
    for (size_t i = 0; i < x.size(); ++i) x[i] = 0.5f * x[i] + (i < m ? 40.0f : 0.3f);
    std::vector<float> gamma(c), beta(c);
    for (size_t k = 0; k < c; ++k) {
      gamma[k] = 0.5f + 0.1f * float(k);
      beta[k] = 0.05f * float(k) - 0.2f;
    }
    // Reference: naive BN, then ReLU, then the naive backward of both.
    std::vector<float> y_ref(x.size()), mean_ref(c), invstd_ref(c), rm_ref(c, 0.0f), rv_ref(c, 1.0f);
    batchnorm_forward_train_naive(cs, o, x.data(), gamma.data(), beta.data(), y_ref.data(), mean_ref.data(),
                                  invstd_ref.data(), rm_ref.data(), rv_ref.data());
    relu_forward_naive(y_ref.data(), y_ref.data(), y_ref.size());
    std::vector<float> g(x.size()), dx_ref(x.size()), dg_ref(c), db_ref(c);
    relu_backward_naive(y_ref.data(), dy.data(), g.data(), g.size());
    batchnorm_backward_naive(cs, x.data(), gamma.data(), g.data(), dx_ref.data(), dg_ref.data(), db_ref.data());

    const auto xb = to_blocked(x, n, c, hw), dyb = to_blocked(dy, n, c, hw);
    std::vector<float> first_y, first_dx;
    for (int t : {1, 2}) {
      Threads th(t);
      std::vector<float> y(x.size()), mean(c), invstd(c), rm(c, 0.0f), rv(c, 1.0f), affine(2 * c);
      batchnorm_blocked_forward_train(bs, o, xb.data(), gamma.data(), beta.data(), y.data(), mean.data(), invstd.data(),
                                      rm.data(), rv.data(), /*relu=*/true, affine.data());
      const auto y_cnhw = to_cnhw(y, n, c, hw);
      ASSERT_TRUE(all_near_rel(y_cnhw, y_ref, 2e-5, 2e-5));
      for (size_t k = 0; k < c; ++k) {
        EXPECT_NEAR(mean[k], mean_ref[k], 1e-5 * (1 + std::fabs(mean_ref[k])));
        EXPECT_NEAR(invstd[k], invstd_ref[k], 1e-4 * invstd_ref[k]);
        EXPECT_NEAR(rm[k], rm_ref[k], 1e-5 * (1 + std::fabs(rm_ref[k])));
        EXPECT_TRUE(near_rel(rv[k], rv_ref[k], 1e-5, 1e-5)) << k;
      }
      std::vector<float> dx = dyb, dg(c), db(c);  // in place, as the ResNet runs it
      batchnorm_blocked_backward(bs, xb.data(), gamma.data(), mean.data(), invstd.data(), dx.data(), dx.data(),
                                 dg.data(), db.data(), affine.data());
      const auto dx_cnhw = to_cnhw(dx, n, c, hw);
      ASSERT_TRUE(all_near_rel(dx_cnhw, dx_ref, 2e-4, 2e-4));
      for (size_t k = 0; k < c; ++k) {
        EXPECT_NEAR(dg[k], dg_ref[k], 1e-3 * (1 + std::fabs(dg_ref[k])));
        EXPECT_NEAR(db[k], db_ref[k], 1e-3 * (1 + std::fabs(db_ref[k])));
      }
      if (t == 1) {
        first_y = y;
        first_dx = dx;
      } else {
        EXPECT_EQ(y, first_y);
        EXPECT_EQ(dx, first_dx);
      }
      // Evaluation: the affine map with the running statistics, then ReLU, statistics unchanged.
      const std::vector<float> rm_before = rm, rv_before = rv;
      std::vector<float> ye(x.size());
      batchnorm_blocked_forward_eval(bs, o, xb.data(), gamma.data(), beta.data(), rm.data(), rv.data(), ye.data(),
                                     true);
      EXPECT_EQ(rm, rm_before);
      EXPECT_EQ(rv, rv_before);
      for (size_t k = 0; k < c; ++k) {
        const size_t i = blocked_index(c, hw, n - 1, k, hw - 1);
        const float want = std::max(0.0f, gamma[k] * (xb[i] - rm[k]) / std::sqrt(rv[k] + o.eps) + beta[k]);
        EXPECT_NEAR(ye[i], want, 1e-5 * (1 + std::fabs(want)));
      }
    }
    // Without the ReLU: the plain BN backward.
    std::vector<float> y(x.size()), mean(c), invstd(c), dx(x.size()), dg(c), db(c);
    batchnorm_blocked_forward_train(bs, o, xb.data(), gamma.data(), beta.data(), y.data(), mean.data(), invstd.data(),
                                    nullptr, nullptr);
    batchnorm_blocked_backward(bs, xb.data(), gamma.data(), mean.data(), invstd.data(), dyb.data(), dx.data(),
                               dg.data(), db.data());
    batchnorm_backward_naive(cs, x.data(), gamma.data(), dy.data(), dx_ref.data(), dg_ref.data(), db_ref.data());
    const auto dx_cnhw = to_cnhw(dx, n, c, hw);
    ASSERT_TRUE(all_near_rel(dx_cnhw, dx_ref, 2e-4, 2e-4));
  }
}

// The residual join fused with the BN map before it (the ResNet's conv2 + join): forward
// out = max(BN(x) + r, 0) from the statistics-only forward (y null), the evaluation map, and
// the backward with the join's output as the ReLU mask (relu_y), against naive BN, add, ReLU.
TEST(BlockedBatchNorm, FusedJoinMatchesNaive) {
  const size_t n = 6, c = 16, hw = 49, m = n * hw;
  const BatchNormShape cs{c, m};
  const BlockedBatchNormShape bs{c, n, hw};
  const BatchNormOptions o;
  const auto x = random_vector(c * m, 91), r = random_vector(c * m, 92), dy = random_vector(c * m, 93);
  std::vector<float> gamma(c, 0.7f), beta(c, 0.1f);
  // Reference: z = BN(x), out = relu(z + r); backward g = dy·[out > 0] into BN.
  std::vector<float> z(x.size()), mean_ref(c), invstd_ref(c), rm_ref(c, 0.0f), rv_ref(c, 1.0f), out_ref(x.size());
  batchnorm_forward_train_naive(cs, o, x.data(), gamma.data(), beta.data(), z.data(), mean_ref.data(),
                                invstd_ref.data(), rm_ref.data(), rv_ref.data());
  for (size_t i = 0; i < x.size(); ++i) out_ref[i] = std::max(0.0f, z[i] + r[i]);
  std::vector<float> g(x.size()), dx_ref(x.size()), dg_ref(c), db_ref(c);
  relu_backward_naive(out_ref.data(), dy.data(), g.data(), g.size());
  batchnorm_backward_naive(cs, x.data(), gamma.data(), g.data(), dx_ref.data(), dg_ref.data(), db_ref.data());

  const auto xb = to_blocked(x, n, c, hw), rb = to_blocked(r, n, c, hw), dyb = to_blocked(dy, n, c, hw);
  std::vector<float> mean(c), invstd(c), rm(c, 0.0f), rv(c, 1.0f), affine(2 * c), out(x.size());
  batchnorm_blocked_forward_train(bs, o, xb.data(), gamma.data(), beta.data(), nullptr, mean.data(), invstd.data(),
                                  rm.data(), rv.data(), false, affine.data());
  for (size_t k = 0; k < c; ++k) EXPECT_TRUE(near_rel(rm[k], rm_ref[k], 1e-6, 1e-6)) << k;
  batchnorm_blocked_affine_add_relu(bs, xb.data(), affine.data(), rb.data(), out.data());
  const auto out_c = to_cnhw(out, n, c, hw);
  ASSERT_TRUE(all_near_rel(out_c, out_ref, 2e-5, 2e-5));
  std::vector<float> dx(x.size()), dg(c), db(c);
  batchnorm_blocked_backward(bs, xb.data(), gamma.data(), mean.data(), invstd.data(), dyb.data(), dx.data(), dg.data(),
                             db.data(), nullptr, out.data());
  const auto dx_c = to_cnhw(dx, n, c, hw);
  ASSERT_TRUE(all_near_rel(dx_c, dx_ref, 2e-4, 2e-4));
  for (size_t k = 0; k < c; ++k) {
    EXPECT_NEAR(dg[k], dg_ref[k], 1e-3 * (1 + std::fabs(dg_ref[k])));
    EXPECT_NEAR(db[k], db_ref[k], 1e-3 * (1 + std::fabs(db_ref[k])));
  }
  // Evaluation: batchnorm_eval_affine's map equals batchnorm_blocked_forward_eval's.
  std::vector<float> ea(2 * c), ye(x.size()), ye2(x.size()), zero(x.size(), 0.0f);
  batchnorm_eval_affine(c, o, gamma.data(), beta.data(), rm.data(), rv.data(), ea.data());
  batchnorm_blocked_forward_eval(bs, o, xb.data(), gamma.data(), beta.data(), rm.data(), rv.data(), ye.data(), true);
  batchnorm_blocked_affine_add_relu(bs, xb.data(), ea.data(), zero.data(), ye2.data());
  EXPECT_EQ(ye, ye2);
}

TEST(BlockedPooling, MatchesTheCnhwForms) {
  const PoolShape s{16, 3, 49};
  const auto x = random_vector(s.c * s.n * s.hw, 81), dy = random_vector(s.n * s.c, 82);
  std::vector<float> y(s.n * s.c), y_ref(s.n * s.c);
  global_avg_pool_blocked_forward(s, to_blocked(x, s.n, s.c, s.hw).data(), y.data());
  global_avg_pool_forward_naive(s, x.data(), y_ref.data());
  ASSERT_TRUE(all_near_rel(y, y_ref, 1e-6, 1e-6));
  std::vector<float> dx(x.size()), dx_ref(x.size());
  global_avg_pool_blocked_backward(s, dy.data(), dx.data());
  global_avg_pool_backward(s, dy.data(), dx_ref.data());
  EXPECT_EQ(to_cnhw(dx, s.n, s.c, s.hw), dx_ref);
}

// DnnlConv2d with nChw8c operands (the primitives read and write them in place) and mixed
// layouts (a CNHW stem input, a CNHW output): the same contract as with CNHW, against the
// naive reference; accumulate adds onto dx; another x pointer than the forward's is read anew.
TEST(BlockedConv, DnnlMatchesNaiveInEveryLayoutPair) {
  if (!conv2d_dnnl_available()) GTEST_SKIP() << "built without oneDNN";
  using L = ActivationLayout;
  const Conv2dShape shapes[] = {{3, 16, 8, 8, 16, 3, 1, 1}, {2, 16, 8, 8, 32, 3, 2, 1}, {2, 16, 8, 8, 32, 1, 2, 0},
                                {2, 16, 7, 7, 16, 3, 1, 1}, {3, 8, 5, 5, 8, 3, 1, 1},   {2, 32, 14, 14, 64, 3, 2, 1},
                                {2, 3, 8, 8, 16, 3, 1, 1}};
  unsigned seed = 900;
  for (const Conv2dShape& s : shapes) {
    for (auto [in, out] : {std::pair{L::nchw8c, L::nchw8c}, {L::cnhw, L::nchw8c}, {L::nchw8c, L::cnhw}}) {
      if (in == L::nchw8c && s.c_in % 8 != 0) continue;
      const size_t hw = s.h * s.w, hwo = s.h_out() * s.w_out();
      const size_t nx = s.c_in * s.n * hw, ny = s.c_out * s.n * hwo;
      const auto x = random_vector(nx, seed++), w = random_vector(s.weight_count(), seed++);
      const auto dy = random_vector(ny, seed++);
      auto in_l = [&](const std::vector<float>& v) { return in == L::nchw8c ? to_blocked(v, s.n, s.c_in, hw) : v; };
      auto out_l = [&](const std::vector<float>& v) { return out == L::nchw8c ? to_blocked(v, s.n, s.c_out, hwo) : v; };
      auto in_back = [&](const std::vector<float>& v) { return in == L::nchw8c ? to_cnhw(v, s.n, s.c_in, hw) : v; };
      auto out_back = [&](const std::vector<float>& v) { return out == L::nchw8c ? to_cnhw(v, s.n, s.c_out, hwo) : v; };
      const testing::ConvReference ref = testing::conv_reference(s, x, w, dy);
      DnnlConv2d conv(s, in, out);
      const auto xl = in_l(x), dyl = out_l(dy);
      std::vector<float> y(ny);
      conv.forward(xl.data(), w.data(), y.data());
      const auto yc = out_back(y);
      const std::string what = std::to_string(s.c_in) + ">" + std::to_string(s.c_out) + " k" + std::to_string(s.k) +
                               " s" + std::to_string(s.stride) + " layouts " + std::to_string(int(in)) +
                               std::to_string(int(out));
      ASSERT_TRUE(testing::float_sums_close(yc, ref.y, ref.y_abs, ref.k_y)) << "y " << what;
      std::vector<float> dw(w.size()), dx(nx, 7.0f);
      conv.backward_weights(xl.data(), dyl.data(), dw.data());
      conv.backward_input(w.data(), dyl.data(), dx.data(), false);
      ASSERT_TRUE(testing::float_sums_close(dw, ref.dw, ref.dw_abs, ref.k_dw)) << "dw " << what;
      const auto dxc = in_back(dx);
      ASSERT_TRUE(testing::float_sums_close(dxc, ref.dx, ref.dx_abs, ref.k_dx)) << "dx " << what;
      const std::vector<float> acc0(nx, 0.5f);
      std::vector<float> acc = acc0;
      conv.backward_input(w.data(), dyl.data(), acc.data(), true);
      const auto accc = in_back(acc);
      ASSERT_TRUE(testing::float_sums_close(accc, testing::plus(ref.dx, acc0), testing::abs_plus(ref.dx_abs, acc0),
                                            ref.k_dx + 1))
          << "acc dx " << what;
      std::vector<float> x2(x.rbegin(), x.rend()), dw2(w.size());
      const auto x2l = in_l(x2);
      conv.backward_weights(x2l.data(), dyl.data(), dw2.data());
      const testing::ConvReference ref2 = testing::conv_reference(s, x2, w, dy);
      ASSERT_TRUE(testing::float_sums_close(dw2, ref2.dw, ref2.dw_abs, ref2.k_dw)) << "dw2 " << what;
    }
  }
  // nChw8c needs channel counts divisible by 8.
  EXPECT_THROW(DnnlConv2d({2, 3, 8, 8, 16, 3, 1, 1}, ActivationLayout::nchw8c, ActivationLayout::nchw8c), InputError);
  EXPECT_THROW(DnnlConv2d({2, 16, 8, 8, 12, 3, 1, 1}, ActivationLayout::cnhw, ActivationLayout::nchw8c), InputError);
}

}  // namespace
}  // namespace dsgd
