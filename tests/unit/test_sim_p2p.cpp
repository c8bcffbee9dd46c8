// The simulated cluster's sharded collectives, point-to-point exchanges and one-sided
// windows (cluster/sim_world.hpp): reduce-scatter / all-gather / exchanges take exactly
// the modelled α-β time on a known link, sends serialise on the sender's link, the link
// class of a pair is used, non-blocking exchanges overlap compute, window locks are
// exclusive in virtual time with MPI's versions, and deadlocks name the blocked workers.
#include <gtest/gtest.h>

#include <numeric>

#include "cluster/sim_world.hpp"
#include "core/errors.hpp"
#include "sim_ring_options.hpp"

namespace dsgd {
namespace {

TEST(SimP2p, ReduceScatterAndAllgatherTakeExactlyTheModelledTime) {
  const int n = 4;
  const double alpha = 1e-3, bw = 1e8;
  const size_t count = 1001;  // blocks of uneven size
  SimWorld world(sim_ring_options(n, alpha, bw));
  std::vector<CollEventLog> logs(n);
  std::vector<std::vector<float>> send(n, std::vector<float>(count)), shard(n), full(n, std::vector<float>(count, -1));
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count; ++i) send[r][i] = 0.1f * static_cast<float>(r + 1) + static_cast<float>(i);
  std::vector<double> after_rs(n);
  world.run([&](int r) {
    SimCommunicator& c = world.comm(r);
    logs[r].reserve(4);
    c.attach_log(&logs[r]);
    const size_t b = Communicator::shard_begin(count, n, r), e = Communicator::shard_begin(count, n, r + 1);
    shard[r].assign(e - b, 0.0f);
    c.hold_until(0.01 * r);
    c.reduce_scatter_sum(send[r].data(), shard[r].data(), count);
    after_rs[r] = c.now();
    std::copy(shard[r].begin(), shard[r].end(), full[r].begin() + static_cast<ptrdiff_t>(b));
    c.allgather(full[r].data(), count);
  });
  // Ring: (n−1)·(α + S/(nB)) each, S = 4·count bytes.
  const double model = (n - 1) * (alpha + count * 4.0 / (n * bw));
  const double last = 0.01 * (n - 1);
  for (int r = 0; r < n; ++r) {
    EXPECT_NEAR(after_rs[r], last + model, 1e-15);
    EXPECT_NEAR(world.time(r), last + 2 * model, 1e-15);
    ASSERT_EQ(logs[r].size(), 2u);
    EXPECT_EQ(logs[r].data()[0].kind, int32_t(CollKind::coll_reduce_scatter));
    EXPECT_EQ(logs[r].data()[1].kind, int32_t(CollKind::coll_allgather));
    // Sum in rank order, every block gathered everywhere.
    for (size_t i = 0; i < count; ++i) {
      float expected = send[0][i];
      for (int j = 1; j < n; ++j) expected += send[j][i];
      ASSERT_EQ(full[r][i], expected) << "rank " << r << " element " << i;
    }
  }
}

TEST(SimP2p, SendrecvArrivesAtSendTimePlusAlphaPlusSOverB) {
  const double alpha = 2e-4, bw = 1e9;
  const size_t count = 25000;  // 100 kB: S/B = 100 us
  SimWorld world(sim_ring_options(2, alpha, bw));
  std::vector<std::vector<float>> out(2, std::vector<float>(count)), in(2, std::vector<float>(count));
  std::vector<CollEventLog> logs(2);
  world.run([&](int r) {
    SimCommunicator& c = world.comm(r);
    logs[r].reserve(2);
    c.attach_log(&logs[r]);
    std::iota(out[r].begin(), out[r].end(), static_cast<float>(1000 * r));
    c.hold_until(0.01 * r);
    c.sendrecv(out[r].data(), count, 1 - r, in[r].data(), count, 1 - r);
  });
  const double sb = count * 4.0 / bw;
  // Worker 1 sends at 10 ms: worker 0 completes when that message arrives; worker 1 when
  // its own send has left (worker 0's message arrived long before).
  EXPECT_NEAR(world.time(0), 0.01 + alpha + sb, 1e-15);
  EXPECT_NEAR(world.time(1), 0.01 + sb, 1e-15);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(in[r], out[1 - r]);
    ASSERT_EQ(logs[r].size(), 1u);
    EXPECT_DOUBLE_EQ(logs[r].data()[0].arrive, 0.01 * r);
    EXPECT_EQ(logs[r].data()[0].bytes_sent, count * 4.0);
  }
}

TEST(SimP2p, NeighbourExchangeSerialisesTheSendsOnTheSendersLink) {
  const int n = 4;
  const double alpha = 1e-4, bw = 1e8;
  const size_t count = 25000;  // S/B = 1 ms
  SimWorld world(sim_ring_options(n, alpha, bw));
  std::vector<std::vector<float>> recv(n, std::vector<float>(3 * count));
  world.run([&](int r) {
    std::vector<int> peers;
    for (int j = 0; j < n; ++j)
      if (j != r) peers.push_back(j);
    std::vector<float> mine(count, static_cast<float>(r));
    world.comm(r).neighbor_exchange(mine.data(), count, peers.data(), peers.size(), recv[r].data());
  });
  const double sb = count * 4.0 / bw;
  // Worker j is the k-th destination of worker i (k = position in i's ascending peers):
  // arrival α + (k+1)·S/B. Each worker's own sends end at 3·S/B.
  for (int r = 0; r < n; ++r) {
    double expected = 3 * sb;
    int k = 0;
    for (int i = 0; i < n; ++i) {
      if (i == r) continue;
      const int pos = r - (r > i ? 1 : 0);  // r's index among i's peers
      expected = std::max(expected, alpha + (pos + 1) * sb);
      EXPECT_EQ(recv[r][static_cast<size_t>(k) * count], static_cast<float>(i));
      ++k;
    }
    EXPECT_NEAR(world.time(r), expected, 1e-15) << r;
  }
  EXPECT_NEAR(world.time(3), alpha + 3 * sb, 1e-15);
  EXPECT_NEAR(world.time(0), 3 * sb, 1e-15);
}

TEST(SimP2p, MessagesBetweenGroupsUseTheInterGroupLink) {
  SimWorldOptions o = sim_ring_options(4, 1e-5, 1e9);
  o.network->inter = LinkModel{1e-3, 1e7};
  o.network->groups = 2;
  o.group_of = {0, 0, 1, 1};
  SimWorld world(std::move(o));
  EXPECT_EQ(world.message_time(0, 0, 4000), 0.0);
  EXPECT_NEAR(world.message_time(0, 1, 4000), 1e-5 + 4000 / 1e9, 1e-18);
  EXPECT_NEAR(world.message_time(1, 2, 4000), 1e-3 + 4000 / 1e7, 1e-18);
  std::vector<float> got(4, 0);
  world.run([&](int r) {
    const int peer = r ^ 2;  // 0↔2, 1↔3: across the groups
    float x = static_cast<float>(r);
    world.comm(r).sendrecv(&x, 1, peer, &got[r], 1, peer);
  });
  for (int r = 0; r < 4; ++r) {
    EXPECT_NEAR(world.time(r), 1e-3 + 4 / 1e7, 1e-15);
    EXPECT_EQ(got[r], static_cast<float>(r ^ 2));
  }
}

TEST(SimP2p, NonBlockingExchangeOverlapsCompute) {
  const double alpha = 1e-3, bw = 1e9;
  SimWorldOptions o = sim_ring_options(2, alpha, bw);
  o.cost.fwd_s = 0.0004;  // less than α: the exchange is still in flight after one phase
  SimWorld world(std::move(o));
  std::vector<double> seen_done(2, -1), after_wait(2), after_second(2);
  world.run([&](int r) {
    SimCommunicator& c = world.comm(r);
    std::vector<float> out(10, static_cast<float>(r)), in(10);
    CollRequest req;
    c.isendrecv(out.data(), 10, 1 - r, in.data(), 10, 1 - r, req);
    c.compute_done(ComputePhase::phase_forward);  // 0.4 ms < α + 40 ns
    c.progress(req);
    if (req.completed > 0) seen_done[r] = req.completed;
    c.wait(req);
    after_wait[r] = c.now();
    EXPECT_EQ(in[0], static_cast<float>(1 - r));
    // Second round: compute 5 phases (2 ms) > the message time: wait costs nothing.
    c.isendrecv(out.data(), 10, 1 - r, in.data(), 10, 1 - r, req);
    const double launched = c.now();
    for (int k = 0; k < 5; ++k) c.compute_done(ComputePhase::phase_forward);
    c.progress(req);
    EXPECT_GT(req.completed, 0.0);
    c.wait(req);
    after_second[r] = c.now() - launched;
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(seen_done[r], -1) << "progress saw the exchange complete before its arrival";
    EXPECT_NEAR(after_wait[r], alpha + 40 / bw, 1e-15);
    EXPECT_NEAR(after_second[r], 5 * 0.0004, 1e-15);
  }
}

TEST(SimP2p, WindowLocksAreExclusiveInVirtualTime) {
  const double alpha = 1e-4, bw = 1e8;
  const size_t count = 2500;  // S/B = 100 us: a get or put costs 200 us
  SimWorld world(sim_ring_options(3, alpha, bw));
  const double op = alpha + count * 4.0 / bw;
  std::vector<double> granted(3), unlocked(3);
  std::vector<uint64_t> version_seen(3);
  std::vector<float> first_seen(3);
  world.run([&](int r) {
    SimCommunicator& c = world.comm(r);
    c.window_create(count);
    if (r == 1) return c.window_free();
    std::vector<float> x(count), mine(count, static_cast<float>(10 + r));
    // Worker 2 asks at 1 ms and keeps the lock until 4 ms (yielding inside the epoch);
    // worker 0 asks at 1.5 ms, while it is held: it blocks until worker 2 unlocks.
    c.hold_until(r == 2 ? 0.001 : 0.0015);
    c.window_lock(1);
    granted[r] = c.now();
    uint64_t v = 0;
    c.window_get(x.data(), count, 1, &v);
    version_seen[r] = v;
    first_seen[r] = x[0];
    c.window_put(mine.data(), count, 1, v + 1);
    if (r == 2) {
      c.hold_until(0.004);
      CollRequest req;  // a self exchange, only to yield inside the epoch
      float a = 0, b = 0;
      c.isendrecv(&a, 1, 2, &b, 1, 2, req);
      c.progress(req);
      c.wait(req);
    }
    c.window_unlock(1);
    unlocked[r] = c.now();
    c.window_free();
  });
  EXPECT_DOUBLE_EQ(granted[2], 0.001);
  EXPECT_EQ(version_seen[2], 0u);
  EXPECT_EQ(first_seen[2], 0.0f);
  EXPECT_NEAR(unlocked[2], 0.004, 1e-15);
  EXPECT_NEAR(granted[0], 0.004, 1e-15);  // at the holder's unlock
  EXPECT_EQ(version_seen[0], 1u);         // worker 2's put, with its version
  EXPECT_EQ(first_seen[0], 12.0f);
  EXPECT_NEAR(unlocked[0], 0.004 + 2 * op, 1e-15);
}

TEST(SimP2p, AFreeLockIsGrantedAtThePreviousUnlock) {
  // Worker 0's epoch [0, 2·op] runs without yielding; worker 2 asks at op (inside it in
  // virtual time): granted at worker 0's unlock, not at its request.
  const double alpha = 1e-4, bw = 1e8;
  const size_t count = 2500;
  SimWorld world(sim_ring_options(3, alpha, bw));
  const double op = alpha + count * 4.0 / bw;
  std::vector<double> granted(3);
  world.run([&](int r) {
    SimCommunicator& c = world.comm(r);
    c.window_create(count);
    if (r != 1) {
      std::vector<float> x(count);
      uint64_t v = 0;
      c.hold_until(r == 0 ? 0.0 : op);
      c.window_lock(1);
      granted[r] = c.now();
      c.window_get(x.data(), count, 1, &v);
      c.window_put(x.data(), count, 1, v + 1);
      c.window_unlock(1);
    }
    c.window_free();
  });
  EXPECT_EQ(granted[0], 0.0);
  EXPECT_NEAR(granted[2], 2 * op, 1e-15);
}

// An access to the worker's own window crosses no link: it is a copy in its memory, charged as
// the model pass pro rata (nothing without a measured pass).
TEST(SimP2p, OwnWindowAccessCostsACopy) {
  for (const double pass : {0.0, 2e-6}) {
    SimWorldOptions o = sim_ring_options(2, 1e-3, 1e6);
    o.cost.model_pass_s = pass;
    o.cost.model_bytes = 800;  // 200 floats
    SimWorld world(o);
    world.run([&](int r) {
      SimCommunicator& c = world.comm(r);
      c.window_create(100);
      std::vector<float> x(100, 1.0f);
      uint64_t v = 7;
      c.window_lock(r);
      c.window_put(x.data(), 100, r, 5);
      c.window_get(x.data(), 100, r, &v);
      c.window_unlock(r);
      EXPECT_EQ(v, 5u);
      EXPECT_DOUBLE_EQ(c.now(), 2 * 0.5 * pass);  // two copies of half the model
      c.window_free();
    });
  }
}

// On an ideal network a window read costs nothing: a poller at an earlier virtual time must
// not read again at that time for ever (the writer behind it would never act); it waits for
// the epoch that puts and leaves at its unlock, whatever the ranks' order.
TEST(SimP2p, APollOnAnIdealNetworkWaitsForTheWritersPut) {
  for (const int writer : {0, 1}) {
    SimWorldOptions o = sim_ring_options(2, 0, 1e9);
    o.network.reset();  // an ideal network: every access takes 0 s
    SimWorld world(o);
    const int poller = 1 - writer;
    world.run([&](int r) {
      SimCommunicator& c = world.comm(r);
      c.window_create(2);
      if (r == writer) {
        c.hold_until(0.003);
        const float x[2] = {4.0f, 5.0f};
        c.window_lock(poller);
        c.window_put(x, 2, poller, 9);
        c.window_unlock(poller);
      } else {
        float y[2] = {0, 0};
        const uint64_t want = 9;
        auto at_least = [](const float*, uint64_t v, const void* ctx) {
          return v >= *static_cast<const uint64_t*>(ctx);
        };
        EXPECT_EQ(c.window_poll(y, 2, poller, at_least, &want), 9u);
        EXPECT_EQ(y[1], 5.0f);
        EXPECT_DOUBLE_EQ(c.now(), 0.003);  // the put's unlock, not later
      }
      c.window_free();
    });
  }
}

TEST(SimP2p, APollThatNoPutCanEndIsADeadlock) {
  SimWorldOptions o = sim_ring_options(2, 0, 1e9);
  o.network.reset();
  SimWorld world(o);
  try {
    world.run([&](int r) {
      SimCommunicator& c = world.comm(r);
      c.window_create(1);
      float y = 0;
      auto never = [](const float*, uint64_t v, const void*) { return v > 0; };
      if (r == 0) c.window_poll(&y, 1, 1, never, nullptr);
      double x = 0;
      c.untimed_recv(&x, 1, 0);  // worker 1 waits for a message worker 0 never sends
    });
    FAIL() << "expected a deadlock error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("deadlock"), std::string::npos) << what;
    EXPECT_NE(what.find("worker 0 in window_poll, waiting for a put to the window of worker 1"), std::string::npos)
        << what;
  }
}

TEST(SimP2p, ADeadlockOnAWindowNamesTheBlockedWorkers) {
  SimWorld world(sim_ring_options(2, 0, 1e9));
  try {
    world.run([&](int r) {
      SimCommunicator& c = world.comm(r);
      c.window_create(4);
      c.hold_until(0.001 * r);
      c.window_lock(1);  // worker 0 first; worker 1 then blocks on it
      double x = 0;
      c.untimed_recv(&x, 1, 1);  // worker 0 waits for a message worker 1 never sends
    });
    FAIL() << "expected a deadlock error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("deadlock"), std::string::npos) << what;
    EXPECT_NE(what.find("worker 0 in recv from worker 1"), std::string::npos) << what;
    EXPECT_NE(what.find("worker 1 in window_lock of worker 1 (held by worker 0)"), std::string::npos) << what;
  }
}

TEST(SimP2p, AnExchangeDeadlockNamesTheMissingSender) {
  SimWorld world(sim_ring_options(3, 0, 1e9));
  try {
    world.run([&](int r) {
      float x = 0, y = 0;
      const int peer = (r + 1) % 3;
      const int from = r == 0 ? 2 : r - 1;
      if (r == 2) return;  // never sends to worker 0
      world.comm(r).sendrecv(&x, 1, peer, &y, 1, from);
    });
    FAIL() << "expected a deadlock error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("worker 0 in exchange waiting for a message from worker(s) 2"), std::string::npos) << what;
  }
}

TEST(SimP2p, NativeFloorMakesCommunicationLastAtLeastTheNativeTime) {
  // Emulated: a fast link; native (this host's fabric): 5 ms latency. Every collective and
  // message takes max(emulated, native), as a real one under emulation does.
  SimWorldOptions o = sim_ring_options(2, 1e-6, 1e10);
  o.native = NetworkModel{LinkModel{5e-3, 1e9}, std::nullopt, 1};
  SimWorld world(std::move(o));
  const size_t count = 1000;
  const double S = count * 4.0;
  std::vector<double> after_allreduce(2), after_sendrecv(2);
  world.run([&](int r) {
    SimCommunicator& c = world.comm(r);
    std::vector<float> x(count, 1.0f), y(count);
    c.allreduce_sum(x.data(), count);
    after_allreduce[r] = c.now();
    c.sendrecv(x.data(), count, 1 - r, y.data(), count, 1 - r);
    after_sendrecv[r] = c.now() - after_allreduce[r];
  });
  const double native_ring = 2.0 * (5e-3 + S / (2 * 1e9));  // ring all-reduce of 2 on the native link
  EXPECT_GT(native_ring, network_collective_time(NetworkModel{LinkModel{1e-6, 1e10}, std::nullopt, 1},
                                                 CollKind::coll_allreduce, CollAlgo::algo_ring, S, 2));
  for (int r = 0; r < 2; ++r) {
    EXPECT_NEAR(after_allreduce[r], native_ring, 1e-15);
    EXPECT_NEAR(after_sendrecv[r], 5e-3 + S / 1e9, 1e-15);
  }
  // Where the emulated link is the slower one, it wins.
  EXPECT_NEAR(sim_message_time(NetworkModel{LinkModel{1.0, 1e3}, std::nullopt, 1},
                               NetworkModel{LinkModel{5e-3, 1e9}, std::nullopt, 1}, {}, 0, 1, S),
              1.0 + S / 1e3, 1e-12);
}

}  // namespace
}  // namespace dsgd
