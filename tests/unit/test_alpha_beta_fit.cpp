// Tests of the alpha-beta fit used by `dsgd-bench calibrate` (results/alpha_beta_fit.*):
// recovery of a known link from noisy synthetic sweeps, exactness on noiseless data,
// the non-negativity clamps, refusal of degenerate input, and the nccl-tests bus factors.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/errors.hpp"
#include "core/rng.hpp"
#include "results/alpha_beta_fit.hpp"

namespace dsgd {
namespace {

constexpr double kAlpha = 20e-6;       // 20 us
constexpr double kBandwidth = 1.25e9;  // 10 Gbit/s in bytes per second
constexpr double kBeta = 1.0 / kBandwidth;

// Sizes 4 B .. 256 MiB, x2 (the default calibrate sweep); times from the link with
// multiplicative noise uniform in [-noise, +noise].
std::vector<AlphaBetaPoint> sweep(double alpha, double beta, double noise, uint64_t seed) {
  Rng rng(seed);
  std::vector<AlphaBetaPoint> points;
  for (double bytes = 4; bytes <= 256.0 * 1024 * 1024; bytes *= 2) {
    const double factor = 1.0 + noise * (2.0 * rng.uniform() - 1.0);
    points.push_back({bytes, (alpha + beta * bytes) * factor});
  }
  return points;
}

TEST(AlphaBetaFit, RecoversAKnownLinkFromNoisyTimes) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const AlphaBetaFit fit = alpha_beta_fit(sweep(kAlpha, kBeta, 0.02, seed));
    EXPECT_NEAR(fit.alpha_s, kAlpha, 0.05 * kAlpha) << "seed " << seed;
    EXPECT_NEAR(fit.beta_s_per_byte, kBeta, 0.05 * kBeta) << "seed " << seed;
    EXPECT_NEAR(fit.bandwidth_bytes_per_s, kBandwidth, 0.05 * kBandwidth) << "seed " << seed;
    EXPECT_LT(fit.rel_error, 0.02) << "seed " << seed;  // the noise is at most 2 %
    EXPECT_FALSE(fit.alpha_clamped);
    EXPECT_FALSE(fit.beta_clamped);
  }
}

TEST(AlphaBetaFit, NoiselessDataIsFittedExactly) {
  const AlphaBetaFit fit = alpha_beta_fit(sweep(kAlpha, kBeta, 0.0, 1));
  EXPECT_NEAR(fit.alpha_s, kAlpha, 1e-9 * kAlpha);
  EXPECT_NEAR(fit.beta_s_per_byte, kBeta, 1e-9 * kBeta);
  EXPECT_LT(fit.rel_error, 1e-9);
  EXPECT_NEAR(alpha_beta_predict(fit, 1e6), kAlpha + kBeta * 1e6, 1e-15);
}

TEST(AlphaBetaFit, TwoSizesDetermineTheLine) {
  const AlphaBetaFit fit = alpha_beta_fit({{1000, 1e-5 + 1e-6}, {2000, 1e-5 + 2e-6}});
  EXPECT_NEAR(fit.alpha_s, 1e-5, 1e-15);
  EXPECT_NEAR(fit.beta_s_per_byte, 1e-9, 1e-20);
}

TEST(AlphaBetaFit, NegativeCoefficientsAreClampedToZero) {
  // Pure bandwidth, with the small sizes slightly fast: the free fit's alpha is negative.
  const AlphaBetaFit through_origin = alpha_beta_fit({{1e3, 0.9e-6}, {1e4, 1e-5}, {1e5, 1e-4}});
  EXPECT_TRUE(through_origin.alpha_clamped);
  EXPECT_EQ(through_origin.alpha_s, 0.0);
  EXPECT_GT(through_origin.beta_s_per_byte, 0.0);
  // Time falling with size: no bandwidth term, alpha is the (weighted) mean time.
  const AlphaBetaFit flat = alpha_beta_fit({{1e3, 2e-5}, {1e6, 1e-5}});
  EXPECT_TRUE(flat.beta_clamped);
  EXPECT_EQ(flat.beta_s_per_byte, 0.0);
  EXPECT_TRUE(std::isinf(flat.bandwidth_bytes_per_s));
  EXPECT_GT(flat.alpha_s, 1e-5);
  EXPECT_LT(flat.alpha_s, 2e-5);
}

TEST(AlphaBetaFit, DegenerateInputThrows) {
  EXPECT_THROW(alpha_beta_fit({}), InputError);
  EXPECT_THROW(alpha_beta_fit({{1024, 1e-5}}), InputError);                  // one size
  EXPECT_THROW(alpha_beta_fit({{1024, 1e-5}, {1024, 1.1e-5}}), InputError);  // one size, twice
  EXPECT_THROW(alpha_beta_fit({{1024, 1e-5}, {2048, 0.0}}), Error);          // not positive
  EXPECT_THROW(alpha_beta_fit({{1024, 1e-5}, {2048, std::nan("")}}), Error);
  EXPECT_THROW(alpha_beta_fit({{-1, 1e-5}, {2048, 1e-5}}), Error);
}

}  // namespace
}  // namespace dsgd
