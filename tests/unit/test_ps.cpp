// The parameter server (algorithms/ps.cpp) on one rank, and Communicator::window_poll:
// every ps mode on 1 worker applies the serial SGD update bit for bit (the server state in
// the window, the update through sgd_update), records staleness 0 (1 with the one-step
// delay), returns the servers' model from global_model, and refuses K larger than the
// model; its byte formula matches docs/algorithms.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "algorithms/algorithm.hpp"
#include "core/errors.hpp"
#include "core/rng.hpp"
#include "workloads/datasets/dataset.hpp"

namespace dsgd {
namespace {

bool at_least(const float*, uint64_t version, const void* ctx) {
  return version >= *static_cast<const uint64_t*>(ctx);
}

TEST(Communicator, WindowPollIsOneEventWhateverItWaitedFor) {
  auto comm = communicator_create_self();
  CollEventLog log;
  log.reserve(4);
  comm->window_create(3);
  const float x[3] = {1.5f, -2.0f, 0.25f};
  comm->window_lock(0);
  comm->window_put(x, 3, 0, 4);
  comm->window_unlock(0);
  comm->attach_log(&log);
  float y[3] = {0, 0, 0};
  const uint64_t want = 4;
  EXPECT_EQ(comm->window_poll(y, 3, 0, at_least, &want), 4u);
  EXPECT_EQ(y[0], 1.5f);
  EXPECT_EQ(y[2], 0.25f);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log.data()[0].kind, static_cast<int32_t>(CollKind::coll_onesided));
  EXPECT_EQ(log.data()[0].bytes_sent, 0.0);
  comm->attach_log(nullptr);
  comm->window_free();
}

struct PsCase {
  const char* mode;
  bool delay;
};

void run_one_worker(const PsCase& c) {
  SCOPED_TRACE(std::string(c.mode) + (c.delay ? " + delay" : ""));
  auto comm = communicator_create_self();
  RunConfig cfg;
  cfg.algo = "ps";
  cfg.ps_mode = c.mode;
  if (std::string(c.mode) == "ssp") cfg.ps_staleness = 0;
  cfg.ps_one_step_delay = c.delay;
  cfg.momentum = 0.9;
  cfg.weight_decay = 1e-3;
  cfg.lr = 0.05;
  auto ps = algorithm_create("ps", cfg);
  const DatasetPair data = dataset_load("synthetic:n=60,d=2,classes=2,test=10", 1);
  auto workload = workload_create(cfg, data.train);
  const size_t n = 37;
  const int64_t steps = 6;
  SgdOptimizer unused(SgdOptions{}, 0);
  SgdOptimizer serial(SgdOptions{cfg.lr, cfg.momentum, cfg.weight_decay, false}, n);
  Rng rng(7);
  std::vector<float> params(n), grads(n), g(n);
  for (auto& v : params) v = static_cast<float>(rng.uniform() - 0.5);
  const std::vector<float> x0(params);
  std::vector<float> ref(x0), ref_prev(x0);
  TrainState s{*comm, *workload, unused, params.data(), grads.data(), n, 0, steps};
  ps->setup(s);
  ASSERT_TRUE(ps->owns_optimizer());
  for (int64_t t = 0; t < steps; ++t) {
    s.step = t;
    s.lr = cfg.lr;
    s.staleness = std::nan("");
    // The gradient is a function of the parameters the worker holds.
    for (size_t i = 0; i < n; ++i) grads[i] = std::sin(3.0f * params[i] + float(i));
    // Reference: serial SGD; with the delay the gradient at the previous iterate.
    const std::vector<float>& at = c.delay ? ref_prev : ref;
    for (size_t i = 0; i < n; ++i) g[i] = std::sin(3.0f * at[i] + float(i));
    std::copy(ref.begin(), ref.end(), ref_prev.begin());
    serial.step(ref.data(), g.data(), cfg.lr);
    ps->optimizer_step(s);
    ps->after_update(s);
    EXPECT_EQ(s.staleness, c.delay && t > 0 ? 1.0 : 0.0) << "step " << t;
    // The worker's copy is pulled for the next step (none after the last: global_model reads).
    if (!c.delay && t + 1 < steps) {
      EXPECT_EQ(params, ref) << "step " << t;
    }
  }
  const float* global = ps->global_model(s);
  EXPECT_EQ(std::vector<float>(global, global + n), ref);
}

TEST(Ps, OneWorkerIsSerialSgdInEveryMode) {
  for (const PsCase& c : {PsCase{"sync", false}, PsCase{"async", false}, PsCase{"ssp", false}, PsCase{"sync", true},
                          PsCase{"async", true}})
    run_one_worker(c);
}

TEST(Ps, RefusesMoreShardsThanParametersAndStatesItsBytes) {
  auto comm = communicator_create_self();
  RunConfig cfg;
  cfg.algo = "ps";
  cfg.ps_shards = 5;
  auto ps = algorithm_create("ps", cfg);
  const DatasetPair data = dataset_load("synthetic:n=60,d=2,classes=2,test=10", 1);
  auto workload = workload_create(cfg, data.train);
  SgdOptimizer opt(SgdOptions{}, 0);
  std::vector<float> params(4), grads(4);
  TrainState s{*comm, *workload, opt, params.data(), grads.data(), 4, 0, 1};
  try {
    ps->setup(s);
    FAIL() << "no throw";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("larger than the model (4 parameters)"), std::string::npos) << e.what();
  }
  // Bytes (docs/algorithms.md): colocated K = n = 2, |x| = 804, m = 402; a push puts
  // 4·(2 + r·m) to the one remote shard; sync without momentum r = 2 (params, accumulator).
  RunConfig sync;
  sync.algo = "ps";
  EXPECT_DOUBLE_EQ(algorithm_create("ps", sync)->bytes_sent_per_step(4 * 804.0, 2), 4.0 * (2 + 2 * 402));
  RunConfig ded;
  ded.algo = "ps";
  ded.ps_mode = "async";
  ded.ps_placement = "dedicated";
  ded.momentum = 0.9;
  auto d = algorithm_create("ps", ded);
  EXPECT_EQ(d->worker_count(3), 2);
  EXPECT_EQ(d->worker_index(2, 3), -1);
  // W·K = 2 pairs, r = 2 (params, velocity), mean over 3 ranks.
  EXPECT_DOUBLE_EQ(d->bytes_sent_per_step(4 * 804.0, 3), 2 * 4.0 * (2 + 2 * 804) / 3);
}

}  // namespace
}  // namespace dsgd
