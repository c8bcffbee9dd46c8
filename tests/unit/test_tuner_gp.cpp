// Tests of the tuner's Gaussian process (tuner/gaussian_process.*): the Matérn 5/2 kernel
// against hand values, posterior mean / variance and the log marginal likelihood on a 3-point
// data set against an independent computation (the 3x3 inverse and determinant by cofactors),
// the LML gradient against central finite differences, the fit (raises the LML over every start
// it could have taken, stays in its box, finds the relevant dimension, predicts held-out points),
// interpolation, reversion to the prior far from data, jitter on a singular covariance,
// determinism per seed, and the time of a fit at n = 100, d = 5.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "core/errors.hpp"
#include "core/rng.hpp"
#include "tuner/gaussian_process.hpp"

namespace dsgd {
namespace {

constexpr double kPi = 3.14159265358979323846;

// The Matérn 5/2 kernel in one dimension, written out again independently of the library.
double matern_1d(double a, double b, double l, double sf2) {
  const double r = std::abs(a - b) / l;
  return sf2 * (1 + std::sqrt(5.0) * r + 5.0 / 3.0 * r * r) * std::exp(-std::sqrt(5.0) * r);
}

using Mat3 = std::array<std::array<double, 3>, 3>;

double det3(const Mat3& m) {
  return m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
         m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
}

// Inverse by the adjugate: inv[i][j] = cofactor(j, i) / det.
Mat3 inv3(const Mat3& m) {
  const double det = det3(m);
  Mat3 r{};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      const int r0 = (j + 1) % 3, r1 = (j + 2) % 3, c0 = (i + 1) % 3, c1 = (i + 2) % 3;
      r[i][j] = (m[r0][c0] * m[r1][c1] - m[r0][c1] * m[r1][c0]) / det;
    }
  return r;
}

GpHyper hyper_1d(double l, double sf2, double sn2) {
  GpHyper h;
  h.length_scales = Eigen::VectorXd::Constant(1, l);
  h.signal_variance = sf2;
  h.noise_variance = sn2;
  return h;
}

TEST(TunerGp, MaternKernelMatchesHandValues) {
  GpHyper h = hyper_1d(0.5, 2.0, 1e-4);
  Eigen::VectorXd a(1), b(1);
  a << 0.2;
  b << 0.7;  // distance = l: (1 + √5 + 5/3) e^-√5
  EXPECT_NEAR(gp_matern52(a, b, h), 2.0 * 0.5239941088318203, 1e-15);
  b << 0.45;  // distance = l/2
  EXPECT_NEAR(gp_matern52(a, b, h), 2.0 * 0.8286491424181253, 1e-15);
  EXPECT_DOUBLE_EQ(gp_matern52(a, a, h), 2.0);
  // ARD: only the scaled distance matters.
  GpHyper h2;
  h2.length_scales = Eigen::Vector2d(0.5, 4.0);
  h2.signal_variance = 1.0;
  Eigen::Vector2d p(0, 0), q(0.3, 0.0), r(0.0, 2.4);
  EXPECT_NEAR(gp_matern52(p, q, h2), gp_matern52(p, r, h2), 1e-15);
}

// Three points in 1-D, fixed hyperparameters: posterior and LML by hand.
struct Tiny {
  std::array<double, 3> x{0.1, 0.4, 0.9};
  std::array<double, 3> y{1.0, 2.5, 0.7};
  std::array<double, 3> prior{0.2, 0.4, 0.1};
  double l = 0.3, sf2 = 1.3, sn2 = 0.01;
  double m = 0, s = 1;
  std::array<double, 3> z{};
  Mat3 K{}, Kinv{};
  Tiny() {
    std::array<double, 3> r{};
    for (int i = 0; i < 3; ++i) r[i] = y[i] - prior[i];
    m = (r[0] + r[1] + r[2]) / 3;
    s = std::sqrt(((r[0] - m) * (r[0] - m) + (r[1] - m) * (r[1] - m) + (r[2] - m) * (r[2] - m)) / 3);
    for (int i = 0; i < 3; ++i) z[i] = (r[i] - m) / s;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) K[i][j] = matern_1d(x[i], x[j], l, sf2) + (i == j ? sn2 : 0.0);
    Kinv = inv3(K);
  }
  void fit(GaussianProcess& gp) const {
    Eigen::MatrixXd X(3, 1);
    Eigen::VectorXd Y(3), P(3);
    for (int i = 0; i < 3; ++i) {
      X(i, 0) = x[i];
      Y[i] = y[i];
      P[i] = prior[i];
    }
    const GpHyper h = hyper_1d(l, sf2, sn2);
    gp.fit(X, Y, P, 1, &h);
  }
};

TEST(TunerGp, PosteriorMatchesDirectInverseOnThreePoints) {
  const Tiny t;
  GaussianProcess gp;
  t.fit(gp);
  EXPECT_NEAR(gp.y_offset(), t.m, 1e-15);
  EXPECT_NEAR(gp.y_scale(), t.s, 1e-15);
  EXPECT_EQ(gp.jitter(), 0.0);
  for (double xs : {0.0, 0.25, 0.4, 0.6, 1.0}) {
    const double prior_at = 0.3 * xs;
    std::array<double, 3> k{};
    for (int i = 0; i < 3; ++i) k[i] = matern_1d(t.x[i], xs, t.l, t.sf2);
    double mean_z = 0, quad = 0;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) {
        mean_z += k[i] * t.Kinv[i][j] * t.z[j];
        quad += k[i] * t.Kinv[i][j] * k[j];
      }
    const double mean = prior_at + t.m + t.s * mean_z;
    const double var = t.s * t.s * (t.sf2 - quad);
    const GpPrediction p = gp.predict(Eigen::VectorXd::Constant(1, xs), prior_at);
    EXPECT_NEAR(p.mean, mean, 1e-12 * (1 + std::abs(mean))) << "x " << xs;
    EXPECT_NEAR(p.variance, var, 1e-12 * (1 + var)) << "x " << xs;
    EXPECT_GT(p.variance, 0.0);
  }
}

TEST(TunerGp, LogMarginalLikelihoodMatchesHandComputation) {
  const Tiny t;
  GaussianProcess gp;
  t.fit(gp);
  double quad = 0;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) quad += t.z[i] * t.Kinv[i][j] * t.z[j];
  const double lml_z = -0.5 * quad - 0.5 * std::log(det3(t.K)) - 1.5 * std::log(2 * kPi);
  // The reported value is the density of y itself: the change of variables z = (r - m)/s.
  EXPECT_NEAR(gp.log_marginal_likelihood(), lml_z - 3 * std::log(t.s), 1e-12);
  Eigen::MatrixXd X(3, 1);
  Eigen::VectorXd z(3);
  for (int i = 0; i < 3; ++i) {
    X(i, 0) = t.x[i];
    z[i] = t.z[i];
  }
  EXPECT_NEAR(gp_log_marginal_likelihood(X, z, hyper_1d(t.l, t.sf2, t.sn2)), lml_z, 1e-12);
}

// A smooth 2-D test function with one nearly irrelevant input.
double test_function(double a, double b) {
  return std::sin(6.0 * a) + 0.5 * a * a + 0.05 * b;
}

void make_data(int n, uint64_t seed, Eigen::MatrixXd& X, Eigen::VectorXd& y, double noise = 0.0) {
  Rng rng(seed);
  X.resize(n, 2);
  y.resize(n);
  for (int i = 0; i < n; ++i) {
    X(i, 0) = rng.uniform();
    X(i, 1) = rng.uniform();
    y[i] = test_function(X(i, 0), X(i, 1)) + noise * rng.normal();
  }
}

TEST(TunerGp, LmlGradientMatchesFiniteDifferences) {
  Eigen::MatrixXd X;
  Eigen::VectorXd y;
  make_data(9, 7, X, y, 0.05);
  const Eigen::VectorXd z = (y.array() - y.mean()).matrix() / std::sqrt((y.array() - y.mean()).square().mean());
  const std::vector<std::array<double, 4>> cases = {
      {0.3, 0.8, 1.0, 1e-2}, {0.05, 2.0, 0.5, 1e-4}, {1.5, 0.2, 3.0, 0.3}, {0.2, 0.2, 1.0, 1e-6}};
  for (const auto& c : cases) {
    GpHyper h;
    h.length_scales = Eigen::Vector2d(c[0], c[1]);
    h.signal_variance = c[2];
    h.noise_variance = c[3];
    Eigen::VectorXd grad;
    const double f0 = gp_log_marginal_likelihood(X, z, h, &grad);
    ASSERT_TRUE(std::isfinite(f0));
    ASSERT_EQ(grad.size(), 4);
    const Eigen::VectorXd theta = gp_pack_log_params(h);
    for (int j = 0; j < 4; ++j) {
      const double step = 1e-5;
      Eigen::VectorXd tp = theta, tm = theta;
      tp[j] += step;
      tm[j] -= step;
      const double fd = (gp_log_marginal_likelihood(X, z, gp_unpack_log_params(tp)) -
                         gp_log_marginal_likelihood(X, z, gp_unpack_log_params(tm))) /
                        (2 * step);
      EXPECT_NEAR(grad[j], fd, 1e-6 * (1 + std::abs(fd))) << "param " << j << " case l=" << c[0] << "," << c[1];
    }
  }
}

TEST(TunerGp, FitRaisesTheLmlOverItsStartsAndStaysInTheBox) {
  Eigen::MatrixXd X;
  Eigen::VectorXd y;
  make_data(25, 11, X, y, 0.02);
  GaussianProcess gp;
  gp.fit(X, y, Eigen::VectorXd::Zero(25), 3);
  EXPECT_EQ(gp.fit_starts(), 3 + gp.options().random_starts);
  const Eigen::VectorXd z = (y.array() - gp.y_offset()).matrix() / gp.y_scale();
  const double fitted = gp_log_marginal_likelihood(X, z, gp.hyper());
  // The LML at the fitted point against the fixed starts (median heuristic ~ 0.5 here,
  // the smooth and the wiggly start) and a few other plausible points: the fit beats them all.
  for (const auto& p : std::vector<std::array<double, 3>>{
           {0.5, 1.0, 1e-2}, {1.0, 1.0, 1e-3}, {0.1, 1.0, 1e-3}, {0.3, 1.0, 1e-2}, {2.0, 5.0, 1e-4}}) {
    GpHyper h;
    h.length_scales = Eigen::VectorXd::Constant(2, p[0]);
    h.signal_variance = p[1];
    h.noise_variance = p[2];
    EXPECT_GT(fitted, gp_log_marginal_likelihood(X, z, h) + 1e-3) << "start l=" << p[0];
  }
  // The reported LML is that of z shifted by the standardization.
  EXPECT_NEAR(gp.log_marginal_likelihood(), fitted - 25 * std::log(gp.y_scale()), 1e-9);
  const GpFitOptions& o = gp.options();
  for (int k = 0; k < 2; ++k) {
    EXPECT_GE(gp.hyper().length_scales[k], o.length_scale_min * (1 - 1e-12));
    EXPECT_LE(gp.hyper().length_scales[k], o.length_scale_max * (1 + 1e-12));
  }
  EXPECT_GE(gp.hyper().noise_variance, o.noise_variance_min * (1 - 1e-12));
  // ARD: the input that barely matters (slope 0.05 against sin(6a)) gets the longer scale.
  EXPECT_GT(gp.hyper().length_scales[1], 3 * gp.hyper().length_scales[0]);
  // And the fitted model predicts held-out points of the function.
  Rng rng(99);
  double sq = 0;
  for (int i = 0; i < 200; ++i) {
    const Eigen::Vector2d x(rng.uniform(), rng.uniform());
    const double e = gp.predict(x, 0.0).mean - test_function(x[0], x[1]);
    sq += e * e;
  }
  EXPECT_LT(std::sqrt(sq / 200), 0.05);  // the function's range is about 2
}

// The fit against an exhaustive grid over the whole box on a 1-D problem: no grid point beats it.
TEST(TunerGp, FitBeatsAGridSearchOverTheBox) {
  Rng rng(31);
  const int n = 15;
  Eigen::MatrixXd X(n, 1);
  Eigen::VectorXd y(n);
  for (int i = 0; i < n; ++i) {
    X(i, 0) = rng.uniform();
    y[i] = std::sin(9.0 * X(i, 0)) + 0.1 * rng.normal();
  }
  GaussianProcess gp;
  gp.fit(X, y, Eigen::VectorXd::Zero(n), 1);
  const Eigen::VectorXd z = (y.array() - gp.y_offset()).matrix() / gp.y_scale();
  const double fitted = gp_log_marginal_likelihood(X, z, gp.hyper());
  const GpFitOptions& o = gp.options();
  double grid_best = -INFINITY;
  const int steps = 24;
  auto at = [&](double lo, double hi, int i) {
    return std::exp(std::log(lo) + (std::log(hi) - std::log(lo)) * i / steps);
  };
  for (int a = 0; a <= steps; ++a)
    for (int b = 0; b <= steps; ++b)
      for (int c = 0; c <= steps; ++c) {
        const GpHyper h =
            hyper_1d(at(o.length_scale_min, o.length_scale_max, a), at(o.signal_variance_min, o.signal_variance_max, b),
                     at(o.noise_variance_min, o.noise_variance_max, c));
        grid_best = std::max(grid_best, gp_log_marginal_likelihood(X, z, h));
      }
  EXPECT_GE(fitted, grid_best - 1e-9);
  EXPECT_LT(fitted, grid_best + 1.0);  // and the grid is fine enough to come close
}

TEST(TunerGp, FitIsDeterministicPerSeed) {
  Eigen::MatrixXd X;
  Eigen::VectorXd y;
  make_data(20, 5, X, y, 0.1);
  const Eigen::VectorXd prior = X.col(0) * 0.5;
  GaussianProcess a, b;
  a.fit(X, y, prior, 42);
  b.fit(X, y, prior, 42);
  for (int k = 0; k < 2; ++k) EXPECT_EQ(a.hyper().length_scales[k], b.hyper().length_scales[k]);
  EXPECT_EQ(a.hyper().signal_variance, b.hyper().signal_variance);
  EXPECT_EQ(a.hyper().noise_variance, b.hyper().noise_variance);
  EXPECT_EQ(a.log_marginal_likelihood(), b.log_marginal_likelihood());
  const Eigen::Vector2d x(0.3, 0.6);
  EXPECT_EQ(a.predict(x, 0.15).mean, b.predict(x, 0.15).mean);
  EXPECT_EQ(a.predict(x, 0.15).variance, b.predict(x, 0.15).variance);
}

TEST(TunerGp, WarmStartReachesTheSameOptimum) {
  Eigen::MatrixXd X;
  Eigen::VectorXd y;
  make_data(30, 12, X, y, 0.05);
  GaussianProcess cold;
  cold.fit(X, y, Eigen::VectorXd::Zero(30), 1);
  // Only the fixed starts and the warm start (the previous optimum).
  GpFitOptions o;
  o.random_starts = 0;
  o.extra_starts = {cold.hyper()};
  GaussianProcess warm(o);
  warm.fit(X, y, Eigen::VectorXd::Zero(30), 1);
  EXPECT_EQ(warm.fit_starts(), 4);
  EXPECT_NEAR(warm.log_marginal_likelihood(), cold.log_marginal_likelihood(), 1e-6);
  // A start of the wrong dimension is skipped, not fatal.
  GpHyper wrong;
  wrong.length_scales = Eigen::VectorXd::Constant(3, 0.5);
  o.extra_starts = {wrong};
  warm.set_options(o);
  warm.fit(X, y, Eigen::VectorXd::Zero(30), 1);
  EXPECT_EQ(warm.fit_starts(), 3);
}

TEST(TunerGp, InterpolatesWithTinyNoise) {
  Eigen::MatrixXd X;
  Eigen::VectorXd y;
  make_data(12, 21, X, y);
  const Eigen::VectorXd prior = Eigen::VectorXd::Constant(12, 0.7);
  GpHyper h;
  h.length_scales = Eigen::Vector2d(0.3, 1.0);
  h.signal_variance = 1.0;
  h.noise_variance = 1e-10;
  GaussianProcess gp;
  gp.fit(X, y, prior, 1, &h);
  for (int i = 0; i < 12; ++i) {
    const GpPrediction p = gp.predict(X.row(i).transpose(), 0.7);
    EXPECT_NEAR(p.mean, y[i], 1e-6) << i;
    EXPECT_LT(p.variance, 1e-6) << i;
  }
  // Fitted (noise free to go to its lower bound) on noiseless data: close at the data too.
  GaussianProcess fitted;
  fitted.fit(X, y, prior, 1);
  for (int i = 0; i < 12; ++i) EXPECT_NEAR(fitted.predict(X.row(i).transpose(), 0.7).mean, y[i], 1e-2) << i;
}

TEST(TunerGp, RevertsToThePriorFarFromData) {
  Eigen::MatrixXd X;
  Eigen::VectorXd y;
  make_data(10, 4, X, y);
  // Prior mean 2 + x0; the data's residuals have some mean m: far away the GP gives prior + m
  // and the full prior variance s² σ².
  Eigen::VectorXd prior = (2.0 + X.col(0).array()).matrix();
  GpHyper h;
  h.length_scales = Eigen::Vector2d(0.2, 0.2);
  h.signal_variance = 0.8;
  h.noise_variance = 1e-3;
  GaussianProcess gp;
  gp.fit(X, y, prior, 1, &h);
  const Eigen::Vector2d far(40.0, -30.0);
  const GpPrediction p = gp.predict(far, 2.0 + far[0]);
  EXPECT_NEAR(p.mean, 2.0 + far[0] + (y - prior).mean(), 1e-9);
  EXPECT_NEAR(p.variance, gp.y_scale() * gp.y_scale() * 0.8, 1e-9);
  // Residuals of mean zero: exactly the prior.
  Eigen::VectorXd y0 = y.array() - (y - prior).mean();
  gp.fit(X, y0, prior, 1, &h);
  EXPECT_NEAR(gp.predict(far, 5.0).mean, 5.0, 1e-9);
  // Near the data, the prediction is pulled to it (not to the prior).
  const GpPrediction near = gp.predict(X.row(0).transpose(), prior[0]);
  EXPECT_NEAR(near.mean, y0[0], 0.05);
  EXPECT_LT(near.variance, 0.05 * p.variance);
}

TEST(TunerGp, PredictManyMatchesPredict) {
  Eigen::MatrixXd X;
  Eigen::VectorXd y;
  make_data(15, 8, X, y, 0.05);
  GaussianProcess gp;
  gp.fit(X, y, Eigen::VectorXd::Zero(15), 2);
  Rng rng(1);
  Eigen::MatrixXd Xs(7, 2);
  Eigen::VectorXd prior(7), mean, var;
  for (int i = 0; i < 7; ++i) {
    Xs(i, 0) = rng.uniform();
    Xs(i, 1) = rng.uniform();
    prior[i] = rng.normal();
  }
  gp.predict_many(Xs, prior, mean, var);
  for (int i = 0; i < 7; ++i) {
    const GpPrediction p = gp.predict(Xs.row(i).transpose(), prior[i]);
    EXPECT_NEAR(mean[i], p.mean, 1e-12);
    EXPECT_NEAR(var[i], p.variance, 1e-12);
  }
}

TEST(TunerGp, JitterRescuesASingularCovariance) {
  // The same point three times with a noise far below double precision: K is singular.
  Eigen::MatrixXd X(4, 1);
  X << 0.5, 0.5, 0.5, 0.8;
  Eigen::VectorXd y(4);
  y << 1.0, 1.0, 1.0, 2.0;
  const GpHyper h = hyper_1d(0.4, 1.0, 1e-30);
  GaussianProcess gp;
  gp.fit(X, y, Eigen::VectorXd::Zero(4), 1, &h);
  EXPECT_GT(gp.jitter(), 0.0);
  EXPECT_LE(gp.jitter(), 1e-4 * (1.0 + 1e-30));
  const GpPrediction p = gp.predict(Eigen::VectorXd::Constant(1, 0.5), 0.0);
  EXPECT_NEAR(p.mean, 1.0, 1e-3);
  EXPECT_TRUE(std::isfinite(p.variance));
}

TEST(TunerGp, RejectsBadInput) {
  struct Holder {
    GaussianProcess gp;
  };
  Holder holder = {};  // copy-list-initialization compiles (the default constructor is not explicit)
  EXPECT_FALSE(holder.gp.fitted());
  GaussianProcess gp;
  EXPECT_THROW(gp.predict(Eigen::VectorXd::Zero(1), 0), Error);
  EXPECT_THROW(gp.fit(Eigen::MatrixXd(0, 2), Eigen::VectorXd(0), Eigen::VectorXd(0), 1), Error);
  EXPECT_THROW(gp.fit(Eigen::MatrixXd::Zero(3, 2), Eigen::VectorXd::Zero(2), Eigen::VectorXd::Zero(3), 1), Error);
  EXPECT_THROW(gp.fit(Eigen::MatrixXd::Zero(3, 2), Eigen::VectorXd::Zero(3), Eigen::VectorXd::Zero(2), 1), Error);
  Eigen::VectorXd bad = Eigen::VectorXd::Zero(3);
  bad[1] = std::nan("");
  EXPECT_THROW(gp.fit(Eigen::MatrixXd::Zero(3, 2), bad, Eigen::VectorXd::Zero(3), 1), Error);
  const GpHyper h = hyper_1d(0.3, 1, 1e-3);  // one length scale for two dimensions
  EXPECT_THROW(gp.fit(Eigen::MatrixXd::Zero(3, 2), Eigen::VectorXd::Zero(3), Eigen::VectorXd::Zero(3), 1, &h), Error);
  Eigen::MatrixXd X = Eigen::MatrixXd::Zero(3, 2);
  X(1, 0) = 0.5;
  X(2, 1) = 0.5;
  gp.fit(X, Eigen::Vector3d(1, 2, 3), Eigen::VectorXd::Zero(3), 1);
  EXPECT_THROW(gp.predict(Eigen::VectorXd::Zero(3), 0), Error);
}

TEST(TunerGp, OnePointAndConstantDataAreHandled) {
  GaussianProcess gp;
  gp.fit(Eigen::MatrixXd::Constant(1, 2, 0.5), Eigen::VectorXd::Constant(1, 3.0), Eigen::VectorXd::Constant(1, 1.0), 1);
  EXPECT_EQ(gp.y_scale(), 1.0);
  EXPECT_NEAR(gp.predict(Eigen::Vector2d(0.5, 0.5), 1.0).mean, 3.0, 1e-2);
  Eigen::MatrixXd X;
  Eigen::VectorXd y;
  make_data(6, 3, X, y);
  gp.fit(X, Eigen::VectorXd::Constant(6, 2.0), Eigen::VectorXd::Zero(6), 1);
  EXPECT_NEAR(gp.predict(Eigen::Vector2d(0.1, 0.9), 0.0).mean, 2.0, 1e-9);
}

TEST(TunerGp, ReachProbabilityIsTheLocalShareWithABetaPrior) {
  // Trials on a line: the left half reached the target, the right half did not.
  Eigen::MatrixXd X(8, 1);
  std::vector<bool> reached;
  for (int i = 0; i < 8; ++i) {
    X(i, 0) = i / 7.0;
    reached.push_back(i < 4);
  }
  const Eigen::VectorXd l = Eigen::VectorXd::Constant(1, 0.05);
  const double left = gp_reach_probability(X, reached, Eigen::VectorXd::Constant(1, 0.0), l);
  const double right = gp_reach_probability(X, reached, Eigen::VectorXd::Constant(1, 1.0), l);
  const double middle = gp_reach_probability(X, reached, Eigen::VectorXd::Constant(1, 0.5), l);
  EXPECT_GT(left, 0.5);
  EXPECT_LT(right, 0.5);
  EXPECT_NEAR(left + right, 1.0, 1e-12);  // the layout is symmetric
  EXPECT_NEAR(middle, 0.5, 1e-12);        // 3.5/7 is between a reached and a censored trial
  // At a trial: weight 1 there, (a + 1)/(a + b + 1) plus the neighbours' tiny weights.
  EXPECT_NEAR(left, 2.0 / 3.0, 0.01);
  // Far from every trial: the prior mean a/(a+b).
  EXPECT_NEAR(gp_reach_probability(X, reached, Eigen::VectorXd::Constant(1, 50.0), l, 3.0, 1.0), 0.75, 1e-12);
  // Long length scales: the global share 4/8 pulled towards the prior.
  const double global =
      gp_reach_probability(X, reached, Eigen::VectorXd::Constant(1, 0.0), Eigen::VectorXd::Constant(1, 1e6));
  EXPECT_NEAR(global, (1.0 + 4.0) / (2.0 + 8.0), 1e-9);
  EXPECT_THROW(gp_reach_probability(X, {true}, Eigen::VectorXd::Zero(1), l), Error);
  EXPECT_THROW(gp_reach_probability(X, reached, Eigen::VectorXd::Zero(1), l, 0.0, 1.0), Error);
}

// Not a speed gate, a record: the fit at the tuner's largest expected size, printed.
TEST(TunerGp, FitTimeAtHundredPointsFiveDimensions) {
  Rng rng(17);
  const int n = 100, d = 5;
  Eigen::MatrixXd X(n, d);
  Eigen::VectorXd y(n);
  for (int i = 0; i < n; ++i) {
    double v = 0;
    for (int k = 0; k < d; ++k) {
      X(i, k) = rng.uniform();
      v += std::sin(3.0 * X(i, k) * (k + 1) / d);
    }
    y[i] = v + 0.05 * rng.normal();
  }
  GaussianProcess gp;
  const auto t0 = std::chrono::steady_clock::now();
  gp.fit(X, y, Eigen::VectorXd::Zero(n), 1);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("GP fit n=%d d=%d: %.3f s, %d starts, %d LML evaluations, LML %.3f, noise %.2e\n", n, d, s,
              gp.fit_starts(), gp.fit_evaluations(), gp.log_marginal_likelihood(), gp.hyper().noise_variance);
  EXPECT_LT(s, 30.0);
  EXPECT_TRUE(std::isfinite(gp.log_marginal_likelihood()));
}

}  // namespace
}  // namespace dsgd
