// Tests of the tuner's search arithmetic: expected improvement against numerical integration
// and in its far tail, its limits and monotonicity (tuner/acquisition.*); the censored order
// (tuner/objective.*) as a property over random scores; successive-halving promotions on
// scripted rungs and the Hyperband brackets of Li et al.'s table (tuner/successive_halving.*);
// Latin-hypercube stratification (tuner/space_filling.*); the gradient noise scale on synthetic
// gradients of known G and Σ and the steps/examples trade-off (tuner/noise_scale.*).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "core/errors.hpp"
#include "core/rng.hpp"
#include "tuner/acquisition.hpp"
#include "tuner/noise_scale.hpp"
#include "tuner/objective.hpp"
#include "tuner/space_filling.hpp"
#include "tuner/successive_halving.hpp"

namespace dsgd {
namespace {

// ∫ max(best - f, 0) N(f; mean, sigma²) df by composite Simpson over [min(mean, best) - 12σ, best].
double ei_by_simpson(double mean, double sigma, double best) {
  const double lo = std::min(mean, best) - 12 * sigma, hi = best;
  const int n = 200000;  // even
  const double h = (hi - lo) / n;
  auto f = [&](double x) {
    const double u = (x - mean) / sigma;
    return (best - x) * std::exp(-0.5 * u * u) / (sigma * std::sqrt(2 * M_PI));
  };
  double s = f(lo) + f(hi);
  for (int i = 1; i < n; ++i) s += (i % 2 ? 4 : 2) * f(lo + i * h);
  return s * h / 3;
}

TEST(TunerAcquisition, ExpectedImprovementMatchesSimpson) {
  struct Case {
    double mean, sigma, best;
  };
  for (const Case& c : std::vector<Case>{{0, 1, 0},
                                         {0, 1, 1},
                                         {0, 1, -2},
                                         {1.5, 0.3, 1.0},
                                         {-3, 2, 0.5},
                                         {2.0, 0.5, 4.5},
                                         {0, 1, -5},
                                         {10, 1, 0},
                                         {3.2, 0.05, 3.0}}) {
    const double exact = ei_by_simpson(c.mean, c.sigma, c.best);
    const double ei = acquisition_expected_improvement(c.mean, c.sigma, c.best);
    EXPECT_NEAR(ei, exact, 1e-9 * exact + 1e-300) << c.mean << " " << c.sigma << " " << c.best;
    EXPECT_GT(ei, 0.0);
  }
}

// h(z) = z Φ(z) + φ(z) in long double (64-bit mantissa): loses ~log10(z²) of 19 digits to the
// cancellation, enough to check the continued-fraction tail to 1e-13.
long double h_long(long double z) {
  return z * 0.5L * erfcl(-z / sqrtl(2.0L)) + expl(-0.5L * z * z) / sqrtl(2.0L * 3.14159265358979323846264L);
}

TEST(TunerAcquisition, TailIsAccurateAndContinuous) {
  for (double z = 3.0; z >= -25; z -= 0.25) {
    const long double ref = h_long(z);
    // exp(-z²/2) alone carries a relative error of about z²/2 ulps.
    const double tol = 1e-15 * (10 + z * z);
    EXPECT_NEAR(acquisition_ei_h(z), static_cast<double>(ref), tol * static_cast<double>(ref)) << "z " << z;
    EXPECT_NEAR(acquisition_ei_log_h(z), static_cast<double>(logl(ref)), 1e-12) << "z " << z;
  }
  // Across the switch at z = -2.5.
  for (double z : {-2.5 - 1e-12, -2.5, -2.5 + 1e-12}) {
    const double ref = static_cast<double>(h_long(z));
    EXPECT_NEAR(acquisition_ei_h(z), ref, 1e-14 * ref) << z;
  }
  // Beyond double's range for EI itself, log EI follows the asymptote
  // log h(-t) = log φ(t) - 2 log t + log(1 - 3/t² + 15/t⁴ - 105/t⁶).
  for (double t : {40.0, 100.0, 1e4}) {
    const double asym = -0.5 * t * t - 0.5 * std::log(2 * M_PI) - 2 * std::log(t) +
                        std::log1p(-3 / (t * t) + 15 / std::pow(t, 4) - 105 / std::pow(t, 6));
    EXPECT_NEAR(acquisition_ei_log_h(-t), asym, 1e-9 * std::abs(asym)) << "t " << t;
  }
  EXPECT_TRUE(std::isfinite(acquisition_log_expected_improvement(100.0, 1.0, 0.0)));
  EXPECT_EQ(acquisition_expected_improvement(100.0, 1.0, 0.0), 0.0);  // underflows, never NaN
}

TEST(TunerAcquisition, SigmaToZeroAndHugeZ) {
  EXPECT_EQ(acquisition_expected_improvement(1.0, 0.0, 3.0), 2.0);
  EXPECT_EQ(acquisition_expected_improvement(3.0, 0.0, 1.0), 0.0);
  EXPECT_EQ(acquisition_expected_improvement(3.0, -1.0, 1.0), 0.0);
  for (double sigma : {1e-3, 1e-8, 1e-200, 1e-320}) {
    EXPECT_NEAR(acquisition_expected_improvement(1.0, sigma, 3.0), 2.0, 1e-12) << sigma;
    EXPECT_NEAR(acquisition_expected_improvement(3.0, sigma, 1.0), 0.0, 1e-12) << sigma;
    const double at_tie = acquisition_expected_improvement(1.0, sigma, 1.0);
    EXPECT_NEAR(at_tie, sigma / std::sqrt(2 * M_PI), 1e-15 * sigma + 1e-323) << sigma;  // σ φ(0)
  }
  // z = ±1e300: no NaN, the limits.
  EXPECT_NEAR(acquisition_expected_improvement(0.0, 1e-300, 1.0), 1.0, 1e-15);
  EXPECT_EQ(acquisition_expected_improvement(1.0, 1e-300, 0.0), 0.0);
  EXPECT_EQ(acquisition_log_expected_improvement(1.0, 0.0, 0.0), -INFINITY);
  EXPECT_NEAR(acquisition_log_expected_improvement(0.0, 0.0, 2.0), std::log(2.0), 1e-15);
}

TEST(TunerAcquisition, MonotoneInMeanSigmaAndBest) {
  double prev = INFINITY;
  for (double mean = -6; mean <= 12; mean += 0.05) {  // worse mean, less improvement
    const double ei = acquisition_expected_improvement(mean, 0.7, 0.0);
    const double log_ei = acquisition_log_expected_improvement(mean, 0.7, 0.0);
    EXPECT_LT(log_ei, std::log(prev)) << mean;
    prev = ei;
    if (ei > 0) {
      EXPECT_NEAR(log_ei, std::log(ei), 1e-12 * std::abs(log_ei)) << mean;
    }
  }
  prev = 0;
  for (double sigma = 0.05; sigma <= 10; sigma *= 1.1) {  // z from -20  // more uncertainty, more EI
    const double ei = acquisition_expected_improvement(1.0, sigma, 0.0);
    EXPECT_GT(ei, prev) << sigma;
    prev = ei;
  }
  prev = 0;
  for (double best = -5; best <= 5; best += 0.1) {  // a worse incumbent, more to gain
    const double ei = acquisition_expected_improvement(0.0, 1.0, best);
    EXPECT_GT(ei, prev) << best;
    EXPECT_GE(ei, std::max(best, 0.0));  // EI >= the improvement of the mean (Jensen)
    prev = ei;
  }
}

TEST(TunerAcquisition, WeightedByReachProbability) {
  const double ei = acquisition_expected_improvement(0.2, 0.5, 0.4);
  EXPECT_DOUBLE_EQ(acquisition_weighted_ei(0.2, 0.5, 0.4, 0.25), 0.25 * ei);
  EXPECT_EQ(acquisition_weighted_ei(0.2, 0.5, 0.4, 0.0), 0.0);
  EXPECT_DOUBLE_EQ(acquisition_weighted_ei(0.2, 0.5, 0.4, 1.7), ei);  // clamped
  EXPECT_EQ(acquisition_weighted_ei(0.2, 0.5, 0.4, -1.0), 0.0);
  EXPECT_NEAR(acquisition_log_weighted_ei(0.2, 0.5, 0.4, 0.25), std::log(0.25 * ei), 1e-12);
  EXPECT_EQ(acquisition_log_weighted_ei(0.2, 0.5, 0.4, 0.0), -INFINITY);
}

// ---- the censored order ---------------------------------------------------------------------

TEST(TunerObjective, CensoredNeverAboveAReachedOneAndTheOrderIsStrictWeak) {
  Rng rng(2024);
  std::vector<TrialScore> s;
  for (int i = 0; i < 120; ++i) {
    TrialScore t;
    t.reached = rng.uniform() < 0.5;
    t.time_s = std::floor(rng.uniform() * 8) * 10;  // few distinct values: many ties
    t.progress = std::floor(rng.uniform() * 4) / 4;
    s.push_back(t);
  }
  s.push_back({false, std::nan(""), 0.5});
  s.push_back({true, std::nan(""), 0.0});
  s.push_back({false, 5.0, std::nan("")});
  const size_t n = s.size();
  for (size_t i = 0; i < n; ++i) {
    EXPECT_FALSE(objective_better(s[i], s[i]));
    for (size_t j = 0; j < n; ++j) {
      if (!s[i].reached && s[j].reached) {
        EXPECT_FALSE(objective_better(s[i], s[j])) << i << " " << j;  // whatever the times
        EXPECT_TRUE(objective_better(s[j], s[i])) << i << " " << j;
      }
      if (s[i].reached && s[j].reached && s[i].time_s < s[j].time_s) {
        EXPECT_TRUE(objective_better(s[i], s[j]));
      }
      if (objective_better(s[i], s[j])) {
        EXPECT_FALSE(objective_better(s[j], s[i]));
      }
    }
  }
  // Transitivity of the order and of incomparability, on all triples of a subset.
  for (size_t i = 0; i < 40; ++i)
    for (size_t j = 0; j < 40; ++j)
      for (size_t k = 0; k < 40; ++k) {
        if (objective_better(s[i], s[j]) && objective_better(s[j], s[k])) {
          EXPECT_TRUE(objective_better(s[i], s[k]));
        }
        auto eq = [&](size_t a, size_t b) { return !objective_better(s[a], s[b]) && !objective_better(s[b], s[a]); };
        if (eq(i, j) && eq(j, k)) {
          EXPECT_TRUE(eq(i, k));
        }
      }
}

TEST(TunerObjective, CensoredRankByProgressThenSoonerFirst) {
  const TrialScore reached_slow{true, 500, 0}, censored_fast{false, 10, 0.99};
  EXPECT_TRUE(objective_better(reached_slow, censored_fast));
  const TrialScore near{false, 100, 0.8}, far{false, 100, 0.6};
  EXPECT_TRUE(objective_better(near, far));
  // Equal progress: the trial that got as far in less time first (docs/tuner_math.md).
  const TrialScore same_progress_shorter{false, 60, 0.8};
  EXPECT_TRUE(objective_better(same_progress_shorter, near));
  EXPECT_FALSE(objective_better(near, same_progress_shorter));
  // A NaN elapsed time is the worst of its progress, as a NaN time-to-target is of the reached.
  EXPECT_TRUE(objective_better(near, TrialScore{false, std::nan(""), 0.8}));
  const std::vector<size_t> order = objective_rank({far, censored_fast, near, reached_slow, {true, 20, 0}});
  EXPECT_EQ(order, (std::vector<size_t>{4, 3, 1, 2, 0}));
}

// "A censored trial never ranks above a finished one with a smaller time" — nor above any
// finished one, whatever its progress and elapsed time, with the tie-break in either direction.
TEST(TunerObjective, CensoredNeverAboveAFinishedOneWithASmallerTime) {
  for (double finished : {0.001, 1.0, 50.0, 1e6})
    for (double elapsed : {0.0, 0.0005, 2.0, 49.0, 50.0, 51.0, 1e9})
      for (double progress : {-1e30, 0.0, 0.5, 0.999, 1.0}) {
        const TrialScore reached{true, finished, 0.0}, censored{false, elapsed, progress};
        EXPECT_TRUE(objective_better(reached, censored)) << finished << " " << elapsed << " " << progress;
        EXPECT_FALSE(objective_better(censored, reached)) << finished << " " << elapsed << " " << progress;
      }
}

// ---- successive halving and Hyperband -------------------------------------------------------

std::vector<int64_t> promote(std::vector<RungEntry> rung, double eta, double margin) {
  return successive_halving_promote(rung, eta, margin);
}

TEST(TunerHalving, PromotesTheBestThirdTiesById) {
  std::vector<RungEntry> rung;
  const double times[9] = {50, 20, 90, 20, 70, 30, 20, 60, 80};
  for (int i = 0; i < 9; ++i) rung.push_back({100 + i, true, times[i], 0});
  // Three trials tie at 20 s: the best ceil(9/3) = 3 are exactly those, in id order.
  EXPECT_EQ(promote(rung, 3, 0), (std::vector<int64_t>{101, 103, 106}));
  // Two slots for three tied: ids 101 and 103, 106 waits (margin 0 keeps exactly ceil(n/eta)).
  rung.pop_back();  // 8 entries, eta 4 → 2
  EXPECT_EQ(promote(rung, 4, 0), (std::vector<int64_t>{101, 103}));
  // The input order does not matter.
  std::vector<RungEntry> shuffled = rung;
  Rng rng(5);
  rng.shuffle(shuffled.data(), shuffled.size());
  EXPECT_EQ(promote(shuffled, 4, 0), promote(rung, 4, 0));
  // ceil: 10 entries with eta 3 keep 4.
  rung.push_back({200, true, 95, 0});
  rung.push_back({201, true, 96, 0});
  EXPECT_EQ(promote(rung, 3, 0).size(), 4u);
}

TEST(TunerHalving, CensoredRankAfterReached) {
  // A censored trial that stopped early (time 15 < every reached time) still ranks after them.
  const std::vector<RungEntry> rung = {
      {1, true, 80, 0}, {2, false, 15, 0.95}, {3, true, 60, 0}, {4, false, 100, 0.70}, {5, false, 100, 0.90}};
  EXPECT_EQ(promote(rung, 2.5, 0), (std::vector<int64_t>{3, 1}));
  // Three slots: the third is the censored with more progress.
  EXPECT_EQ(promote(rung, 5.0 / 3.0, 0), (std::vector<int64_t>{3, 1, 2}));
  // All censored: by progress.
  const std::vector<RungEntry> censored = {{1, false, 100, 0.5}, {2, false, 100, 0.7}, {3, false, 100, 0.6}};
  EXPECT_EQ(promote(censored, 3, 0), (std::vector<int64_t>{2}));
}

TEST(TunerHalving, MarginKeepsANearTie) {
  const std::vector<RungEntry> rung = {{1, true, 10.0, 0}, {2, true, 10.5, 0}, {3, true, 10.9, 0},
                                       {4, true, 12.0, 0}, {5, true, 20.0, 0}, {6, false, 30.0, 0.9}};
  EXPECT_EQ(promote(rung, 3, 0), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(promote(rung, 3, 0.05), (std::vector<int64_t>{1, 2, 3}));        // 10.9 <= 10.5 · 1.05
  EXPECT_EQ(promote(rung, 3, 0.15), (std::vector<int64_t>{1, 2, 3, 4}));     // 12 <= 12.075
  EXPECT_EQ(promote(rung, 3, 10.0), (std::vector<int64_t>{1, 2, 3, 4, 5}));  // never the censored one
  // The margin on censored progress: p >= p_last - margin |p_last|.
  const std::vector<RungEntry> censored = {
      {1, false, 100, 0.80}, {2, false, 100, 0.79}, {3, false, 100, 0.70}, {4, false, 100, 0.50}};
  EXPECT_EQ(promote(censored, 4, 0.02), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(promote(censored, 4, 0.0), (std::vector<int64_t>{1}));
}

TEST(TunerHalving, RejectsBadArguments) {
  const std::vector<RungEntry> dup = {{1, true, 10, 0}, {1, true, 12, 0}};
  EXPECT_THROW(successive_halving_promote(dup, 3, 0), Error);
  EXPECT_THROW(successive_halving_promote({{1, true, 1, 0}}, 1.0, 0), Error);
  EXPECT_THROW(successive_halving_promote({{1, true, 1, 0}}, 3, -0.1), Error);
  EXPECT_TRUE(successive_halving_promote({}, 3, 0).empty());
  EXPECT_THROW((HalvingPlan{0, 10, 3}.rung_budgets()), Error);
  EXPECT_THROW((HalvingPlan{10, 5, 3}.rung_budgets()), Error);
  EXPECT_THROW((HalvingPlan{1, 10, 1}.rung_budgets()), Error);
}

TEST(TunerHalving, HyperbandTableOfLiEtAl) {
  // Li et al. (2018), Table 1: R = 81, eta = 3.
  const std::vector<HyperbandBracket> b = hyperband_brackets({1, 81, 3});
  ASSERT_EQ(b.size(), 5u);
  const int n[5] = {81, 34, 15, 8, 5};
  const double r[5] = {1, 3, 9, 27, 81};
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(b[i].configs, n[i]) << i;
    EXPECT_DOUBLE_EQ(b[i].start_budget_s, r[i]) << i;
    EXPECT_EQ(b[i].rungs, 5 - i) << i;
  }
  // Each bracket's rungs, as the table lists them.
  EXPECT_EQ(successive_halving_rung_sizes(81, 5, 3), (std::vector<int>{81, 27, 9, 3, 1}));
  EXPECT_EQ(successive_halving_rung_sizes(34, 4, 3), (std::vector<int>{34, 11, 3, 1}));
  EXPECT_EQ(successive_halving_rung_sizes(15, 3, 3), (std::vector<int>{15, 5, 1}));
  EXPECT_EQ(successive_halving_rung_sizes(8, 2, 3), (std::vector<int>{8, 2}));
  EXPECT_EQ(successive_halving_rung_sizes(5, 1, 3), (std::vector<int>{5}));
  // In seconds: the same shape scaled.
  const std::vector<HyperbandBracket> s = hyperband_brackets({10, 810, 3});
  ASSERT_EQ(s.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(s[i].configs, n[i]);
    EXPECT_NEAR(s[i].start_budget_s, 10 * r[i], 1e-9);
  }
  // eta = 2, R = 8 (s_max = 3, B = 32): n = ceil(4·8/4), ceil(4·4/3), ceil(4·2/2), ceil(4/1).
  const std::vector<HyperbandBracket> e2 = hyperband_brackets({1, 8, 2});
  ASSERT_EQ(e2.size(), 4u);
  EXPECT_EQ(e2[0].configs, 8);
  EXPECT_EQ(e2[1].configs, 6);
  EXPECT_EQ(e2[2].configs, 4);
  EXPECT_EQ(e2[3].configs, 4);
}

TEST(TunerHalving, RungBudgets) {
  EXPECT_EQ((HalvingPlan{1, 81, 3}.rung_budgets()), (std::vector<double>{1, 3, 9, 27, 81}));
  EXPECT_EQ((HalvingPlan{5, 5, 3}.rung_budgets()), (std::vector<double>{5}));
  // Not a power of eta: counted down from max, the first in [min, min·eta).
  const std::vector<double> b = HalvingPlan{1, 10, 3}.rung_budgets();
  ASSERT_EQ(b.size(), 3u);
  EXPECT_NEAR(b[0], 10.0 / 9, 1e-12);
  EXPECT_NEAR(b[1], 10.0 / 3, 1e-12);
  EXPECT_EQ(b[2], 10.0);
  // A non-integer eta whose powers round: 1.5^4 = 5.0625.
  EXPECT_EQ((HalvingPlan{2, 2 * 5.0625, 1.5}.rung_budgets()).size(), 5u);
}

// ---- space filling --------------------------------------------------------------------------

TEST(TunerSpaceFilling, EachStratumOncePerDimension) {
  for (int n : {1, 2, 7, 30}) {
    const Eigen::MatrixXd x = space_filling_latin_hypercube(n, 4, 123);
    ASSERT_EQ(x.rows(), n);
    ASSERT_EQ(x.cols(), 4);
    for (int k = 0; k < 4; ++k) {
      std::set<int> strata;
      for (int i = 0; i < n; ++i) {
        ASSERT_GE(x(i, k), 0.0);
        ASSERT_LT(x(i, k), 1.0);
        strata.insert(static_cast<int>(std::floor(x(i, k) * n)));
      }
      EXPECT_EQ(static_cast<int>(strata.size()), n) << "n " << n << " dim " << k;
    }
  }
}

TEST(TunerSpaceFilling, DeterministicPerSeedAndMaximin) {
  const Eigen::MatrixXd a = space_filling_latin_hypercube(12, 3, 9), b = space_filling_latin_hypercube(12, 3, 9);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, space_filling_latin_hypercube(12, 3, 10));
  // 64 candidates spread out further than plain LHS does on average.
  double plain = 0;
  for (uint64_t seed = 0; seed < 20; ++seed)
    plain += space_filling_min_distance(space_filling_latin_hypercube(12, 3, seed, 1));
  plain /= 20;
  double maximin = 0;
  for (uint64_t seed = 0; seed < 20; ++seed)
    maximin += space_filling_min_distance(space_filling_latin_hypercube(12, 3, seed, 64));
  maximin /= 20;
  EXPECT_GT(maximin, 1.3 * plain);
  EXPECT_THROW(space_filling_latin_hypercube(0, 3, 1), Error);
}

// ---- gradient noise scale -------------------------------------------------------------------

TEST(TunerNoiseScale, EstimatorsAreExactOnExpectedNorms) {
  // E|G_B|² = |G|² + tr Σ / B: the estimators invert it exactly.
  const double g2 = 0.8, tr = 40.0;
  const NoiseScaleEstimate e = noise_scale_estimate(16, g2 + tr / 16, 256, g2 + tr / 256);
  EXPECT_NEAR(e.grad_sq, g2, 1e-12);
  EXPECT_NEAR(e.trace_sigma, tr, 1e-10);
  EXPECT_NEAR(e.b_simple, 50.0, 1e-10);
  EXPECT_TRUE(e.valid);
  // Noise-dominated measurement: |G|² comes out <= 0, B_simple infinite, flagged.
  const NoiseScaleEstimate bad = noise_scale_estimate(16, 3.0, 256, 0.1);
  EXPECT_FALSE(bad.valid);
  EXPECT_TRUE(std::isinf(bad.b_simple));
  EXPECT_THROW(noise_scale_estimate(32, 1, 16, 1), Error);
  EXPECT_THROW(noise_scale_estimate(16, -1, 32, 1), Error);
  EXPECT_FALSE(NoiseScaleAccumulator().estimate().valid);
  // The accumulator averages each estimator, then divides: (0.8 + 1.2)/2 and (40 + 80)/2.
  NoiseScaleAccumulator acc;
  acc.add(16, 0.8 + 40.0 / 16, 256, 0.8 + 40.0 / 256);
  acc.add(32, 1.2 + 80.0 / 32, 128, 1.2 + 80.0 / 128);
  const NoiseScaleEstimate m = acc.estimate();
  EXPECT_EQ(acc.count(), 2);
  EXPECT_NEAR(m.grad_sq, 1.0, 1e-12);
  EXPECT_NEAR(m.trace_sigma, 60.0, 1e-10);
  EXPECT_NEAR(m.b_simple, 60.0, 1e-10);  // not the mean of the two ratios (50 and 66.7)
}

TEST(TunerNoiseScale, RecoversKnownGAndSigmaFromSyntheticGradients) {
  // Per-example gradients g = G + ξ, ξ ~ N(0, diag Σ), d = 50, |G|² = 1, tr Σ = 50: B_noise = 50.
  const int d = 50, b_small = 8, b_big = 64, pairs = 4000;
  std::vector<double> G(d), sd(d);
  double trace = 0;
  for (int k = 0; k < d; ++k) {
    G[k] = (k % 2 ? 1.0 : -1.0) / std::sqrt(static_cast<double>(d));
    const double var = 0.5 + static_cast<double>(k) / (d - 1);
    sd[k] = std::sqrt(var);
    trace += var;
  }
  Rng rng(77);
  NoiseScaleAccumulator acc;
  std::vector<double> sum(d);
  auto batch_norm_sq = [&](int B) {
    std::fill(sum.begin(), sum.end(), 0.0);
    for (int i = 0; i < B; ++i)
      for (int k = 0; k < d; ++k) sum[k] += G[k] + sd[k] * rng.normal();
    double s = 0;
    for (int k = 0; k < d; ++k) s += (sum[k] / B) * (sum[k] / B);
    return s;
  };
  for (int p = 0; p < pairs; ++p) {
    const double small = batch_norm_sq(b_small);
    const double big = batch_norm_sq(b_big);
    acc.add(b_small, small, b_big, big);
  }
  const NoiseScaleEstimate e = acc.estimate();
  EXPECT_EQ(acc.count(), pairs);
  // Standard errors at these sizes: about 0.5 % for each; 3 % is six of them.
  EXPECT_NEAR(e.grad_sq, 1.0, 0.03);
  EXPECT_NEAR(e.trace_sigma, trace, 0.03 * trace);
  EXPECT_NEAR(e.b_simple, trace, 0.05 * trace);
  EXPECT_TRUE(e.valid);
}

TEST(TunerNoiseScale, StepsExamplesTradeoff) {
  const double s_min = 1000, b_noise = 256, e_min = s_min * b_noise;
  EXPECT_DOUBLE_EQ(noise_scale_steps(s_min, b_noise, b_noise), 2 * s_min);  // at B_crit: twice both
  EXPECT_DOUBLE_EQ(noise_scale_examples(e_min, b_noise, b_noise), 2 * e_min);
  for (double B : {8.0, 64.0, 256.0, 4096.0}) {
    const double S = noise_scale_steps(s_min, b_noise, B), E = noise_scale_examples(e_min, b_noise, B);
    EXPECT_NEAR((S / s_min - 1) * (E / e_min - 1), 1.0, 1e-12) << B;
    EXPECT_NEAR(E, S * B, 1e-9 * E) << B;  // examples = steps × batch
    EXPECT_NEAR(noise_scale_min_steps(S, b_noise, B), s_min, 1e-9);
  }
  // From a probe at batch 64 to batch 1024.
  const double probe = noise_scale_steps(s_min, b_noise, 64);
  EXPECT_NEAR(noise_scale_steps_from_reference(probe, 64, b_noise, 1024), noise_scale_steps(s_min, b_noise, 1024),
              1e-9);
  EXPECT_THROW(noise_scale_steps(s_min, 0, 64), Error);
}

}  // namespace
}  // namespace dsgd
