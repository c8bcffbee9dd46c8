// pdasgd's decoupled forward (algorithms/decoupled_forward.hpp): with its forward passes on
// their own thread (one real rank) or inline on a second virtual core (the sim), the run
// equals serial training with stale weights written out on ONE workload instance, including
// what that instance carries between steps (ResNet's BatchNorm running statistics, seen by
// the evaluation, and the augmentation counter); the virtual-clock pipeline follows its
// formula; and the straggler delay split between the two threads adds up to the whole.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "algorithms/optimizer.hpp"
#include "algorithms/variant.hpp"
#include "cluster/communicator.hpp"
#include "cluster/sim_timing.hpp"
#include "cluster/sim_world.hpp"
#include "cluster/straggler.hpp"
#include "engine/batch_sampler.hpp"
#include "engine/trainer.hpp"
#include "sim_ring_options.hpp"
#include "workloads/datasets/dataset.hpp"
#include "workloads/workload.hpp"

extern "C" void openblas_set_num_threads(int);
namespace dsgd {
namespace {

// ResNet-8 with BatchNorm and augmentation on small synthetic images, SGD with momentum.
RunConfig resnet_config(int64_t staleness) {
  RunConfig cfg;
  cfg.workload = "resnet";
  cfg.model = "resnet8";
  cfg.dataset = "synthetic:shape=3x8x8,classes=4,n=256,test=64,noise=0.3";
  cfg.augment = true;
  cfg.algo = "pdasgd";
  cfg.pd_staleness = staleness;
  cfg.batch = 8;
  cfg.steps = 13;
  cfg.eval_every = 13;
  cfg.warmup = 1;
  cfg.lr = 0.05;
  cfg.momentum = 0.9;
  cfg.seed = 5;
  return cfg;
}

struct Reference {
  std::vector<float> params;
  double test_loss = 0, test_acc = 0;
};

// Serial training written out on one instance: step t's forward and backward at
// x_{t−min(S,t)}, x_{t+1} = x_t − η·sgd(g); then the test set evaluated by that instance.
Reference written_out(const RunConfig& cfg) {
  // The trainer's thread count (ResNet's last bits depend on it: see layer_threads.hpp).
  openblas_set_num_threads(static_cast<int>(cfg.threads));
  DatasetPair data = dataset_load(cfg.dataset, cfg.seed);
  auto wl = workload_create(cfg, data.train);
  wl->reserve(static_cast<size_t>(cfg.batch));
  const size_t n = wl->param_count();
  SgdOptimizer sgd(SgdOptions{cfg.lr, cfg.momentum, cfg.weight_decay, false}, n);
  std::vector<float> x(n), g(n);
  wl->init_params(x.data(), cfg.seed);
  std::vector<std::vector<float>> history{x};
  BatchSampler sampler(data.train.rows, 0, 1, static_cast<size_t>(cfg.batch), cfg.seed);
  for (int64_t t = 0; t < cfg.steps; ++t) {
    const std::vector<float>& stale = history[static_cast<size_t>(t - std::min(cfg.pd_staleness, t))];
    wl->load_batch(data.train, sampler.next(), sampler.batch());
    wl->forward(stale.data());
    wl->backward(stale.data(), g.data(), LayerHook{});
    sgd.step(x.data(), g.data());
    history.push_back(x);
  }
  const EvalSums e = wl->evaluate(x.data(), data.test, 0, data.test.rows);
  return Reference{x, e.loss_sum / e.count, e.correct / e.count};
}

struct Trained {
  std::vector<float> params;
  EvalRow last_eval;
};

Trained on_one_rank(const RunConfig& cfg) {
  auto comm = communicator_create_self();
  Trained out;
  TrainerCallbacks cb;
  cb.on_eval = [&](const EvalRow& row) { out.last_eval = row; };
  out.params = trainer_run(cfg, *comm, nullptr, cb).final_params;
  return out;
}

Trained on_simulated(const RunConfig& base, int n) {
  RunConfig cfg = base;
  cfg.backend = "sim";
  cfg.workers = n;
  SimWorld world(sim_ring_options(n, 1e-5, 1e9));
  Trained out;
  world.run([&](int r) {
    TrainerCallbacks cb;
    if (r == 0) cb.on_eval = [&](const EvalRow& row) { out.last_eval = row; };
    TrainResult res = trainer_run(cfg, world.comm(r), nullptr, cb);
    if (r == 0) out.params = std::move(res.final_params);
  });
  return out;
}

TEST(DecoupledForward, ForwardThreadEqualsStaleWeightsWrittenOutOnOneInstance) {
  for (int64_t s : {1, 2}) {
    const RunConfig cfg = resnet_config(s);
    const Reference ref = written_out(cfg);
    const Trained run = on_one_rank(cfg);
    EXPECT_EQ(run.params, ref.params) << "S = " << s;
    // The evaluation instance took the running statistics of the steps taken.
    EXPECT_EQ(run.last_eval.test_loss, ref.test_loss) << "S = " << s;
    EXPECT_EQ(run.last_eval.test_acc, ref.test_acc) << "S = " << s;
  }
}

TEST(DecoupledForward, VirtualClockInlineEqualsTheThreadBitForBit) {
  for (int64_t s : {1, 2}) {
    const RunConfig c = resnet_config(s);
    const Reference r = written_out(c);
    const Trained sim = on_simulated(c, 1);
    EXPECT_EQ(sim.params, r.params) << "S = " << s;
    EXPECT_EQ(sim.last_eval.test_loss, r.test_loss) << "S = " << s;
  }
  const RunConfig cfg = resnet_config(2);
  const Reference ref = written_out(cfg);
  // Two simulated workers: reproducible, and different from one (twice the data).
  const Trained a = on_simulated(cfg, 2), b = on_simulated(cfg, 2);
  EXPECT_EQ(a.params, b.params);
  EXPECT_NE(a.params, ref.params);
}

TEST(DecoupledForward, StalenessZeroStaysTheTrainersForward) {
  RunConfig pd = resnet_config(0);
  RunConfig ssgd = pd;
  ssgd.algo = "ssgd";
  ssgd.pd_staleness = 0;
  EXPECT_EQ(on_one_rank(pd).params, on_one_rank(ssgd).params);
}

// A timing-only plan of `workers` on an ideal network (no evaluation or flush within `steps`):
// data 1, fwd 4, bwd 2 (one layer), opt 1 seconds, S = 1.
SimTimingPlan pipeline_plan(int workers, int64_t steps) {
  SimTimingPlan plan;
  plan.workers = workers;
  plan.steps = steps;
  plan.eval_every = 100;
  plan.flush_every = 100;
  plan.param_bytes = 400;
  plan.cost.data_s = 1;
  plan.cost.fwd_s = 4;
  plan.cost.bwd_layer_s = {2};
  plan.cost.opt_s = 1;
  plan.forward_depth = 1;
  return plan;
}

// The timing-only rule on a hand-computed pipeline: one worker, ideal network, data 1,
// fwd 4, bwd 2 (one layer), opt 1 (seconds), S = 1.
//   step 0: forward [0, 5]; wait 5; backward to 7; update to 8; a(1) = 8.
//   step 1: forward from max(5, a(0) = 0) = 5 to 10; the step starts at 8: wait 2; ends 13.
//   step 2: forward from max(10, a(1) = 8) to 15; starts 13: wait 2; ends 18 — the forward
//   thread's 5 s per step bounds it (serial: 8 s).
// With S = 2 the same (the forward thread is the bottleneck); with fwd 1 instead the backward
// and update bound it: 3 s per step after the first.
TEST(DecoupledForward, TimingRuleIsThePipelineFormula) {
  SimTimingPlan plan = pipeline_plan(1, 6);
  const SimTimingStep rule = variant_get("pdasgd").timing;
  ASSERT_NE(rule, nullptr);
  auto steps = [&] {
    std::vector<SimStepTiming> rows;
    sim_timing_run(
        plan, rule, [](int64_t) { return true; }, [&](int64_t, const SimStepTiming* r) { rows.push_back(r[0]); });
    return rows;
  };
  std::vector<SimStepTiming> rows = steps();
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_DOUBLE_EQ(rows[0].step, 8);
  EXPECT_DOUBLE_EQ(rows[0].fwd, 5);
  EXPECT_DOUBLE_EQ(rows[0].data, 0);
  for (size_t t = 1; t < rows.size(); ++t) {
    EXPECT_DOUBLE_EQ(rows[t].step, 5) << t;
    EXPECT_DOUBLE_EQ(rows[t].fwd, 2) << t;
    EXPECT_DOUBLE_EQ(rows[t].step, rows[t].data + rows[t].fwd + rows[t].bwd + rows[t].opt + rows[t].comm +
                                       rows[t].wait + rows[t].injected);
  }
  plan.forward_depth = 2;
  rows = steps();
  for (size_t t = 1; t < rows.size(); ++t) EXPECT_DOUBLE_EQ(rows[t].step, 5) << t;
  plan.cost.fwd_s = 1;
  plan.forward_depth = 1;
  rows = steps();
  EXPECT_DOUBLE_EQ(rows[0].step, 5);  // 2 + 2 + 1
  for (size_t t = 1; t < rows.size(); ++t) {
    EXPECT_DOUBLE_EQ(rows[t].step, 3) << t;
    EXPECT_DOUBLE_EQ(rows[t].fwd, 0) << t;
  }
  plan.forward_depth = 0;  // ssgd's timeline
  rows = steps();
  for (const SimStepTiming& r : rows) EXPECT_DOUBLE_EQ(r.step, 5);
}

// A straggler of factor 2: each thread's compute doubles (the forward thread's 5 → 9: its
// data phase is not scaled), so the step is bounded by the slower of 9 and 2·2 + 1.
TEST(DecoupledForward, TimingRuleSlowsBothThreadsOfAStraggler) {
  SimTimingPlan plan = pipeline_plan(2, 5);
  plan.stragglers = Stragglers::parse("fixed:rank=1,factor=2", 2, 1);
  std::vector<std::vector<SimStepTiming>> rows;
  sim_timing_run(
      plan, variant_get("pdasgd").timing, [](int64_t) { return true; },
      [&](int64_t, const SimStepTiming* r) {
        rows.push_back({r[0], r[1]});
      });
  ASSERT_EQ(rows.size(), 5u);
  for (size_t t = 2; t < rows.size(); ++t) {
    EXPECT_DOUBLE_EQ(rows[t][0].step, 9) << t;      // rank 0 waits for the straggler at the all-reduce
    EXPECT_DOUBLE_EQ(rows[t][1].injected, 2) << t;  // its backward's share: (2 − 1) · 2
  }
}

TEST(Stragglers, ThreadSharesAddUpToTheWholeDelay) {
  const Stragglers s = Stragglers::parse(
      "fixed:rank=1,factor=1.5;fixed:rank=0,delay=3ms;random:p=0.5,delay=2ms;lognormal:sigma=0.3;"
      "pareto:alpha=2,scale=1ms;periodic:rank=1,every=3,delay=4ms",
      2, 9);
  for (int rank = 0; rank < 2; ++rank)
    for (int64_t step = 0; step < 50; ++step) {
      const double fwd = 0.004, bwd = 0.009;
      const double whole = s.delay_s(rank, step, fwd + bwd);
      const double split = s.delay_s(rank, step, fwd, false) + s.delay_s(rank, step, bwd, true);
      EXPECT_NEAR(split, whole, 1e-15) << rank << " " << step;
      EXPECT_EQ(s.delay_s(rank, step, 0.0, false), 0.0) << "the fixed parts come with with_fixed only";
    }
}

}  // namespace
}  // namespace dsgd
