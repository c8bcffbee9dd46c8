// localsgd's sync-period schedules (--period-schedule constant | qsr | adacomm,
// algorithms/period_schedule.hpp): the formulas by hand, the equivalences bit for bit on two
// simulated workers (qsr below H_base is the constant schedule, qsr at a constant rate is
// localsgd with that period, adacomm on one worker is localsgd), the rounds each schedule
// actually runs (counted from when the replicas agree), its bytes-per-step formula, the
// timing-only rule's averages against the numerics', and the refusals naming the flag.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "algorithms/config_check.hpp"
#include "algorithms/optimizer.hpp"
#include "algorithms/period_schedule.hpp"
#include "algorithms/variant.hpp"
#include "cluster/sim_timing.hpp"
#include "cluster/sim_world.hpp"
#include "core/run_config.hpp"
#include "engine/trainer.hpp"
#include "error_text.hpp"
#include "serial_reference.hpp"
#include "sim_ring_options.hpp"
#include "workloads/datasets/dataset.hpp"
#include "workloads/workload.hpp"

namespace dsgd {
namespace {

using dsgd::testing::error_of;

TEST(PeriodSchedule, FormulasByHand) {
  // qsr: max(H_base, floor((alpha/lr)^2)); binary fractions keep the squares exact.
  EXPECT_EQ(qsr_period(1.0, 0.25, 4), 16);
  EXPECT_EQ(qsr_period(1.0, 0.25, 32), 32);
  EXPECT_EQ(qsr_period(1.0, 0.125, 4), 64);
  EXPECT_EQ(qsr_period(0.3, 0.1, 1), 8);  // (3 - 1 ulp)^2 = 8.99..: floor 8
  EXPECT_EQ(qsr_period(1.0, 0.0, 5), 5);
  EXPECT_EQ(qsr_period(1.0, 1e-300, 1), kPeriodScheduleMax);
  // adacomm: max(1, ceil(sqrt(F/F0) * H0)).
  EXPECT_EQ(adacomm_period(1.0, 1.0, 8), 8);
  EXPECT_EQ(adacomm_period(0.25, 1.0, 8), 4);
  EXPECT_EQ(adacomm_period(0.3, 1.0, 8), 5);  // sqrt(0.3) * 8 = 4.38
  EXPECT_EQ(adacomm_period(0.0, 1.0, 8), 1);
  EXPECT_EQ(adacomm_period(4.0, 1.0, 8), 16);
  EXPECT_EQ(adacomm_period(std::nan(""), 1.0, 8), 8);
  EXPECT_EQ(adacomm_period(0.5, 0.0, 8), 8);
  // A plan: H_base through the warm-up, then the rule at each round's start.
  RunConfig cfg;
  cfg.algo = "localsgd";
  cfg.period = 2;
  cfg.period_schedule = "qsr";
  cfg.qsr_alpha = 0.1;
  cfg.lr_schedule = "cosine";
  cfg.lr_warmup = 10;
  const PeriodPlan plan = period_plan_make(cfg, 0.05, 200);
  const LrSchedule lr = lr_schedule_from_config(cfg, 0.05, 200);
  EXPECT_EQ(plan.period_at(3), 2);  // warm-up: lr 0.02, the rule would give 25
  for (int64_t t = 10; t < 200; ++t)
    EXPECT_EQ(plan.period_at(t),
              std::max<int64_t>(2, static_cast<int64_t>(std::floor(std::pow(0.1 / lr.lr_at(t), 2)))));
  EXPECT_EQ(plan.period_at(10), 4);  // (0.1 / 0.05)^2
  EXPECT_GT(plan.period_at(190), 100);
  // Constant: the rounds that end inside the run.
  cfg.period_schedule = "constant";
  cfg.period = 4;
  EXPECT_EQ(period_plan_syncs(period_plan_make(cfg, 0.05, 61), 0, 61), 15);
  EXPECT_EQ(period_plan_syncs(period_plan_make(cfg, 0.05, 61), 5, 61), 14);
  // The last round: 15 rounds of 4 end at step 60, the 16th ran 1 step; from 5: 14 end at 61.
  EXPECT_EQ(period_plan_rounds(period_plan_make(cfg, 0.05, 61), 0, 61).last_steps, 1);
  EXPECT_EQ(period_plan_rounds(period_plan_make(cfg, 0.05, 61), 5, 61).last_steps, 4);
}

// Final parameters (rank 0's consensus) of cfg on n simulated workers through the trainer.
std::vector<float> trained_on(const RunConfig& cfg, int n) {
  SimWorld world(sim_ring_options(n, 1e-5, 1e9));
  std::vector<std::vector<float>> out(static_cast<size_t>(n));
  world.run([&](int r) { out[static_cast<size_t>(r)] = trainer_run(cfg, world.comm(r), nullptr, {}).final_params; });
  return out[0];
}

RunConfig two_worker_config() {
  RunConfig cfg = dsgd::testing::small_svm_config();
  cfg.algo = "localsgd";
  cfg.workers = 2;
  cfg.backend = "sim";
  cfg.steps = 90;
  return cfg;
}

TEST(PeriodSchedule, QsrBelowTheBasePeriodIsTheConstantScheduleBitForBit) {
  RunConfig constant = two_worker_config();
  constant.lr_schedule = "step";  // 0.05, halved every 30 steps: 0.0125 at the end
  constant.lr_step_every = 30;
  constant.lr_step_gamma = 0.5;
  constant.period = 4;
  RunConfig qsr = constant;
  qsr.period_schedule = "qsr";
  qsr.qsr_alpha = 1e-3;  // (1e-3 / lr)^2 < 4 while lr > 5e-4
  const LrSchedule lr = lr_schedule_from_config(qsr, qsr.lr, qsr.steps);
  ASSERT_LT(std::pow(qsr.qsr_alpha / lr.lr_at(qsr.steps - 1), 2), 4.0);
  const std::vector<float> a = trained_on(constant, 2), b = trained_on(qsr, 2);
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a, b);
  // And an alpha that lengthens the rounds changes the result (the test can fail): 0.1 gives
  // 4 at 0.05, then 16 and 64.
  qsr.qsr_alpha = 0.1;
  EXPECT_NE(trained_on(qsr, 2), a);
}

TEST(PeriodSchedule, QsrAtAConstantRateIsLocalSgdWithThatPeriodBitForBit) {
  RunConfig qsr = two_worker_config();
  qsr.period = 1;
  qsr.period_schedule = "qsr";
  qsr.qsr_alpha = qsr.lr * std::sqrt(6.5);  // (alpha / lr)^2 = 6.5: H = 6
  ASSERT_EQ(qsr_period(qsr.qsr_alpha, qsr.lr, 1), 6);
  RunConfig constant = two_worker_config();
  constant.period = 6;
  const std::vector<float> a = trained_on(constant, 2);
  EXPECT_EQ(trained_on(qsr, 2), a);
  constant.period = 5;
  EXPECT_NE(trained_on(constant, 2), a);
}

TEST(PeriodSchedule, ConstantIsTheDefaultAndAdacommOnOneWorkerIsLocalSgd) {
  RunConfig cfg = dsgd::testing::small_svm_config();
  cfg.algo = "localsgd";
  RunConfig named = cfg;
  named.period_schedule = "constant";
  const std::vector<float> a = dsgd::testing::trained(cfg);
  EXPECT_EQ(dsgd::testing::trained(named), a);
  // One worker: the average is the model itself whatever the rounds; the loss all-reduce too.
  RunConfig ada = cfg;
  ada.period_schedule = "adacomm";
  EXPECT_EQ(dsgd::testing::trained(ada), a);
}

// Drives cfg's algorithm on two simulated workers with a scripted gradient (worker-dependent,
// so replicas differ between averages) and scripted per-step losses loss(rank, step); returns
// the steps after which both replicas agree (the averages).
std::vector<int64_t> averaged_steps(const RunConfig& cfg, int64_t steps,
                                    const std::function<double(int, int64_t)>& loss, double* bytes_formula = nullptr,
                                    size_t* params = nullptr) {
  const int n = 2;
  const DatasetPair data = dataset_load("synthetic:n=40,d=30,classes=3,test=8", 1);
  SimWorld world(sim_ring_options(n, 1e-5, 1e9));
  std::vector<std::vector<std::vector<float>>> seen(n);
  const LrSchedule lr = lr_schedule_from_config(cfg, cfg.lr, steps);
  world.run([&](int r) {
    Communicator& comm = world.comm(r);
    auto workload = workload_create(cfg, data.train);
    const size_t count = workload->param_count();
    std::vector<float> x(count), g(count);
    workload->init_params(x.data(), cfg.seed);
    auto opt = optimizer_create(cfg, count, n);
    auto algo = algorithm_create(cfg.algo, cfg);
    TrainState s{comm, *workload, *opt, x.data(), g.data(), count, 0, steps};
    algo->setup(s);
    for (int64_t t = 0; t < steps; ++t) {
      s.step = t;
      s.lr = lr.lr_at(t);
      s.loss = loss(r, t);
      for (size_t i = 0; i < count; ++i) g[i] = std::sin(3.0f * x[i] + 0.01f * float(i) + float(r));
      algo->reduce_gradients(s);
      opt->step(s.params, s.grads, s.lr);
      algo->after_update(s);
      seen[static_cast<size_t>(r)].push_back(x);
    }
    if (r == 0 && bytes_formula)
      *bytes_formula = algo->bytes_sent_per_step(static_cast<double>(count) * sizeof(float), n);
    if (r == 0 && params) *params = count;
  });
  std::vector<int64_t> out;
  for (int64_t t = 0; t < steps; ++t)
    if (seen[0][static_cast<size_t>(t)] == seen[1][static_cast<size_t>(t)]) out.push_back(t);
  return out;
}

RunConfig driven_config(const char* schedule, int64_t period) {
  RunConfig cfg;
  cfg.workload = "svm";
  cfg.dataset = "synthetic:n=40,d=30,classes=3,test=8";
  cfg.algo = "localsgd";
  cfg.lr = 0.05;
  cfg.period = period;
  cfg.period_schedule = schedule;
  return cfg;
}

std::vector<int64_t> every(int64_t h, int64_t steps) {
  std::vector<int64_t> out;
  for (int64_t t = h - 1; t < steps; t += h) out.push_back(t);
  return out;
}

TEST(PeriodSchedule, AdacommKeepsH0WhileTheLossDoesNotFall) {
  const RunConfig cfg = driven_config("adacomm", 5);
  // The workers' losses differ, their mean over every round is the same: F = F_0.
  EXPECT_EQ(averaged_steps(cfg, 60, [](int r, int64_t) { return r == 0 ? 0.75 : 1.25; }), every(5, 60));
  const RunConfig constant = driven_config("constant", 5);
  EXPECT_EQ(averaged_steps(constant, 60, [](int, int64_t) { return 0.0; }), every(5, 60));
}

TEST(PeriodSchedule, AdacommRoundsFollowTheAgreedLoss) {
  const RunConfig cfg = driven_config("adacomm", 8);
  // Worker 1's loss is 3x worker 0's; their agreed F is the mean of the two round means.
  auto loss = [](int r, int64_t t) { return (r == 0 ? 0.5 : 1.5) * std::exp(-0.02 * static_cast<double>(t)); };
  const int64_t steps = 200;
  double bytes = 0;
  size_t count = 0;
  const std::vector<int64_t> got = averaged_steps(cfg, steps, loss, &bytes, &count);
  // By hand: each round's F = mean over its steps and workers, H = max(1, ceil(sqrt(F/F0) * 8)).
  std::vector<int64_t> want;
  float f0 = -1;
  for (int64_t start = 0, h = 8; start + h <= steps;) {
    // Each worker's round mean (float), averaged by the float all-reduce: (m_0 + m_1) · 1/2.
    float m[2];
    for (int r = 0; r < 2; ++r) {
      double sum = 0;
      for (int64_t t = start; t < start + h; ++t) sum += loss(r, t);
      m[r] = static_cast<float>(sum / static_cast<double>(h));
    }
    const float f = (m[0] + m[1]) * 0.5f;
    if (f0 < 0) f0 = f;
    want.push_back(start + h - 1);
    start += h;
    h = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(std::sqrt(double(f) / double(f0)) * 8.0)));
  }
  EXPECT_EQ(got, want);
  ASSERT_GE(got.size(), 4u);
  EXPECT_EQ(got[0], 7);                            // H_0 = 8
  EXPECT_LT(got.back() - got[got.size() - 2], 8);  // the loss fell: shorter rounds
  // Its bytes formula: the first rounds' (model + the loss float) / H_0, on 2 workers R = |x|·4.
  EXPECT_DOUBLE_EQ(bytes, (static_cast<double>(count) * 4 + 4) / 8.0);
}

TEST(PeriodSchedule, QsrRoundsFollowTheRateAndTheTimingRuleAveragesAtTheSameSteps) {
  RunConfig cfg = driven_config("qsr", 2);
  cfg.lr_schedule = "cosine";
  cfg.qsr_alpha = 0.1;  // H = 4 at the peak rate, growing as cosine decays it
  const int64_t steps = 150;
  double bytes = 0;
  size_t count = 0;
  const std::vector<int64_t> got = averaged_steps(
      cfg, steps, [](int, int64_t) { return 1.0; }, &bytes, &count);
  const LrSchedule lr = lr_schedule_from_config(cfg, cfg.lr, steps);
  std::vector<int64_t> want;
  for (int64_t start = 0;;) {
    const int64_t h = std::max<int64_t>(2, static_cast<int64_t>(std::floor(std::pow(0.1 / lr.lr_at(start), 2))));
    if (start + h > steps) break;
    want.push_back(start + h - 1);
    start += h;
  }
  EXPECT_EQ(got, want);
  ASSERT_GE(want.size(), 5u);
  EXPECT_EQ(want[0], 3);
  EXPECT_GT(want.back() - want[want.size() - 2], 8);
  EXPECT_DOUBLE_EQ(bytes,
                   static_cast<double>(count) * 4 * static_cast<double>(want.size()) / static_cast<double>(steps));
  // The timing-only rule of the same configuration averages after the same steps.
  const Variant& v = variant_get("localsgd");
  ASSERT_NE(v.timing_plan, nullptr);
  ASSERT_TRUE(variant_timing_supported(cfg));
  SimTimingPlan plan;
  plan.workers = 2;
  plan.steps = steps;
  plan.eval_every = 1000;
  plan.flush_every = 1000;
  plan.period = cfg.period;
  plan.param_bytes = 4.0 * static_cast<double>(count);
  plan.cost.fwd_s = 1e-3;
  plan.network = NetworkModel{LinkModel{1e-5, 1e9}, std::nullopt, 1};
  RunConfig timed = cfg;
  timed.workers = 2;
  v.timing_plan(timed, plan);
  std::vector<int64_t> synced;
  sim_timing_run(
      plan, v.timing, [](int64_t) { return true; },
      [&](int64_t s, const SimStepTiming* t) {
        if (t[0].bytes > 0) synced.push_back(s);
      });
  EXPECT_EQ(synced, want);
}

TEST(PeriodSchedule, BadInputNamesTheFlag) {
  auto refused = [](const std::function<void(RunConfig&)>& edit, const std::string& text) {
    RunConfig cfg;
    cfg.algo = "localsgd";
    edit(cfg);
    const std::string msg = error_of([&] { config_validate(cfg); });
    EXPECT_NE(msg.find(text), std::string::npos) << "got: '" << msg << "', expected " << text;
  };
  refused([](RunConfig& c) { c.period_schedule = "sometimes"; }, "--period-schedule: unknown schedule 'sometimes'");
  refused([](RunConfig& c) { c.period_schedule = "qsr"; }, "--qsr-alpha: --period-schedule qsr needs alpha > 0");
  refused(
      [](RunConfig& c) {
        c.period_schedule = "qsr";
        c.qsr_alpha = -1;
      },
      "--qsr-alpha: --period-schedule qsr needs alpha > 0");
  refused([](RunConfig& c) { c.qsr_alpha = 0.1; }, "--qsr-alpha: applies to --period-schedule qsr only");
  refused(
      [](RunConfig& c) {
        c.period_schedule = "adacomm";
        c.qsr_alpha = 0.1;
      },
      "--qsr-alpha: applies to --period-schedule qsr only");
  refused(
      [](RunConfig& c) {
        c.algo = "ssgd";
        c.period_schedule = "qsr";
      },
      "--period-schedule: applies to --algo localsgd only");
  refused(
      [](RunConfig& c) {
        c.algo = "diloco";
        c.qsr_alpha = 0.2;
      },
      "--qsr-alpha: applies to --algo localsgd only");
  refused(
      [](RunConfig& c) {
        c.backend = "sim";
        c.timing_only = true;
        c.period_schedule = "adacomm";
      },
      "--period-schedule: adacomm cannot run with --timing-only");
  RunConfig ok;
  ok.algo = "localsgd";
  ok.period_schedule = "qsr";
  ok.qsr_alpha = 0.2;
  EXPECT_EQ(error_of([&] { config_validate(ok); }), "");
  ok.period_schedule = "adacomm";
  ok.qsr_alpha = 0;
  EXPECT_EQ(error_of([&] { config_validate(ok); }), "");
  // Timing-only: qsr is modelled, adacomm (its period follows the loss) is not.
  EXPECT_FALSE(variant_timing_supported(ok));
  ok.period_schedule = "qsr";
  ok.qsr_alpha = 0.2;
  EXPECT_TRUE(variant_timing_supported(ok));
}

}  // namespace
}  // namespace dsgd
