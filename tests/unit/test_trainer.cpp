// The training loop on one rank (no MPI): a 1-worker run equals serial SGD written out
// by hand; same seed gives the same model; localsgd with H=1 equals ssgd; the batch
// sampler's shards are disjoint and reshuffle per epoch; the wait/comm split follows
// the arrival/departure formulas of docs/metrics.md.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "algorithms/optimizer.hpp"
#include "cluster/communicator.hpp"
#include "core/errors.hpp"
#include "engine/batch_sampler.hpp"
#include "engine/run_schedule.hpp"
#include "engine/step_recorder.hpp"
#include "engine/trainer.hpp"
#include "workloads/datasets/dataset.hpp"
#include "workloads/workload.hpp"

using namespace dsgd;

namespace {

RunConfig small_config() {
  RunConfig cfg;
  cfg.workload = "svm";
  cfg.dataset = "synthetic:n=2000,d=50,classes=3,noise=0.0,test=400";
  cfg.batch = 16;
  cfg.steps = 60;
  cfg.lr = 0.05;
  cfg.momentum = 0.0;
  cfg.weight_decay = 1e-3;
  cfg.seed = 7;
  cfg.eval_every = 20;
  cfg.warmup = 2;
  return cfg;
}

}  // namespace

TEST(BatchSampler, ShardsAreDisjointAndCoverEqualParts) {
  const size_t n = 1003;
  std::set<uint32_t> seen;
  for (int r = 0; r < 4; ++r) {
    BatchSampler s(n, r, 4, 10, 1);
    EXPECT_EQ(s.shard_size(), n / 4);
    std::set<uint32_t> mine;
    for (size_t b = 0; b < s.batches_per_epoch(); ++b) {
      const uint32_t* idx = s.next();
      for (size_t i = 0; i < 10; ++i) mine.insert(idx[i]);
    }
    EXPECT_EQ(mine.size(), s.batches_per_epoch() * 10);  // no repeats within an epoch
    for (auto i : mine) EXPECT_TRUE(seen.insert(i).second) << "sample " << i << " in two shards";
  }
}

TEST(BatchSampler, EpochsReshuffleDeterministically) {
  BatchSampler a(100, 0, 1, 10, 5), b(100, 0, 1, 10, 5), c(100, 0, 1, 10, 6);
  std::vector<uint32_t> ea, eb, ec, ea2;
  for (int i = 0; i < 10; ++i) {
    const uint32_t* x = a.next();
    ea.insert(ea.end(), x, x + 10);
    x = b.next();
    eb.insert(eb.end(), x, x + 10);
    x = c.next();
    ec.insert(ec.end(), x, x + 10);
  }
  for (int i = 0; i < 10; ++i) {
    const uint32_t* x = a.next();
    ea2.insert(ea2.end(), x, x + 10);
  }
  EXPECT_EQ(ea, eb);
  EXPECT_NE(ea, ec);
  EXPECT_NE(ea, ea2);
  EXPECT_EQ(a.epoch(), 1);
}

TEST(BatchSampler, BatchLargerThanShardIsAnInputError) {
  EXPECT_THROW(BatchSampler(100, 0, 4, 64, 1), InputError);
}

TEST(WaitCommSplit, LastArrivalDefinesWait) {
  // rank 0 arrives at 1.0, rank 1 at 1.5 (the straggler); both leave at 2.0.
  CollSpan spans[2] = {{1.0, 2.0}, {1.5, 2.0}};
  WaitComm out[2];
  wait_comm_split(spans, 2, out);
  EXPECT_DOUBLE_EQ(out[0].wait, 0.5);
  EXPECT_DOUBLE_EQ(out[0].comm, 0.5);
  EXPECT_DOUBLE_EQ(out[1].wait, 0.0);
  EXPECT_DOUBLE_EQ(out[1].comm, 0.5);
  // A rank that leaves before the last arrival (rooted collective): all of it is wait.
  CollSpan rooted[2] = {{1.0, 1.2}, {1.5, 1.6}};
  wait_comm_split(rooted, 2, out);
  EXPECT_DOUBLE_EQ(out[0].wait, 0.2);
  EXPECT_DOUBLE_EQ(out[0].comm, 0.0);
}

TEST(UnionLength, OverlappingRequestsCountOnce) {
  // Two requests in flight together from 1.5 to 2.0, a third alone later: the union, not the sum.
  std::vector<Interval> iv = {{2.5, 3.0}, {1.0, 2.0}, {1.5, 2.2}};
  EXPECT_DOUBLE_EQ(union_length(iv), 1.2 + 0.5);
  // Nested, empty and inverted intervals.
  std::vector<Interval> nested = {{0.0, 4.0}, {1.0, 2.0}, {3.0, 3.0}, {5.0, 4.5}};
  EXPECT_DOUBLE_EQ(union_length(nested), 4.0);
  std::vector<Interval> none;
  EXPECT_DOUBLE_EQ(union_length(none), 0.0);
}

TEST(Trainer, OneWorkerEqualsSerialSgd) {
  const RunConfig cfg = small_config();
  auto comm = communicator_create_self();
  TrainResult result = trainer_run(cfg, *comm, nullptr, {});
  ASSERT_EQ(result.steps, cfg.steps);

  // Serial SGD written out: same data, same sampler, same initialisation.
  DatasetPair data = dataset_load(cfg.dataset, cfg.seed);
  auto wl = workload_create(cfg, data.train);
  wl->reserve(static_cast<size_t>(cfg.batch));
  std::vector<float> x(wl->param_count()), g(wl->param_count());
  wl->init_params(x.data(), cfg.seed);
  BatchSampler sampler(data.train.rows, 0, 1, static_cast<size_t>(cfg.batch), cfg.seed);
  const float lr = static_cast<float>(cfg.lr), wd = static_cast<float>(cfg.weight_decay);
  for (int64_t t = 0; t < cfg.steps; ++t) {
    wl->load_batch(data.train, sampler.next(), sampler.batch());
    wl->forward(x.data());
    wl->backward(x.data(), g.data(), LayerHook{});
    for (size_t i = 0; i < x.size(); ++i) x[i] -= lr * (g[i] + wd * x[i]);
  }
  ASSERT_EQ(result.final_params.size(), x.size());
  for (size_t i = 0; i < x.size(); ++i) ASSERT_FLOAT_EQ(result.final_params[i], x[i]) << "parameter " << i;
}

TEST(Trainer, SameSeedSameModelDifferentSeedDifferent) {
  RunConfig cfg = small_config();
  cfg.momentum = 0.9;
  auto comm = communicator_create_self();
  const auto a = trainer_run(cfg, *comm, nullptr, {}).final_params;
  const auto b = trainer_run(cfg, *comm, nullptr, {}).final_params;
  cfg.seed = 8;
  const auto c = trainer_run(cfg, *comm, nullptr, {}).final_params;
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(Trainer, LocalSgdWithPeriodOneEqualsSsgd) {
  RunConfig cfg = small_config();
  auto comm = communicator_create_self();
  cfg.algo = "ssgd";
  const auto a = trainer_run(cfg, *comm, nullptr, {}).final_params;
  cfg.algo = "localsgd";
  cfg.period = 1;
  const auto b = trainer_run(cfg, *comm, nullptr, {}).final_params;
  EXPECT_EQ(a, b);
}

TEST(Trainer, EvaluationsReportedAndTimersOffStillTrains) {
  RunConfig cfg = small_config();
  std::vector<EvalRow> evals;
  TrainerCallbacks cb;
  cb.on_eval = [&](const EvalRow& e) { evals.push_back(e); };
  auto comm = communicator_create_self();
  const auto with = trainer_run(cfg, *comm, nullptr, cb);
  ASSERT_EQ(evals.size(), 4u);  // step 0, 20, 40, 60
  EXPECT_EQ(evals.front().step, 0);
  EXPECT_EQ(evals.back().step, 60);
  EXPECT_GT(evals.back().test_acc, evals.front().test_acc);
  EXPECT_GT(evals.back().test_acc, 0.7);
  cfg.timers = false;
  const auto without = trainer_run(cfg, *comm, nullptr, {});
  EXPECT_EQ(with.final_params, without.final_params);
  EXPECT_GT(without.timed_wall_s, 0.0);
}

// A learning rate that blows the model up: the run stops at the first evaluation after
// the loss turns non-finite, says "diverged" with that step, and its evaluation has NaN
// test metrics (so no target can be reached from it); ranks agree, timers on or off.
TEST(Trainer, NonFiniteLossStopsTheRunAsDiverged) {
  RunConfig cfg = small_config();
  cfg.lr = 1e6;
  cfg.steps = 200;
  for (const bool timers : {true, false}) {
    cfg.timers = timers;
    std::vector<EvalRow> evals;
    TrainerCallbacks cb;
    cb.on_eval = [&](const EvalRow& e) { evals.push_back(e); };
    auto comm = communicator_create_self();
    const TrainResult r = trainer_run(cfg, *comm, nullptr, cb);
    EXPECT_EQ(r.status, RunStatus::run_diverged);
    ASSERT_GE(r.diverged_step, 0);
    ASSERT_FALSE(evals.empty());
    EXPECT_LT(evals.back().step, cfg.steps);        // stopped early
    EXPECT_GE(evals.back().step, r.diverged_step);  // at the evaluation after it
    EXPECT_LT(evals.back().step, r.diverged_step + cfg.eval_every + 1);
    EXPECT_TRUE(std::isnan(evals.back().test_loss));
    EXPECT_TRUE(std::isnan(evals.back().test_acc));
    EXPECT_NE(r.error.find(fmt::format("step {}", r.diverged_step)), std::string::npos) << r.error;
  }
}

TEST(Trainer, SaneRunIsCompleted) {
  auto comm = communicator_create_self();
  const TrainResult r = trainer_run(small_config(), *comm, nullptr, {});
  EXPECT_EQ(r.status, RunStatus::run_completed);
  EXPECT_EQ(r.diverged_step, -1);
  EXPECT_TRUE(r.error.empty());
}

TEST(RunSchedule, StepsFromEpochsWarmupAndEvaluationPeriod) {
  RunConfig cfg;
  cfg.steps = 0;
  cfg.epochs = 2.5;
  cfg.warmup = 5;
  cfg.eval_every = 0;
  RunSchedule s = run_schedule_make(cfg, 40);
  EXPECT_EQ(s.steps, 100);
  EXPECT_EQ(s.warmup, 5);
  EXPECT_EQ(s.eval_every, 10);
  EXPECT_EQ(s.flush_every, 10);
  cfg.steps = 3;
  cfg.eval_every = 5000;
  s = run_schedule_make(cfg, 40);
  EXPECT_EQ(s.steps, 3);
  EXPECT_EQ(s.warmup, 2);  // at least one timed step
  EXPECT_EQ(s.flush_every, 1000);
}
