// The simulated cluster's virtual time and numerics (cluster/sim_world.hpp): collectives
// complete at max(arrivals) + the α-β model exactly, a straggler's delay is exactly the
// others' wait, non-blocking requests, untimed synchronisation, deadlock detection, and
// the timing-only loop agreeing with the threaded one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>

#include "algorithms/variant.hpp"
#include "cluster/sim_timing.hpp"
#include "cluster/sim_world.hpp"
#include "core/errors.hpp"
#include "engine/step_recorder.hpp"
#include "sim_ring_options.hpp"

namespace dsgd {
namespace {

TEST(SimWorld, RingAllreduceTakesExactlyTheModelledTime) {
  const int n = 4;
  const double alpha = 1e-3, bw = 1e8;
  const size_t count = 1000;
  SimWorld world(sim_ring_options(n, alpha, bw));
  std::vector<CollEventLog> logs(n);
  std::vector<std::vector<float>> buf(n, std::vector<float>(count));
  world.run([&](int r) {
    SimCommunicator& c = world.comm(r);
    logs[r].reserve(4);
    c.attach_log(&logs[r]);
    for (size_t i = 0; i < count; ++i) buf[r][i] = static_cast<float>(r + 1) * static_cast<float>(i);
    c.hold_until(0.01 * r);  // worker r arrives at 10·r ms
    c.allreduce_sum(buf[r].data(), count);
  });
  // Ring: 2(n−1)·(α + S/(nB)), S = 4000 bytes.
  const double S = count * 4.0;
  const double model = 2.0 * (n - 1) * (alpha + S / (n * bw));
  const double last = 0.01 * (n - 1);
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(logs[r].size(), 1u);
    const CollEvent& e = logs[r].data()[0];
    EXPECT_DOUBLE_EQ(e.arrive, 0.01 * r);
    EXPECT_NEAR(e.depart, last + model, 1e-15);
    EXPECT_NEAR(world.time(r), last + model, 1e-15);
    for (size_t i = 0; i < count; i += 97) EXPECT_EQ(buf[r][i], 10.0f * static_cast<float>(i));
  }
  // The recorder's split: wait = last arrival − own arrival, comm = the model.
  std::vector<CollSpan> spans(n);
  std::vector<WaitComm> split(n);
  for (int r = 0; r < n; ++r) spans[r] = CollSpan{logs[r].data()[0].arrive, logs[r].data()[0].depart};
  wait_comm_split(spans.data(), n, split.data());
  for (int r = 0; r < n; ++r) {
    EXPECT_NEAR(split[r].wait, last - 0.01 * r, 1e-15);
    EXPECT_NEAR(split[r].comm, model, 1e-15);
  }
}

TEST(SimWorld, FixedStragglerDelayIsExactlyTheOthersWait) {
  const int n = 3;
  SimWorldOptions o = sim_ring_options(n, 20e-6, 1.25e9);
  o.cost.fwd_s = 0.004;
  o.cost.bwd_layer_s = {0.003, 0.001};
  SimWorld world(std::move(o));
  const double delay = 0.020;
  std::vector<CollEventLog> logs(n);
  world.run([&](int r) {
    SimCommunicator& c = world.comm(r);
    logs[r].reserve(8);
    c.attach_log(&logs[r]);
    std::vector<float> g(256, 1.0f);
    for (int step = 0; step < 3; ++step) {
      c.compute_done(ComputePhase::phase_forward);
      c.compute_done(ComputePhase::phase_backward_layer, 1);
      c.compute_done(ComputePhase::phase_backward_layer, 0);
      if (r == 2) c.hold_until(c.now() + delay);  // the straggler
      c.allreduce_average(g.data(), g.size());
    }
  });
  const double model =
      network_collective_time(*world.options().network, CollKind::coll_allreduce, CollAlgo::algo_ring, 1024.0, n);
  for (int step = 0; step < 3; ++step) {
    std::vector<CollSpan> spans(n);
    std::vector<WaitComm> split(n);
    for (int r = 0; r < n; ++r) spans[r] = CollSpan{logs[r].data()[step].arrive, logs[r].data()[step].depart};
    wait_comm_split(spans.data(), n, split.data());
    EXPECT_NEAR(split[0].wait, delay, 1e-12);
    EXPECT_NEAR(split[1].wait, delay, 1e-12);
    EXPECT_NEAR(split[2].wait, 0.0, 1e-12);
    for (int r = 0; r < n; ++r) EXPECT_NEAR(split[r].comm, model, 1e-12);
  }
  EXPECT_NEAR(world.time(0), 3 * (0.008 + delay + model), 1e-12);
}

TEST(SimWorld, NonBlockingAllreduceCompletesAtLastLaunchPlusModel) {
  const int n = 2;
  SimWorld world(sim_ring_options(n, 1e-3, 1e9));
  std::vector<double> waited(n), tested_early(n);
  std::vector<float> out(n);
  world.run([&](int r) {
    SimCommunicator& c = world.comm(r);
    float x = static_cast<float>(r + 1);
    CollRequest req;
    c.hold_until(r == 0 ? 0.0 : 0.5);  // worker 1 launches at 0.5 s
    c.iallreduce_average(&x, 1, req);
    c.hold_until(0.2);
    c.progress(req);  // worker 0 at 0.2 s: worker 1 has not launched yet
    tested_early[r] = req.completed;
    c.hold_until(r == 0 ? 0.3 : 0.5);
    c.wait(req);
    waited[r] = c.now();
    out[r] = x;
  });
  const double model = 2.0 * (1e-3 + 4.0 / (2 * 1e9));
  EXPECT_EQ(tested_early[0], 0.0);
  EXPECT_NEAR(waited[0], 0.5 + model, 1e-15);
  EXPECT_NEAR(waited[1], 0.5 + model, 1e-15);
  EXPECT_EQ(out[0], 1.5f);
  EXPECT_EQ(out[1], 1.5f);
}

// Collectives in flight at once share the network: three non-blocking all-reduces launched
// together complete one model time apart (not all at launch + model, which would let
// per-layer overlap hide more traffic than the link can carry).
TEST(SimWorld, NonBlockingAllreducesInFlightShareTheNetwork) {
  const int n = 2;
  const double alpha = 1e-3, bw = 1e6;
  const size_t count = 1000;
  SimWorld world(sim_ring_options(n, alpha, bw));
  std::vector<std::vector<double>> done(n, std::vector<double>(3));
  world.run([&](int r) {
    SimCommunicator& c = world.comm(r);
    std::vector<std::vector<float>> bufs(3, std::vector<float>(count, 1.0f));
    CollRequest req[3];
    for (int k = 0; k < 3; ++k) c.iallreduce_average(bufs[k].data(), count, req[k]);
    for (int k = 0; k < 3; ++k) {
      c.wait(req[k]);
      done[r][k] = c.now();
    }
  });
  const double model = 2.0 * (alpha + count * 4.0 / (n * bw));
  for (int r = 0; r < n; ++r)
    for (int k = 0; k < 3; ++k) EXPECT_NEAR(done[r][k], (k + 1) * model, 1e-12) << "worker " << r << " request " << k;
}

TEST(SimWorld, UntimedCollectivesTakeNoTimeButSynchronise) {
  const int n = 3;
  SimWorld world(sim_ring_options(n, 1.0, 1.0));  // a very slow network: untimed ops must not use it
  std::vector<double> after(n);
  std::vector<double> sums(n);
  world.run([&](int r) {
    SimCommunicator& c = world.comm(r);
    c.hold_until(0.1 * r);
    double v = r;
    c.untimed_allreduce_sum(&v, 1);
    sums[r] = v;
    after[r] = c.now();
    double msg = 0;
    if (r == 0) {
      msg = 42;
      c.untimed_send(&msg, 1, 2);
    } else if (r == 2) {
      c.untimed_recv(&msg, 1, 0);
      EXPECT_EQ(msg, 42.0);
    }
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(sums[r], 3.0);
    EXPECT_DOUBLE_EQ(after[r], 0.2);
  }
}

TEST(SimWorld, TwoWorkerSumIsTheSameFloatAsAPairwiseAdd) {
  SimWorld world(sim_ring_options(2, 0, 1e9));
  std::vector<std::vector<float>> buf(2, std::vector<float>(64));
  for (int i = 0; i < 64; ++i) {
    buf[0][i] = 0.1f * static_cast<float>(i) + 1e-7f;
    buf[1][i] = 1.0f / static_cast<float>(i + 3);
  }
  std::vector<float> expected(64);
  for (int i = 0; i < 64; ++i) expected[i] = (buf[0][i] + buf[1][i]) * (1.0f / 2.0f);
  world.run([&](int r) { world.comm(r).allreduce_average(buf[r].data(), 64); });
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(buf[0][i], expected[i]);
    EXPECT_EQ(buf[1][i], expected[i]);
  }
}

// An averaging collective's divide by n is charged as the model pass pro rata to the bytes
// divided (SimComputeCost::pass_s): a blocking all-reduce of half the model, a non-blocking one
// at its wait, a reduce-scatter's shard; a plain sum is not divided and costs nothing more.
TEST(SimWorld, AveragingChargesItsDivideAsTheModelPassProRata) {
  const int n = 2;
  const double alpha = 1e-3, bw = 1e8, pass = 4e-3;
  const size_t count = 1000;
  SimWorldOptions options = sim_ring_options(n, alpha, bw);
  options.cost.model_pass_s = pass;
  options.cost.model_bytes = 2.0 * count * sizeof(float);  // the buffer is half the model
  SimWorld world(options);
  std::vector<std::vector<float>> buf(n, std::vector<float>(count, 1.0f)), shard(n, std::vector<float>(count));
  std::vector<double> after_sum(n), after_average(n), after_wait(n), after_scatter(n);
  world.run([&](int r) {
    SimCommunicator& c = world.comm(r);
    c.allreduce_sum(buf[r].data(), count);
    after_sum[r] = c.now();
    c.allreduce_average(buf[r].data(), count);
    after_average[r] = c.now();
    CollRequest req;
    c.iallreduce_average(buf[r].data(), count, req);
    c.wait(req);
    after_wait[r] = c.now();
    c.reduce_scatter_average(buf[r].data(), shard[r].data(), count);
    after_scatter[r] = c.now();
  });
  const double allreduce = 2.0 * (n - 1) * (alpha + count * 4.0 / (n * bw));
  const double scatter = (n - 1) * (alpha + count * 4.0 / (n * bw));
  for (int r = 0; r < n; ++r) {
    EXPECT_NEAR(after_sum[r], allreduce, 1e-15);
    EXPECT_NEAR(after_average[r] - after_sum[r], allreduce + pass / 2, 1e-15);
    EXPECT_NEAR(after_wait[r] - after_average[r], allreduce + pass / 2, 1e-15);
    EXPECT_NEAR(after_scatter[r] - after_wait[r], scatter + pass / 4, 1e-15);  // a shard: half of half
    EXPECT_EQ(buf[r][0], 2.0f);                                                // (1+1), then averages
    EXPECT_EQ(shard[r][0], 2.0f);
  }
}

TEST(SimWorld, DeadlockIsReportedNotHung) {
  SimWorld world(sim_ring_options(2, 0, 1e9));
  try {
    world.run([&](int r) {
      double x = 0;
      world.comm(r).untimed_recv(&x, 1, 1 - r);  // both wait for the other
    });
    FAIL() << "expected a deadlock error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("deadlock"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("worker 0 in recv"), std::string::npos) << e.what();
  }
}

TEST(SimWorld, MismatchedCollectivesFailCleanly) {
  SimWorld world(sim_ring_options(2, 0, 1e9));
  EXPECT_THROW(world.run([&](int r) {
    std::vector<float> x(8 + r);
    world.comm(r).allreduce_sum(x.data(), x.size());
  }),
               Error);
}

TEST(SimWorld, AWorkerErrorStopsTheOthers) {
  SimWorld world(sim_ring_options(3, 0, 1e9));
  try {
    world.run([&](int r) {
      if (r == 1) DSGD_THROW(InputError, "", "worker one failed");
      world.comm(r).barrier();
    });
    FAIL() << "expected the worker's error";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "worker one failed");
  }
}

// The timing-only loop and the threaded simulator agree (same costs, stragglers, network).
TEST(SimTiming, MatchesTheThreadedSimulator) {
  const int n = 4;
  const int64_t steps = 12, period = 3;
  SimTimingPlan plan;
  plan.workers = n;
  plan.steps = steps;
  plan.eval_every = 1000;
  plan.flush_every = 1000;
  const SimTimingStep rule = variant_get("localsgd").timing;
  plan.period = period;
  plan.param_bytes = 4.0 * 1000;
  plan.cost.data_s = 1e-4;
  plan.cost.fwd_s = 2e-3;
  plan.cost.bwd_layer_s = {3e-3, 1e-3};
  plan.cost.opt_s = 5e-4;
  plan.stragglers = Stragglers::parse("lognormal:sigma=0.5;fixed:rank=1,delay=3ms", n, 7);
  plan.network = NetworkModel{LinkModel{50e-6, 1.25e8}, std::nullopt, 1};
  plan.net_algo = CollAlgo::algo_auto;
  std::vector<std::vector<SimStepTiming>> fast(steps);
  sim_timing_run(
      plan, rule, [](int64_t) { return true; }, [&](int64_t s, const SimStepTiming* t) { fast[s].assign(t, t + n); });

  SimWorldOptions o;
  o.workers = n;
  o.network = plan.network;
  o.cost = plan.cost;
  SimWorld world(o);
  std::vector<std::vector<double>> ends(n, std::vector<double>(steps));
  world.run([&](int r) {
    SimCommunicator& c = world.comm(r);
    std::vector<float> x(1000, 1.0f);
    for (int64_t s = 0; s < steps; ++s) {
      c.compute_done(ComputePhase::phase_data);
      const double t1 = c.now();
      c.compute_done(ComputePhase::phase_forward);
      c.compute_done(ComputePhase::phase_backward_layer, 1);
      c.compute_done(ComputePhase::phase_backward_layer, 0);
      c.compute_done(ComputePhase::phase_backward);
      const double t3 = c.now();
      c.hold_until(t3 + plan.stragglers.delay_s(r, s, t3 - t1));
      c.compute_done(ComputePhase::phase_optimizer);
      if ((s + 1) % period == 0) c.allreduce_average(x.data(), x.size());
      ends[r][s] = c.now();
    }
  });
  for (int r = 0; r < n; ++r)
    for (int64_t s = 0; s < steps; ++s)
      EXPECT_NEAR(fast[s][r].start + fast[s][r].step, ends[r][s], 1e-12) << "rank " << r << " step " << s;
}

// A cost file's ssgd (PyTorch DDP) broadcasts the buffers from worker 0 before each forward:
// every step starts with the broadcasts, one per dtype, timed by the network model, after the
// slowest worker has arrived (its wait); the rest of the step is the step without them.
TEST(SimTiming, DdpBroadcastsTheBuffersBeforeTheForward) {
  const int n = 4;
  const int64_t steps = 6;
  for (const bool overlap : {false, true}) {
    SimTimingPlan plan;
    plan.workers = n;
    plan.steps = steps;
    plan.eval_every = 1000;
    plan.flush_every = 1000;
    plan.overlap = overlap;
    plan.bucket_bytes = 3000;
    plan.layer_counts = {500, 1500};
    plan.param_bytes = 4.0 * 2000;
    plan.cost.data_s = 1e-4;
    plan.cost.fwd_s = 2e-3;
    plan.cost.bwd_layer_s = {3e-3, 1e-3};
    plan.cost.opt_s = 5e-4;
    // A straggler before the blocking all-reduce, which every worker leaves at once. (With
    // --overlap the buckets launch at the hooks, before the delay: the straggler would leave
    // last and the others would wait for it at the next broadcast.)
    if (!overlap) plan.stragglers = Stragglers::parse("fixed:rank=1,delay=3ms", n, 7);
    plan.network = NetworkModel{LinkModel{50e-6, 1.25e8}, std::nullopt, 1};
    plan.net_algo = CollAlgo::algo_auto;
    auto rows_of = [&](const std::vector<double>& buffers) {
      SimTimingPlan p = plan;
      p.buffer_broadcast_bytes = buffers;
      std::vector<SimStepTiming> all;
      sim_timing_run(
          p, variant_get("ssgd").timing, [](int64_t) { return true; },
          [&](int64_t, const SimStepTiming* t) { all.insert(all.end(), t, t + n); });
      return all;
    };
    const std::vector<double> sizes = {5632, 152};
    double broadcast = 0;
    for (const double s : sizes)
      broadcast += sim_collective_time(plan.network, std::nullopt, CollKind::coll_broadcast, plan.net_algo, s, n);
    ASSERT_GT(broadcast, 2 * 50e-6);  // at least a latency each
    const std::vector<SimStepTiming> without = rows_of({}), with = rows_of(sizes);
    ASSERT_EQ(with.size(), without.size());
    for (int64_t s = 0; s < steps; ++s)
      for (int i = 0; i < n; ++i) {
        const SimStepTiming &a = with[s * n + i], &b = without[s * n + i];
        const std::string where = fmt::format("overlap {} step {} worker {}", overlap, s, i);
        // The previous step ended at the same time on every worker (its all-reduce), so no one
        // waits for the broadcast and the step is longer by the broadcasts exactly.
        EXPECT_NEAR(a.start, b.start + s * broadcast, 1e-12) << where;
        EXPECT_NEAR(a.step, b.step + broadcast, 1e-12) << where;
        EXPECT_NEAR(a.comm, b.comm + broadcast, 1e-12) << where;
        EXPECT_NEAR(a.wait, b.wait, 1e-12) << where;
        EXPECT_NEAR(a.bytes, b.bytes + (5632 + 152) * (n - 1.0) / n, 1e-9) << where;
        EXPECT_EQ(a.fwd, b.fwd);
      }
  }
}

// Workers alike (no stragglers, no gossip graph): sim_timing_run simulates one worker and
// copies its row; every variant's rule gives the same rows, bit for bit, as simulating each
// worker.
TEST(SimTiming, AlikeWorkersShortcutEqualsSimulatingEachWorker) {
  const int n = 6;
  const int64_t steps = 37;
  SimTimingPlan plan;
  plan.workers = n;
  plan.steps = steps;
  plan.eval_every = 10;
  plan.flush_every = 8;
  plan.period = 4;
  plan.delay = 2;
  plan.forward_depth = 2;
  plan.overlap = true;
  plan.bucket_bytes = 3000;
  plan.layer_counts = {500, 1500, 2000};
  plan.param_bytes = 4.0 * 4000;
  plan.buffer_broadcast_bytes = {400, 24};  // ssgd's (a cost file's DDP); the others ignore it
  plan.cost.data_s = 1e-4;
  plan.cost.fwd_s = 2e-3;
  plan.cost.bwd_layer_s = {3e-3, 1e-3, 2e-3};
  plan.cost.opt_s = 5e-4;
  plan.network = NetworkModel{LinkModel{50e-6, 1.25e8}, std::nullopt, 1};
  plan.net_algo = CollAlgo::algo_auto;
  size_t checked = 0;
  for (const Variant* v : variant_all()) {
    if (!v->timing || v->timing_needs_neighbors) continue;
    auto rows_of = [&](bool each) {
      SimTimingPlan p = plan;
      p.simulate_each_worker = each;
      std::vector<SimStepTiming> all;
      const SimTimingResult r = sim_timing_run(
          p, v->timing, [](int64_t) { return true; },
          [&](int64_t, const SimStepTiming* t) { all.insert(all.end(), t, t + n); });
      EXPECT_EQ(r.worker_steps, steps * n);
      all.push_back(SimStepTiming{r.end_time});
      return all;
    };
    const std::vector<SimStepTiming> alike = rows_of(false), each = rows_of(true);
    ASSERT_EQ(alike.size(), each.size()) << v->name;
    EXPECT_EQ(std::memcmp(alike.data(), each.data(), alike.size() * sizeof(SimStepTiming)), 0) << v->name;
    ++checked;
  }
  EXPECT_GE(checked, 10u);  // ssgd, localsgd, diloco, cocod, dasgd, overlap-local, zero, dreamddp, lasgd, pdasgd
}

}  // namespace
}  // namespace dsgd
