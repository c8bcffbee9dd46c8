// The tuner's theory prior (tuner/prior.*, tuner/prior_probe.*): the noise-scale measurement
// against the exact tr(Σ) and |G|² of a workload whose per-example gradients are known, the
// steps model S(B, η) against McCandlish's S_min (1 + B_noise/B) and its limits, the fit
// recovering constants from probe points the model generated, the penalties' monotonicity, the
// GP proposals using the prior as their mean, the initial design's composition, the `prior`
// bench strategy on a stored grid, and the probe's JSON round trip.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/errors.hpp"
#include "core/rng.hpp"
#include "tuner/gaussian_process.hpp"
#include "tuner/noise_scale.hpp"
#include "tuner/prior.hpp"
#include "tuner/prior_probe.hpp"
#include "tuner/proposals.hpp"
#include "tuner/replay.hpp"

namespace dsgd {
namespace {

// A workload whose per-example gradient is the example's feature vector, whatever the
// parameters: the mean gradient of a batch is the mean of its rows.
class RowsAsGradients : public Workload {
 public:
  explicit RowsAsGradients(size_t d) : d_(d), layers_{{"w", 0, d}} {}
  std::string name() const override { return "rows"; }
  const std::vector<LayerView>& layers() const override { return layers_; }
  size_t param_count() const override { return d_; }
  void do_init_params(float* p, uint64_t) const override { std::fill(p, p + d_, 0.0f); }
  void reserve(size_t) override {}
  void load_batch(const Dataset& ds, const uint32_t* idx, size_t n) override {
    ds_ = &ds;
    idx_.assign(idx, idx + n);
  }
  double do_forward(const float*) override { return 0; }
  void do_backward(const float*, float* g, const LayerHook&) override {
    std::fill(g, g + d_, 0.0f);
    for (uint32_t i : idx_)
      for (size_t k = 0; k < d_; ++k) g[k] += ds_->dense[i * d_ + k];
    for (size_t k = 0; k < d_; ++k) g[k] /= static_cast<float>(idx_.size());
  }
  EvalSums do_evaluate(const float*, const Dataset&, size_t, size_t) override { return {}; }
  double flops_per_sample() const override { return 1; }

 private:
  size_t d_;
  std::vector<LayerView> layers_;
  const Dataset* ds_ = nullptr;
  std::vector<uint32_t> idx_;
};

TEST(TunerPrior, NoiseMeasureMatchesTheExactNoiseScaleOfKnownGradients) {
  // Per-example gradients x_j = G + σ ⊙ ξ_j: tr(Σ) and |G|² computed exactly over the rows.
  const size_t n = 2000, d = 6;
  Dataset ds;
  ds.rows = n;
  ds.features = d;
  ds.dense.resize(n * d);
  const double G[d] = {0.5, -0.3, 0.2, 0.1, 0.0, 0.4};
  const double sigma[d] = {2.0, 1.0, 3.0, 0.5, 1.5, 1.0};
  Rng rng(5);
  for (size_t j = 0; j < n; ++j)
    for (size_t k = 0; k < d; ++k) ds.dense[j * d + k] = static_cast<float>(G[k] + sigma[k] * rng.normal());
  double g2 = 0, tr = 0;  // of the rows as a population (as float, as the workload sees them)
  for (size_t k = 0; k < d; ++k) {
    double mean = 0, sq = 0;
    for (size_t j = 0; j < n; ++j) mean += ds.dense[j * d + k];
    mean /= n;
    for (size_t j = 0; j < n; ++j) sq += (ds.dense[j * d + k] - mean) * (ds.dense[j * d + k] - mean);
    g2 += mean * mean;
    tr += sq / n;
  }
  // Sampling without replacement from n rows: E tr-estimate = tr·n/(n−1), E |G|²-estimate =
  // |G|² − tr/(n−1) (the estimators of noise_scale.hpp with the finite-population variance).
  const double tr_expected = tr * n / (n - 1), g2_expected = g2 - tr / (n - 1);
  RowsAsGradients w(d);
  NoiseScaleAccumulator acc;
  const std::vector<float> params(d, 0.0f);
  prior_noise_measure(w, ds, params, 8, 4, 3000, 11, acc);
  ASSERT_EQ(acc.count(), 3000);
  const NoiseScaleEstimate e = acc.estimate();
  ASSERT_TRUE(e.valid);
  // Monte Carlo error: the tr estimate's sd per draw is about tr·sqrt(2/b)·(b/(1 − 1/N))/b ≈ 1.1 tr
  // here, so over 3000 draws ~2 %; |G|²'s (absolute) about 0.6 tr/ (N b) per draw.
  EXPECT_NEAR(e.trace_sigma, tr_expected, 0.06 * tr_expected);
  EXPECT_NEAR(e.grad_sq, g2_expected, 0.1 * g2_expected);
  EXPECT_NEAR(e.b_simple, tr_expected / g2_expected, 0.15 * tr_expected / g2_expected);
  // Exact B_simple of these rows ≈ Σσ²/|G|² = 17.5/0.55 ≈ 32.
  EXPECT_GT(e.b_simple, 20);
  EXPECT_LT(e.b_simple, 45);
  // Deterministic for a seed; another seed draws other batches.
  NoiseScaleAccumulator again, other;
  prior_noise_measure(w, ds, params, 8, 4, 3000, 11, again);
  prior_noise_measure(w, ds, params, 8, 4, 30, 12, other);
  EXPECT_EQ(again.estimate().trace_sigma, e.trace_sigma);
  EXPECT_NE(other.estimate().trace_sigma, e.trace_sigma);
  // More workers x batch than rows: refused.
  EXPECT_THROW(prior_noise_measure(w, ds, params, 1000, 4, 1, 1, acc), Error);
}

PriorModel model(double s_min, double b_noise) {
  PriorModel m;
  m.workers = 8;
  m.s_min = s_min;
  m.b_noise = b_noise;
  m.ref_rule = "linear";
  return m;
}

TEST(TunerPrior, SyncStepsAreMcCandlishsAtTheOptimalLrAndDivergeAtTwiceIt) {
  const PriorModel m = model(60.0, 500.0);
  for (double B : {64.0, 256.0, 1024.0, 8192.0}) {
    SCOPED_TRACE(B);
    // At the optimal lr: S = S_min (1 + B_noise/B) (noise_scale_steps), the least over the lr.
    const double s = prior_sync_steps(m, B, 1.0);
    EXPECT_NEAR(s, noise_scale_steps(60.0, 500.0, B), 1e-12 * s);
    EXPECT_GT(prior_sync_steps(m, B, 0.9), s);
    EXPECT_GT(prior_sync_steps(m, B, 1.1), s);
    EXPECT_NEAR(prior_sync_steps(m, B, 0.5), s / 0.75, 1e-9 * s);  // u (2 − u) = 0.75
    // Diverges at twice the optimal lr and beyond; a zero lr never gets there.
    EXPECT_TRUE(std::isinf(prior_sync_steps(m, B, 2.0)));
    EXPECT_TRUE(std::isinf(prior_sync_steps(m, B, 3.0)));
    EXPECT_TRUE(std::isinf(prior_sync_steps(m, B, 0.0)));
    // Fewer steps at a larger batch, never fewer than S_min.
    EXPECT_GT(s, prior_sync_steps(m, 2 * B, 1.0));
    EXPECT_GT(prior_sync_steps(m, 2 * B, 1.0), 60.0);
  }
  // The critical batch: at B = B_noise twice S_min.
  EXPECT_NEAR(prior_sync_steps(m, 500.0, 1.0), 120.0, 1e-9);
}

// Probe points whose steps the model with these constants gives (rounded to whole steps).
PriorProbe synthetic_probe(const PriorModel& truth, double kappa_local, double kappa_gossip, double ring_gap) {
  PriorProbe p;
  p.workers = truth.workers;
  p.noise_at_steps = {0, 50, 100};
  p.noise_at = {noise_scale_from_estimators(4.0, 8.0), noise_scale_from_estimators(1.0, 90.0),
                noise_scale_from_estimators(0.5, 160.0)};
  auto point = [&](const std::string& role, Candidate c, double steps) {
    ProbePoint q;
    q.role = role;
    q.candidate = c;
    q.reached = true;
    q.steps = static_cast<int64_t>(std::llround(steps));
    q.spectral_gap = c.topology.empty() ? 1.0 : ring_gap;
    return q;
  };
  const double s16 = prior_sync_steps(truth, 8 * 16, 1.0), s128 = prior_sync_steps(truth, 8 * 128, 1.0);
  p.points.push_back(point("sync", {"ssgd", 0, 16, "", "linear", ""}, s16));
  p.points.push_back(point("sync-batch", {"ssgd", 0, 128, "", "linear", ""}, s128));
  p.points.push_back(point("period", {"localsgd", 32, 16, "", "linear", ""}, s16 * (1 + kappa_local * 31)));
  p.points.push_back(point("period", {"diloco", 32, 16, "", "linear", ""}, s16 * (1 - 0.01 * 31)));
  p.points.push_back(
      point("gossip", {"dpsgd", 0, 16, "ring", "linear", ""}, s16 * (1 + kappa_gossip * (1 / ring_gap - 1))));
  return p;
}

TEST(TunerPrior, FitRecoversTheConstantsOfPointsTheModelMade) {
  TuneSpec spec;
  spec.base.workers = 8;
  spec.base.lr = 0.05;
  spec.base.lr_base_batch = 256;
  const PriorModel truth = model(400.0, 600.0);  // steps 2275 at B = 128, 634 at B = 1024
  const PriorProbe probe = synthetic_probe(truth, 0.02, 0.1, 0.15);
  const PriorModel m = prior_fit(probe, spec);
  // B_noise from the gradient norms at the last point (320); the two synchronous points' steps
  // give the model's own 600 (reported); S_min the geometric mean of S_i / (1 + 320/B_i).
  EXPECT_NEAR(m.b_noise, 320.0, 1e-9);
  EXPECT_NEAR(m.b_noise_grad, 320.0, 1e-9);
  EXPECT_NEAR(m.b_noise_steps, 600.0, 0.01 * 600);
  const double s16 = static_cast<double>(probe.points[0].steps), s128 = static_cast<double>(probe.points[1].steps);
  EXPECT_NEAR(m.s_min, std::sqrt(s16 / (1 + 320.0 / 128) * s128 / (1 + 320.0 / 1024)), 1e-9);
  EXPECT_EQ(m.ref_rule, "linear");
  // The period and gossip points are predicted back exactly (their κ is relative to the model's
  // synchronous steps); the ring's gap is the real one of 8 workers, not 0.15: skipped.
  for (const ProbePoint& q : probe.points) {
    if (q.candidate.topology == "ring" || q.role.rfind("sync", 0) == 0) continue;
    SCOPED_TRACE(candidate_key(q.candidate));
    EXPECT_NEAR(prior_steps(m, spec, q.candidate), static_cast<double>(q.steps), 1e-9 * q.steps);
  }
  // With the model's own B_noise (600) the synchronous points come back too.
  PriorProbe exact = probe;
  exact.noise_at.back() = noise_scale_from_estimators(1.0, 600.0);
  const PriorModel me = prior_fit(exact, spec);
  for (size_t k = 0; k < 2; ++k)
    EXPECT_NEAR(prior_steps(me, spec, exact.points[k].candidate), static_cast<double>(exact.points[k].steps),
                0.002 * exact.points[k].steps);
  EXPECT_NEAR(me.s_min, 400.0, 0.005 * 400);
  EXPECT_NEAR(me.kappa_period.at("localsgd"), 0.02, 0.002);
  EXPECT_NEAR(me.kappa_period.at("diloco"), -0.01, 0.001);
  EXPECT_NEAR(me.kappa_gap.at("dpsgd"), 0.1, 0.01);
  // Another lr rule at a batch: the lr ratio u = η_sqrt/η_linear enters as 1/(u (2 − u)).
  const Candidate sq{"ssgd", 0, 64, "", "sqrt", ""};
  const double u = std::sqrt(8.0 * 64 / 256) / (8.0 * 64 / 256);
  EXPECT_NEAR(prior_steps(m, spec, sq), prior_sync_steps(m, 8 * 64, 1.0) / (u * (2 - u)), 1e-9);
  // No positive gradient-norm estimate: B_noise from the steps; steps that do not fall with the
  // batch then mean no noise.
  PriorProbe no_grad = probe;
  no_grad.noise_at.back() = noise_scale_from_estimators(-1.0, 5.0);
  EXPECT_NEAR(prior_fit(no_grad, spec).b_noise, 600.0, 6.0);
  no_grad.points[1].steps = no_grad.points[0].steps;
  EXPECT_EQ(prior_fit(no_grad, spec).b_noise, 0.0);
}

TEST(TunerPrior, PenaltiesGrowWithThePeriodAndTheSparsityAndVanishAtTheirNeutralPoint) {
  for (double kappa : {0.01, 0.5}) {
    EXPECT_DOUBLE_EQ(prior_period_penalty(kappa, 1), 1.0);
    EXPECT_DOUBLE_EQ(prior_gap_penalty(kappa, 1.0), 1.0);
    double last = 1.0;
    for (int64_t h : {2, 4, 16, 64}) {
      const double p = prior_period_penalty(kappa, h);
      EXPECT_GT(p, last);
      last = p;
    }
    last = 1.0;
    for (double gap : {0.5, 0.2, 0.05, 0.01}) {  // sparser topology, smaller gap
      const double p = prior_gap_penalty(kappa, gap);
      EXPECT_GT(p, last);
      last = p;
    }
  }
  // A negative constant shrinks the steps, never below the floor.
  EXPECT_LT(prior_period_penalty(-0.01, 16), 1.0);
  EXPECT_DOUBLE_EQ(prior_period_penalty(-1, 64), kPriorPenaltyFloor);
  EXPECT_DOUBLE_EQ(prior_gap_penalty(-1, 0.01), kPriorPenaltyFloor);
}

TEST(TunerPrior, TimeCountsThePeriodicAveragesDoneBeforeTheTarget) {
  const PriorStepTime t{0.5e-3, 0.05e-3};  // an average costs H (0.45 ms) amortised over H steps
  EXPECT_NEAR(prior_time(t, 120, 1), 120 * 0.5e-3, 1e-15);
  // H = 64, 120 steps: one average (at step 64), not 120/64 of one.
  EXPECT_NEAR(prior_time(t, 120, 64), 120 * 0.05e-3 + 64 * 0.45e-3, 1e-15);
  EXPECT_NEAR(prior_time(t, 128, 64), 128 * 0.5e-3, 1e-15);  // whole periods: S · step_s
  EXPECT_NEAR(prior_time(t, 60, 64), 60 * 0.05e-3, 1e-15);   // before the first average
  EXPECT_TRUE(std::isinf(prior_time(t, INFINITY, 64)));
  EXPECT_TRUE(std::isinf(prior_time(PriorStepTime{INFINITY, INFINITY}, 10, 4)));
}

std::vector<Candidate> design_space() {
  std::vector<Candidate> s;
  for (const std::string a : {"ssgd", "localsgd", "diloco", "dpsgd"})
    for (int64_t h : {1, 4, 16, 64})
      for (int64_t b : {16, 32, 64}) {
        if (a == "ssgd" && h > 1) continue;
        if (a == "dpsgd" && h > 1) continue;
        s.push_back({a, a == "ssgd" || a == "dpsgd" ? 0 : h, b, a == "dpsgd" ? "ring" : "", "linear", ""});
      }
  return s;
}

TEST(TunerPrior, InitialDesignHoldsEachAlgorithmsBestThePriorsNextBestAndAThirdSpaceFilling) {
  const std::vector<Candidate> space = design_space();  // 3 + 12 + 12 + 3 = 30
  ASSERT_EQ(space.size(), 30u);
  // A prior that prefers localsgd H=64 b=16 and degrades along the index.
  std::vector<double> log_time(space.size());
  for (size_t i = 0; i < space.size(); ++i) log_time[i] = std::log(1.0 + static_cast<double>((i * 7) % 30));
  const size_t n = 12;
  const std::vector<size_t> d = prior_design(space, log_time, n, 3);
  ASSERT_EQ(d.size(), n);
  EXPECT_EQ(std::set<size_t>(d.begin(), d.end()).size(), n);  // no repeats
  // The first entries: each algorithm's best by the prior, best algorithms first.
  std::set<std::string> algos;
  for (size_t k = 0; k < 4; ++k) {
    const Candidate& c = space[d[k]];
    algos.insert(c.algo);
    for (size_t i = 0; i < space.size(); ++i) {
      if (space[i].algo == c.algo) {
        EXPECT_LE(log_time[d[k]], log_time[i]) << candidate_key(c);
      }
    }
    if (k > 0) {
      EXPECT_LE(log_time[d[k - 1]], log_time[d[k]]);
    }
  }
  EXPECT_EQ(algos.size(), 4u);
  // Up to n − ⌊n/3⌋ = 8: then the next best by the prior.
  std::vector<size_t> by_prior(space.size());
  for (size_t i = 0; i < space.size(); ++i) by_prior[i] = i;
  std::stable_sort(by_prior.begin(), by_prior.end(), [&](size_t a, size_t b) { return log_time[a] < log_time[b]; });
  std::vector<size_t> expected(d.begin(), d.begin() + 4);
  for (size_t i : by_prior)
    if (expected.size() < 8 && std::find(expected.begin(), expected.end(), i) == expected.end()) expected.push_back(i);
  EXPECT_EQ(std::vector<size_t>(d.begin(), d.begin() + 8), expected);
  // The last ⌊n/3⌋ = 4: the farthest-point continuation of the first 8.
  const std::vector<size_t> start(d.begin(), d.begin() + 8);
  const std::vector<size_t> spread = space_fill_sample(space, n, 3, start);
  EXPECT_EQ(std::vector<size_t>(spread.begin() + 8, spread.end()), std::vector<size_t>(d.begin() + 8, d.end()));
  // Deterministic; all of the space when n covers it.
  EXPECT_EQ(prior_design(space, log_time, n, 3), d);
  EXPECT_EQ(prior_design(space, log_time, 30, 3).size(), 30u);
  // Fewer places than algorithms: the best algorithms' bests only.
  const std::vector<size_t> two = prior_design(space, log_time, 2, 3);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0], by_prior[0]);
}

TEST(TunerPrior, ProposalsUseThePriorAsTheGpMean) {
  const std::vector<Candidate> space = design_space();
  std::vector<std::pair<size_t, TrialScore>> observed;
  std::set<size_t> tried;
  for (size_t i : {0u, 5u, 9u, 14u, 20u, 27u}) {
    observed.push_back({i, TrialScore{true, 0.01 * (1 + static_cast<double>(i % 7)), 0.8}});
    tried.insert(i);
  }
  std::vector<double> prior(space.size());
  for (size_t i = 0; i < space.size(); ++i) prior[i] = std::log(0.02) + 0.1 * static_cast<double>(i % 5);
  const std::vector<Proposal> with = proposals_weighted_ei(space, observed, tried, 30, 4, prior);
  const std::vector<Proposal> without = proposals_weighted_ei(space, observed, tried, 30, 4);
  ASSERT_EQ(with.size(), space.size() - tried.size());
  // The same GP fitted by hand with the prior as its mean predicts every proposal's mean.
  const Eigen::MatrixXd X = proposal_encode(space);
  Eigen::MatrixXd Xo(static_cast<Eigen::Index>(observed.size()), X.cols());
  Eigen::VectorXd y(Xo.rows()), mu0(Xo.rows());
  for (size_t r = 0; r < observed.size(); ++r) {
    Xo.row(static_cast<Eigen::Index>(r)) = X.row(static_cast<Eigen::Index>(observed[r].first));
    y(static_cast<Eigen::Index>(r)) = std::log(observed[r].second.time_s);
    mu0(static_cast<Eigen::Index>(r)) = prior[observed[r].first];
  }
  GaussianProcess gp;
  gp.fit(Xo, y, mu0, 4);
  bool differs = false;
  for (const Proposal& p : with) {
    const GpPrediction q = gp.predict(X.row(static_cast<Eigen::Index>(p.index)).transpose(), prior[p.index]);
    EXPECT_NEAR(p.mean_log_time, q.mean, 1e-9 * (1 + std::abs(q.mean)));
    for (const Proposal& o : without)
      if (o.index == p.index && std::abs(o.mean_log_time - p.mean_log_time) > 1e-6) differs = true;
  }
  EXPECT_TRUE(differs) << "the prior did not change the GP's predictions";
}

TEST(TunerPrior, ProbeJsonRoundTrips) {
  PriorProbe p;
  p.workers = 32;
  p.seed = 9;
  p.max_steps = 600;
  ProbePoint q;
  q.role = "gossip";
  q.candidate = {"dpsgd", 0, 16, "ring", "linear", ""};
  q.reached = true;
  q.steps = 140;
  q.lr = 0.1;
  q.spectral_gap = 0.0192;
  q.virtual_s = 0.003;
  q.wall_s = 1.5;
  p.points = {q};
  p.noise_batch = 16;
  p.noise_at_steps = {0, 70, 140};
  p.noise_draws = 24;
  p.noise.grad_sq = 0.04;
  p.noise.trace_sigma = 12.0;
  p.cost_s = 0.01;
  p.wall_s = 3;
  const PriorProbe r = prior_probe_from_json(prior_probe_to_json(p));
  EXPECT_EQ(prior_probe_to_json(r).dump(), prior_probe_to_json(p).dump());
  EXPECT_NEAR(r.noise.b_simple, 300.0, 1e-9);
  EXPECT_TRUE(r.noise.valid);
  EXPECT_EQ(candidate_key(r.points[0].candidate), "dpsgd ring b=16 lr=linear");
}

}  // namespace
}  // namespace dsgd

namespace dsgd {
namespace {

// With qsr and adacomm in the space, the prior's design holds, right after each algorithm's
// best, the schedule points of localsgd's best constant-period configuration: qsr at its H,
// batch and rule, and adacomm at 4 H (clipped to the space's largest H).
TEST(TunerPrior, InitialDesignHoldsTheScheduleCandidatePoints) {
  std::vector<Candidate> space;
  for (const std::string sched : {"", "qsr", "adacomm"})
    for (int64_t h : {1, 4, 16, 64})
      for (int64_t b : {16, 32}) space.push_back({"localsgd", h, b, "", "linear", "", sched});
  for (int64_t b : {16, 32}) space.push_back({"ssgd", 0, b, "", "linear", "", ""});
  auto index_of = [&](const std::string& key) {
    for (size_t i = 0; i < space.size(); ++i)
      if (candidate_key(space[i]) == key) return i;
    ADD_FAILURE() << "no " << key;
    return space.size();
  };
  // The prior prefers constant H=4 b=32 among localsgd's constant points, ssgd b=16 overall.
  std::vector<double> log_time(space.size(), 5.0);
  log_time[index_of("localsgd H=4 b=32 lr=linear")] = 2.0;
  log_time[index_of("ssgd b=16 lr=linear")] = 1.0;
  log_time[index_of("localsgd H=1 qsr b=16 lr=linear")] = 3.0;
  const std::vector<size_t> d = prior_design(space, log_time, 9, 1);
  ASSERT_GE(d.size(), 4u);
  EXPECT_EQ(d[0], index_of("ssgd b=16 lr=linear"));
  EXPECT_EQ(d[1], index_of("localsgd H=4 b=32 lr=linear"));
  EXPECT_EQ(d[2], index_of("localsgd H=4 qsr b=32 lr=linear"));
  EXPECT_EQ(d[3], index_of("localsgd H=16 adacomm b=32 lr=linear"));
  EXPECT_EQ(prior_schedule_points(space, index_of("localsgd H=16 b=16 lr=linear")),
            (std::vector<size_t>{index_of("localsgd H=16 qsr b=16 lr=linear"),
                                 index_of("localsgd H=64 adacomm b=16 lr=linear")}));
  // 4 H beyond the space: its largest H.
  EXPECT_EQ(prior_schedule_points(space, index_of("localsgd H=64 b=16 lr=linear")).back(),
            index_of("localsgd H=64 adacomm b=16 lr=linear"));
  // Without schedules in the space: no schedule points, the design as before.
  std::vector<Candidate> plain;
  std::vector<double> plain_time;
  for (size_t i = 0; i < space.size(); ++i)
    if (space[i].period_schedule.empty()) {
      plain.push_back(space[i]);
      plain_time.push_back(log_time[i]);
    }
  EXPECT_TRUE(prior_schedule_points(plain, 0).empty());
  const std::vector<size_t> p = prior_design(plain, plain_time, 6, 1);
  EXPECT_EQ(plain[p[1]].period_schedule, "");
  EXPECT_EQ(p[2], 0u);  // the next best by the prior (ties in order): localsgd H=1 b=16
}

}  // namespace
}  // namespace dsgd
