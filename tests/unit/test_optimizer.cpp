// The optimizers against updates computed by hand (SGD, momentum, Nesterov, AdamW in double),
// the learning-rate schedules and scaling rule at their formula's points, no allocation in
// a step, the variant knobs' validation, and each SGD variant of algorithms/ on one worker
// against its serial optimizer (or its rule) written out by hand.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <new>

#include "algorithms/algorithm.hpp"
#include "algorithms/config_check.hpp"
#include "algorithms/optimizer.hpp"
#include "cluster/communicator.hpp"
#include "core/errors.hpp"
#include "core/run_config.hpp"
#include "engine/batch_sampler.hpp"
#include "engine/trainer.hpp"
#include "float_compare.hpp"
#include "serial_reference.hpp"
#include "workloads/datasets/dataset.hpp"
#include "workloads/workload.hpp"

// Counts heap allocations of this process (the step must make none). GCC cannot see that
// the replaced new and delete pair malloc with free.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
static std::atomic<long> g_allocations{0};
void* operator new(std::size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}

using namespace dsgd;
using dsgd::testing::kFloatEps;
using dsgd::testing::near_rel;

namespace {

// Tolerances of the by-hand updates: one SGD step is a handful of float operations on O(1)
// values, each rounding by ≤ ε/2 relative, so the result is within 4ε (4.8e-7) of the exact
// value relative to its size, whether or not the compiler fused a multiply-add (-march=native
// or not); a wrong coefficient (decay, momentum, lr) moves it by ≥ 1e-3.
constexpr double kStepRtol = 4 * kFloatEps;

TEST(SgdOptimizer, PlainStepIsGradientPlusCoupledDecay) {
  SgdOptimizer opt(SgdOptions{0.1, 0.0, 0.01, false}, 2);
  float x[2] = {1.0f, -2.0f};
  const float g[2] = {0.5f, 0.25f};
  opt.step(x, g);
  EXPECT_TRUE(near_rel(x[0], 1.0 - 0.1 * (0.5 + 0.01 * 1.0), kStepRtol));  // 0.949
  EXPECT_TRUE(near_rel(x[1], -2.0 - 0.1 * (0.25 - 0.02), kStepRtol));      // -2.023
}

TEST(SgdOptimizer, MomentumAndNesterovTwoStepsByHand) {
  const float g1 = 0.5f, g2 = -0.3f;
  // Heavy ball, μ = 0.9, η = 0.1, λ = 0: v1 = 0.5, x1 = 1 − 0.05 = 0.95;
  // v2 = 0.45 − 0.3 = 0.15, x2 = 0.95 − 0.015 = 0.935.
  SgdOptimizer hb(SgdOptions{0.1, 0.9, 0.0, false}, 1);
  float x = 1.0f;
  hb.step(&x, &g1);
  EXPECT_TRUE(near_rel(x, 0.95, kStepRtol));
  hb.step(&x, &g2);
  EXPECT_TRUE(near_rel(x, 0.935, 2 * kStepRtol));  // two steps
  // Nesterov: v1 = 0.5, x1 = 1 − 0.1·(0.5 + 0.45) = 0.905;
  // v2 = 0.15, x2 = 0.905 − 0.1·(−0.3 + 0.135) = 0.9215.
  SgdOptimizer nag(SgdOptions{0.1, 0.9, 0.0, true}, 1);
  x = 1.0f;
  nag.step(&x, &g1);
  EXPECT_TRUE(near_rel(x, 0.905, kStepRtol));
  nag.step(&x, &g2);
  EXPECT_TRUE(near_rel(x, 0.9215, 2 * kStepRtol));
  // A learning rate passed to step() replaces the base rate.
  SgdOptimizer half(SgdOptions{0.1, 0.0, 0.0, false}, 1);
  x = 1.0f;
  half.step(&x, &g1, 0.05);
  EXPECT_TRUE(near_rel(x, 0.975, kStepRtol));
}

TEST(AdamWOptimizer, MatchesTheRuleInDoubleOverManySteps) {
  const AdamWOptions o{0.01, 0.9, 0.999, 1e-8, 0.1};
  const size_t n = 3;
  AdamWOptimizer opt(o, n);
  float x[n] = {1.0f, -0.5f, 0.0f};
  double xr[n] = {1.0, -0.5, 0.0}, m[n] = {}, v[n] = {};
  for (int t = 1; t <= 50; ++t) {
    float g[n];
    for (size_t i = 0; i < n; ++i) g[i] = static_cast<float>(std::sin(0.7 * t + double(i)) + 0.1 * double(i));
    opt.step(x, g);
    for (size_t i = 0; i < n; ++i) {
      m[i] = o.beta1 * m[i] + (1 - o.beta1) * g[i];
      v[i] = o.beta2 * v[i] + (1 - o.beta2) * double(g[i]) * g[i];
      const double mh = m[i] / (1 - std::pow(o.beta1, t));
      const double vh = v[i] / (1 - std::pow(o.beta2, t));
      xr[i] = xr[i] - o.lr * (mh / (std::sqrt(vh) + o.eps) + o.weight_decay * xr[i]);
    }
  }
  // 50 float steps against the rule in double. Adam's normalised step m̂/(sqrt(v̂) + ε) is
  // O(1), so x moves by ≤ ~lr a step, ≤ T·lr = 0.5 in all; each step's update carries up to
  // ~16ε relative error (the moments rounded every step, a square root, a division), which
  // adds up along the path (g changes slowly, so not with random signs): 16ε·T·lr; x's own
  // rounding adds ~sqrt(T)·ε·|x| ≤ sqrt(T)·ε. The tolerance is twice their sum, 3.6e-6
  // (measured: 7.6e-7, at x = −0.11); a
  // wrong moment, bias correction or decay moves x by ≥ 1e-4.
  const double adam_tol = 2 * (16 * kFloatEps * 50 * o.lr + std::sqrt(50.0) * kFloatEps);
  for (size_t i = 0; i < n; ++i) EXPECT_TRUE(near_rel(x[i], xr[i], 0, adam_tol)) << i;
  EXPECT_EQ(opt.steps_taken(), 50);
}

TEST(AdamWOptimizer, FirstStepIsSignOfGradientPlusDecoupledDecay) {
  // t = 1: m̂ = g, v̂ = g², so x ← x(1 − ηλ) − η·g/(|g| + ε).
  AdamWOptimizer opt(AdamWOptions{0.1, 0.9, 0.999, 1e-8, 0.5}, 2);
  float x[2] = {2.0f, 2.0f};
  const float g[2] = {3.0f, -0.001f};
  opt.step(x, g);
  // With ε in the denominator: x[1]'s step is 0.1·0.001/(0.001 + 1e-8), 1e-6 short of 0.1.
  EXPECT_TRUE(near_rel(x[0], 2.0 * (1 - 0.05) - 0.1 * 3.0 / (3.0 + 1e-8), kStepRtol));      // 1.8
  EXPECT_TRUE(near_rel(x[1], 2.0 * (1 - 0.05) + 0.1 * 0.001 / (0.001 + 1e-8), kStepRtol));  // 2.0
}

TEST(Optimizer, StepDoesNotAllocate) {
  const size_t n = 1000;
  std::vector<float> x(n, 1.0f), g(n, 0.5f);
  SgdOptimizer sgd(SgdOptions{0.1, 0.9, 1e-4, true}, n);
  AdamWOptimizer adam(AdamWOptions{}, n);
  const long before = g_allocations.load();
  for (int t = 0; t < 20; ++t) {
    sgd.step(x.data(), g.data(), 0.01);
    adam.step(x.data(), g.data(), 0.01);
  }
  EXPECT_EQ(g_allocations.load(), before);
}

TEST(LrSchedule, WarmupCosineAndStepAtTheirFormulaPoints) {
  LrSchedule s;
  s.base_lr = 0.4;
  s.warmup = 4;
  s.total_steps = 104;
  EXPECT_DOUBLE_EQ(s.lr_at(0), 0.1);  // η·1/4
  EXPECT_DOUBLE_EQ(s.lr_at(3), 0.4);  // η·4/4
  EXPECT_DOUBLE_EQ(s.lr_at(50), 0.4);
  s.kind = LrScheduleKind::lr_cosine;
  EXPECT_DOUBLE_EQ(s.lr_at(4), 0.4);     // cos 0
  EXPECT_NEAR(s.lr_at(54), 0.2, 1e-15);  // half way: ½(1 + cos π/2)
  EXPECT_NEAR(s.lr_at(103), 0.4 * 0.5 * (1 + std::cos(M_PI * 99 / 100)), 1e-15);
  s.kind = LrScheduleKind::lr_step;
  s.step_every = 10;
  s.gamma = 0.5;
  EXPECT_DOUBLE_EQ(s.lr_at(13), 0.4);   // ⌊9/10⌋ = 0
  EXPECT_DOUBLE_EQ(s.lr_at(14), 0.2);   // ⌊10/10⌋ = 1
  EXPECT_DOUBLE_EQ(s.lr_at(35), 0.05);  // ⌊31/10⌋ = 3
}

TEST(LrScaling, LinearAndSqrtOfTheGlobalBatch) {
  EXPECT_DOUBLE_EQ(lr_scaled(0.1, "none", 64, 8, 256), 0.1);
  EXPECT_DOUBLE_EQ(lr_scaled(0.1, "linear", 64, 8, 256), 0.2);  // B = 512 = 2·B0
  EXPECT_DOUBLE_EQ(lr_scaled(0.1, "sqrt", 64, 16, 256), 0.2);   // B = 1024 = 4·B0
  RunConfig cfg;
  cfg.lr = 0.1;
  cfg.batch = 64;
  cfg.lr_scaling = "linear";
  cfg.lr_base_batch = 64;
  EXPECT_DOUBLE_EQ(optimizer_create(cfg, 4, 2)->base_lr(), 0.2);
  EXPECT_EQ(optimizer_create(cfg, 4, 2)->name(), "sgd");
  cfg.algo = "diloco";
  EXPECT_EQ(optimizer_create(cfg, 4, 2)->name(), "adamw");  // auto: AdamW inner for DiLoCo
  cfg.optimizer = "sgd";
  EXPECT_EQ(optimizer_create(cfg, 4, 2)->name(), "sgd");
}

// Validation: each case is an InputError whose message names the flag.
void expect_rejected(void (*edit)(RunConfig&), const std::string& flag) {
  RunConfig cfg;
  edit(cfg);
  try {
    config_validate(cfg);
    FAIL() << "accepted; expected an error naming " << flag;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(flag), std::string::npos) << e.what();
  }
}

TEST(VariantKnobs, ForeignKnobsAndBadValuesAreRejectedNamingTheFlag) {
  expect_rejected([](RunConfig& c) { c.outer_lr = 0.5; }, "--outer-lr");  // with --algo ssgd
  expect_rejected(
      [](RunConfig& c) {
        c.outer_momentum = 0.5;
        c.algo = "localsgd";
      },
      "--outer-momentum");
  expect_rejected(
      [](RunConfig& c) {
        c.post_local = 10;
        c.algo = "diloco";
      },
      "--post-local");
  expect_rejected(
      [](RunConfig& c) {
        c.delay = 1;
        c.algo = "cocod";
      },
      "--delay");
  expect_rejected([](RunConfig& c) { c.pull_alpha = 0.2; }, "--pull-alpha");
  expect_rejected(
      [](RunConfig& c) {
        c.slow_momentum = 0.2;
        c.algo = "dasgd";
      },
      "--slow-momentum");
  expect_rejected([](RunConfig& c) { c.bucket_mb = 25; }, "--bucket-mb");  // ssgd without --overlap
  expect_rejected([](RunConfig& c) { c.beta1 = 0.8; }, "--beta1");         // with sgd
  expect_rejected(
      [](RunConfig& c) {
        c.momentum = 0.9;
        c.optimizer = "adamw";
      },
      "--momentum");
  expect_rejected([](RunConfig& c) { c.nesterov = true; }, "--nesterov");  // needs momentum
  expect_rejected([](RunConfig& c) { c.optimizer = "lamb"; }, "--optimizer");
  expect_rejected([](RunConfig& c) { c.lr_schedule = "linear"; }, "--lr-schedule");
  expect_rejected([](RunConfig& c) { c.lr_schedule = "step"; }, "--lr-step-every");
  expect_rejected([](RunConfig& c) { c.lr_step_gamma = 0.5; }, "--lr-step-gamma");
  expect_rejected([](RunConfig& c) { c.lr_scaling = "cubic"; }, "--lr-scaling");
  expect_rejected([](RunConfig& c) { c.lr_base_batch = 32; }, "--lr-base-batch");
  expect_rejected(
      [](RunConfig& c) {
        c.algo = "dasgd";
        c.period = 4;
        c.delay = 5;
      },
      "--delay");
  expect_rejected(
      [](RunConfig& c) {
        c.algo = "diloco";
        c.period = 0;
      },
      "--period");
  expect_rejected(
      [](RunConfig& c) {
        c.algo = "diloco";
        c.outer_lr = 0;
      },
      "--outer-lr");
  expect_rejected(
      [](RunConfig& c) {
        c.algo = "overlap-local";
        c.pull_alpha = 1.5;
      },
      "--pull-alpha");
  // Their own algorithm accepts them.
  RunConfig ok;
  ok.algo = "dasgd";
  ok.delay = 2;
  EXPECT_NO_THROW(config_validate(ok));
  ok = RunConfig{};
  ok.algo = "diloco";
  ok.outer_lr = 1.0;
  ok.beta1 = 0.8;
  EXPECT_NO_THROW(config_validate(ok));
  ok = RunConfig{};
  ok.overlap = true;
  ok.bucket_mb = 1;
  ok.momentum = 0.9;
  ok.nesterov = true;
  EXPECT_NO_THROW(config_validate(ok));
}

TEST(VariantBytes, OneRingAllReduceOfTheModelPerPeriod) {
  // R = 2(n−1)/n·bytes: 1000 bytes on 2 workers send 1000; per H = 4 steps: 250.
  RunConfig cfg;
  cfg.period = 4;
  EXPECT_DOUBLE_EQ(algorithm_create("ssgd", cfg)->bytes_sent_per_step(1000, 2), 1000.0);
  for (const char* algo : {"localsgd", "diloco", "cocod", "dasgd", "overlap-local", "lasgd"}) {
    EXPECT_DOUBLE_EQ(algorithm_create(algo, cfg)->bytes_sent_per_step(1000, 2), 250.0) << algo;
    EXPECT_DOUBLE_EQ(algorithm_create(algo, cfg)->bytes_sent_per_step(1000, 4), 375.0) << algo;
    EXPECT_FALSE(algorithm_create(algo, cfg)->replicas_identical()) << algo;
  }
  EXPECT_TRUE(algorithm_create("ssgd", cfg)->replicas_identical());
  EXPECT_DOUBLE_EQ(algorithm_create("pdasgd", cfg)->bytes_sent_per_step(1000, 4), 1500.0);
  // lasgd with T threads: n·T data streams, thread 0 of rank r draws stream r·T.
  cfg.local_threads = 3;
  const auto lasgd = algorithm_create("lasgd", cfg);
  EXPECT_EQ(lasgd->local_threads(), 3);
  EXPECT_EQ(lasgd->worker_count(4), 12);
  EXPECT_EQ(lasgd->worker_index(2, 4), 6);
  EXPECT_DOUBLE_EQ(lasgd->bytes_sent_per_step(1000, 4), 375.0);
  // hogwild: the exchange's bytes and servers (ps dedicated: 1 server of 4 ranks, W = 3).
  cfg.workers = 4;
  const auto hps = algorithm_create("hogwild", cfg);
  EXPECT_EQ(hps->worker_count(4), 9);
  EXPECT_EQ(hps->worker_index(3, 4), -1);  // the server
  cfg.ps_mode = "async";
  EXPECT_DOUBLE_EQ(hps->bytes_sent_per_step(1000, 4), algorithm_create("ps", cfg)->bytes_sent_per_step(1000, 4));
}

// ---- each variant on one worker ------------------------------------------------------------

using dsgd::testing::nothing_after;
using dsgd::testing::nothing_at_init;
using dsgd::testing::serial_run;
using dsgd::testing::trained;

RunConfig small_config() {
  return dsgd::testing::small_svm_config();
}

size_t param_count(const RunConfig& cfg) {
  DatasetPair data = dataset_load(cfg.dataset, cfg.seed);
  return workload_create(cfg, data.train)->param_count();
}

TEST(VariantsOnOneWorker, EqualTheirSerialOptimizerExactly) {
  RunConfig cfg = small_config();
  cfg.optimizer = "adamw";
  cfg.lr = 0.01;
  const size_t n = param_count(cfg);
  AdamWOptimizer adam(AdamWOptions{cfg.lr, cfg.beta1, cfg.beta2, cfg.eps, cfg.weight_decay}, n);
  const auto serial_adam = serial_run(cfg, adam, nothing_at_init, nothing_after);
  for (const char* algo : {"ssgd", "localsgd", "cocod", "dasgd"}) {
    cfg.algo = algo;
    cfg.delay = cfg.algo == "dasgd" ? 2 : 0;
    EXPECT_EQ(trained(cfg), serial_adam) << algo;
  }
  cfg.algo = "localsgd";
  cfg.delay = 0;
  cfg.post_local = 10;
  EXPECT_EQ(trained(cfg), serial_adam) << "post-local";
  cfg.post_local = 0;
  cfg.algo = "overlap-local";
  cfg.pull_alpha = 0.0;  // no pull: nothing but the local optimizer
  EXPECT_EQ(trained(cfg), serial_adam) << "overlap-local alpha 0";
  cfg.pull_alpha = RunConfig{}.pull_alpha;
  cfg.algo = "lasgd";  // one thread: the model moves through lasgd's buffer, the same optimizer call
  EXPECT_EQ(trained(cfg), serial_adam) << "lasgd, one thread";
  cfg.algo = "pdasgd";  // staleness 0: the current weights
  EXPECT_EQ(trained(cfg), serial_adam) << "pdasgd, staleness 0";

  RunConfig sgd = small_config();
  sgd.momentum = 0.9;
  sgd.nesterov = true;
  sgd.lr_schedule = "cosine";
  sgd.lr_warmup = 5;
  SgdOptimizer nag(SgdOptions{sgd.lr, 0.9, sgd.weight_decay, true}, n);
  const LrSchedule sched = lr_schedule_from_config(sgd, sgd.lr, sgd.steps);
  // Serial with the schedule: step(x, g, lr_at(t)).
  DatasetPair data = dataset_load(sgd.dataset, sgd.seed);
  auto wl = workload_create(sgd, data.train);
  wl->reserve(static_cast<size_t>(sgd.batch));
  std::vector<float> x(n), g(n);
  wl->init_params(x.data(), sgd.seed);
  BatchSampler sampler(data.train.rows, 0, 1, static_cast<size_t>(sgd.batch), sgd.seed);
  for (int64_t t = 0; t < sgd.steps; ++t) {
    wl->load_batch(data.train, sampler.next(), sampler.batch());
    wl->forward(x.data());
    wl->backward(x.data(), g.data(), LayerHook{});
    nag.step(x.data(), g.data(), sched.lr_at(t));
  }
  EXPECT_EQ(trained(sgd), x) << "ssgd, Nesterov, cosine with warm-up";
}

// pdasgd with staleness S on one worker: x_{t+1} = x_t − η·sgd(g(x_{t−min(S,t)})), written out.
TEST(VariantsOnOneWorker, PdasgdEqualsDelayedSgdWrittenOut) {
  RunConfig cfg = small_config();
  cfg.algo = "pdasgd";
  cfg.pd_staleness = 2;
  cfg.momentum = 0.9;
  const size_t n = param_count(cfg);
  SgdOptimizer sgd(SgdOptions{cfg.lr, cfg.momentum, cfg.weight_decay, false}, n);
  DatasetPair data = dataset_load(cfg.dataset, cfg.seed);
  auto wl = workload_create(cfg, data.train);
  wl->reserve(static_cast<size_t>(cfg.batch));
  std::vector<float> x(n), g(n);
  wl->init_params(x.data(), cfg.seed);
  std::vector<std::vector<float>> history{x};  // x_0, x_1, ...
  BatchSampler sampler(data.train.rows, 0, 1, static_cast<size_t>(cfg.batch), cfg.seed);
  for (int64_t t = 0; t < cfg.steps; ++t) {
    const std::vector<float> stale = history[static_cast<size_t>(std::max<int64_t>(0, t - 2))];
    wl->load_batch(data.train, sampler.next(), sampler.batch());
    wl->forward(stale.data());
    wl->backward(stale.data(), g.data(), LayerHook{});
    sgd.step(x.data(), g.data());
    history.push_back(x);
  }
  EXPECT_EQ(trained(cfg), x);
  cfg.pd_staleness = 0;
  EXPECT_NE(trained(cfg), x) << "the staleness has an effect";
}

TEST(VariantsOnOneWorker, DilocoEqualsItsOuterLoopWrittenOut) {
  RunConfig cfg = small_config();
  cfg.algo = "diloco";  // auto: AdamW inner, outer Nesterov lr 0.7 momentum 0.9
  cfg.lr = 0.01;
  const size_t n = param_count(cfg);
  AdamWOptimizer inner(AdamWOptions{cfg.lr, cfg.beta1, cfg.beta2, cfg.eps, cfg.weight_decay}, n);
  std::vector<float> global, v(n, 0.0f);
  const float mu = 0.9f, lr_out = 0.7f;
  const auto ref = serial_run(
      cfg, inner, [&](std::vector<float>& x) { global = x; },
      [&](int64_t t, std::vector<float>& x) {
        if ((t + 1) % cfg.period != 0) return;
        for (size_t i = 0; i < n; ++i) {
          const float d = global[i] - x[i];  // one worker: avg_j x_j = x
          v[i] = mu * v[i] + d;
          global[i] -= lr_out * (d + mu * v[i]);
          x[i] = global[i];
        }
      });
  const auto got = trained(cfg);
  EXPECT_EQ(got, ref);
  // Outer lr 1, momentum 0: x_g ← a up to one rounding per round = the inner optimizer alone.
  AdamWOptimizer adam(AdamWOptions{cfg.lr, cfg.beta1, cfg.beta2, cfg.eps, cfg.weight_decay}, n);
  const auto serial_adam = serial_run(cfg, adam, nothing_at_init, nothing_after);
  cfg.outer_lr = 1.0;
  cfg.outer_momentum = 0.0;
  const auto plain = trained(cfg);
  double worst = 0;
  for (size_t i = 0; i < n; ++i)
    worst = std::max(worst, std::abs(double(plain[i]) - serial_adam[i]) / (1 + std::abs(double(serial_adam[i]))));
  EXPECT_LT(worst, 1e-5);
  EXPECT_NE(got, plain);  // the outer optimizer does change the model
}

TEST(VariantsOnOneWorker, OverlapLocalEqualsItsAnchorRuleWrittenOut) {
  RunConfig cfg = small_config();
  cfg.algo = "overlap-local";
  cfg.pull_alpha = 0.5;
  cfg.slow_momentum = 0.5;
  const size_t n = param_count(cfg);
  SgdOptimizer sgd(SgdOptions{cfg.lr, 0.0, cfg.weight_decay, false}, n);
  std::vector<float> z, u(n, 0.0f), inflight;
  const float a = 0.5f, b = 0.5f;
  const auto ref = serial_run(
      cfg, sgd, [&](std::vector<float>& x) { z = x; },
      [&](int64_t t, std::vector<float>& x) {
        const bool last = t + 1 == cfg.steps;
        const bool sync = (t + 1) % cfg.period == 0;
        if (!sync && !last) return;
        if (!inflight.empty()) {  // one worker: the all-reduce returns the pulled model itself
          for (size_t i = 0; i < n; ++i) {
            u[i] = b * u[i] + (z[i] - inflight[i]);
            z[i] -= u[i];
          }
          inflight.clear();
        }
        if (!sync) return;
        for (size_t i = 0; i < n; ++i) x[i] = (1.0f - a) * x[i] + a * z[i];
        if (!last) inflight = x;
      });
  EXPECT_EQ(trained(cfg), ref);
  SgdOptimizer plain(SgdOptions{cfg.lr, 0.0, cfg.weight_decay, false}, n);
  EXPECT_NE(ref, serial_run(cfg, plain, nothing_at_init, nothing_after));  // the pull is active
}

TEST(VariantsOnOneWorker, ConsensusDistanceIsReportedOnlyWhereReplicasMayDiffer) {
  RunConfig cfg = small_config();
  std::vector<EvalRow> evals;
  TrainerCallbacks cb;
  cb.on_eval = [&](const EvalRow& e) { evals.push_back(e); };
  auto comm = communicator_create_self();
  trainer_run(cfg, *comm, nullptr, cb);
  ASSERT_FALSE(evals.empty());
  for (const auto& e : evals) EXPECT_FALSE(e.consensus_distance.has_value());  // ssgd
  evals.clear();
  cfg.algo = "localsgd";
  trainer_run(cfg, *comm, nullptr, cb);
  ASSERT_FALSE(evals.empty());
  for (const auto& e : evals) {
    ASSERT_TRUE(e.consensus_distance.has_value());
    EXPECT_EQ(*e.consensus_distance, 0.0);  // one replica
  }
}

}  // namespace
