// The non-blocking form of the compressors (algorithms/compress/compressor.hpp) against the
// blocking one, on the simulated cluster (2 and 3 workers) and on one rank: start / progress
// / advance / finish give the same floats as allreduce_average, on every worker, with the
// same recorded collectives (kind, bytes); the work between start and finish overlaps the
// communication; misuse is refused. Also the non-blocking all-gather of the Communicator.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "algorithms/compress/compressor.hpp"
#include "cluster/sim_world.hpp"
#include "core/errors.hpp"
#include "grad_check.hpp"
#include "sim_ring_options.hpp"

namespace dsgd {
namespace {

using testing::normal_vector;

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// One 15×16 matrix layer (PowerSGD compresses it) and a 5-float layer (prime: sent as is).
const std::vector<LayerView> kLayers = {{"w", 0, 240}, {"b", 240, 5}};
constexpr size_t kCount = 245;

struct Outcome {
  std::vector<std::vector<float>> blocking, nonblocking;  // per step
  std::vector<CollEvent> blocking_events, nonblocking_events;
};

// Runs `steps` aggregations of per-worker random vectors through two compressors of the
// same spec and seed, one blocking, one non-blocking (with progress and advance between
// start and finish, the way cocod/dasgd/overlap-local drive it).
std::vector<Outcome> run_both(const std::string& spec, int n, int steps) {
  SimWorld world(sim_ring_options(n, 1e-4, 1e8));
  std::vector<Outcome> out(static_cast<size_t>(n));
  world.run([&](int r) {
    SimCommunicator& c = world.comm(r);
    auto blocking = compressor_create(spec), nonblocking = compressor_create(spec);
    blocking->setup(c, kLayers, kCount, 77);
    nonblocking->setup(c, kLayers, kCount, 77);
    CollEventLog log_b, log_n;
    log_b.reserve(64);
    log_n.reserve(64);
    Outcome& o = out[static_cast<size_t>(r)];
    for (int step = 0; step < steps; ++step) {
      const std::vector<float> g = normal_vector(kCount, 1000 + 17 * step + static_cast<uint64_t>(r));
      std::vector<float> b = g, x = g;
      c.attach_log(&log_b);
      blocking->allreduce_average(c, b.data(), kCount, step);
      c.attach_log(&log_n);
      nonblocking->start(c, x.data(), kCount, step);
      EXPECT_TRUE(nonblocking->in_flight());
      c.hold_until(c.now() + 1e-3);  // local compute
      nonblocking->progress(c);
      nonblocking->advance(c);
      nonblocking->progress(c);
      c.hold_until(c.now() + 1e-3);
      nonblocking->finish(c);
      EXPECT_FALSE(nonblocking->in_flight());
      o.blocking.push_back(b);
      o.nonblocking.push_back(x);
    }
    c.attach_log(nullptr);
    o.blocking_events.assign(log_b.data(), log_b.data() + log_b.size());
    o.nonblocking_events.assign(log_n.data(), log_n.data() + log_n.size());
  });
  return out;
}

class CompressAsync : public ::testing::TestWithParam<const char*> {};

TEST_P(CompressAsync, NonBlockingEqualsBlockingOnEveryWorker) {
  const std::string spec = GetParam();
  for (int n : {2, 3}) {
    const int steps = 4;
    const std::vector<Outcome> out = run_both(spec, n, steps);
    for (int r = 0; r < n; ++r) {
      const Outcome& o = out[static_cast<size_t>(r)];
      ASSERT_EQ(o.blocking.size(), size_t(steps));
      for (int t = 0; t < steps; ++t) {
        EXPECT_TRUE(same_bits(o.blocking[t], o.nonblocking[t])) << spec << " n=" << n << " rank " << r << " step " << t;
        // Every worker holds the same aggregate.
        EXPECT_TRUE(same_bits(o.nonblocking[t], out[0].nonblocking[t])) << spec << " rank " << r;
      }
      // The same collectives, with the bytes of the compressor's formula; the non-blocking
      // ones carry an in-flight interval.
      auto c = compressor_create(spec);
      ASSERT_EQ(o.blocking_events.size(), size_t(steps * (spec.rfind("powersgd", 0) == 0 ? 2 : 1)));
      ASSERT_EQ(o.nonblocking_events.size(), o.blocking_events.size());
      double bytes = 0;
      for (size_t e = 0; e < o.blocking_events.size(); ++e) {
        EXPECT_EQ(o.blocking_events[e].kind, o.nonblocking_events[e].kind);
        EXPECT_EQ(o.blocking_events[e].bytes_sent, o.nonblocking_events[e].bytes_sent);
        EXPECT_EQ(o.blocking_events[e].launch, 0.0);
        EXPECT_GT(o.nonblocking_events[e].in_flight_until, o.nonblocking_events[e].launch);
        bytes += o.nonblocking_events[e].bytes_sent;
      }
      auto sized = compressor_create(spec);
      auto self = communicator_create_self();
      sized->setup(*self, kLayers, kCount, 77);
      EXPECT_DOUBLE_EQ(bytes / steps, sized->bytes_sent_per_call(kCount, n)) << spec;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Specs, CompressAsync,
                         ::testing::Values("topk:0.1", "topk:1", "qsgd:bits=4", "qsgd:bits=32", "powersgd:rank=2",
                                           "powersgd:rank=64"));

TEST(CompressAsync, IdentitySettingsAverageExactly) {
  // topk:1 and qsgd:bits=32 on 2 workers: the non-blocking aggregate is (a + b)·0.5, the
  // all-reduce's float.
  for (const char* spec : {"topk:1", "qsgd:bits=32"}) {
    const std::vector<Outcome> out = run_both(spec, 2, 2);
    for (int t = 0; t < 2; ++t) {
      const std::vector<float> a = normal_vector(kCount, 1000 + 17 * t), b = normal_vector(kCount, 1001 + 17 * t);
      for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(out[0].nonblocking[t][i], (a[i] + b[i]) * 0.5f) << spec << i;
    }
  }
}

TEST(CompressAsync, ComputeBetweenStartAndFinishHidesTheCommunication) {
  // Slow link (1 MB/s): the all-gather of topk takes ~ms; one worker's 1 s of compute
  // between start and finish hides it, so finish returns at once; blocking pays it.
  SimWorld world(sim_ring_options(2, 1e-3, 1e6));
  std::vector<double> blocking_s(2), finish_s(2);
  world.run([&](int r) {
    SimCommunicator& c = world.comm(r);
    auto blocking = compressor_create("topk:0.5"), nonblocking = compressor_create("topk:0.5");
    blocking->setup(c, kLayers, kCount, 1);
    nonblocking->setup(c, kLayers, kCount, 1);
    std::vector<float> g = normal_vector(kCount, 5);
    double t0 = c.now();
    blocking->allreduce_average(c, g.data(), kCount, 0);
    blocking_s[static_cast<size_t>(r)] = c.now() - t0;
    nonblocking->start(c, g.data(), kCount, 0);
    t0 = c.now();
    c.hold_until(t0 + 1.0);
    nonblocking->progress(c);
    nonblocking->finish(c);
    finish_s[static_cast<size_t>(r)] = c.now() - t0;
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_GT(blocking_s[r], 1e-3);
    EXPECT_DOUBLE_EQ(finish_s[r], 1.0);
  }
}

TEST(CompressAsync, OneRankNonBlockingIsTheBlockingIdentity) {
  auto self = communicator_create_self();
  for (const char* spec : {"topk:0.2", "qsgd:bits=4", "powersgd:rank=1"}) {
    auto a = compressor_create(spec), b = compressor_create(spec);
    a->setup(*self, kLayers, kCount, 3);
    b->setup(*self, kLayers, kCount, 3);
    for (int step = 0; step < 3; ++step) {
      std::vector<float> x = normal_vector(kCount, 40 + step), y = x;
      a->allreduce_average(*self, x.data(), kCount, step);
      b->start(*self, y.data(), kCount, step);
      b->finish(*self);
      EXPECT_TRUE(same_bits(x, y)) << spec;
    }
  }
}

TEST(CompressAsync, MisuseIsRefused) {
  auto self = communicator_create_self();
  auto c = compressor_create("topk:0.5");
  c->setup(*self, kLayers, kCount, 3);
  std::vector<float> x(kCount, 1.0f), y(kCount, 2.0f);
  c->start(*self, x.data(), kCount, 0);
  EXPECT_THROW(c->start(*self, y.data(), kCount, 1), Error);
  EXPECT_THROW(c->allreduce_average(*self, y.data(), kCount, 1), Error);
  EXPECT_FALSE(c->advance(*self));  // one phase: nothing left to launch
  c->finish(*self);
  c->finish(*self);  // nothing in flight: a no-op
  EXPECT_FALSE(c->in_flight());
}

TEST(Communicator, NonBlockingAllgatherOnSimIsRecordedAndTimedLikeTheBlockingOne) {
  SimWorld world(sim_ring_options(2, 1e-3, 1e9));
  std::vector<std::vector<float>> data(2);
  std::vector<CollEvent> events(2);
  std::vector<double> done(2);
  world.run([&](int r) {
    SimCommunicator& c = world.comm(r);
    CollEventLog log;
    log.reserve(4);
    c.attach_log(&log);
    std::vector<float> x(10, 0.0f);
    for (size_t i = 0; i < 5; ++i) x[static_cast<size_t>(r) * 5 + i] = float(r * 5 + i) + 0.5f;
    CollRequest req;
    c.hold_until(r == 0 ? 0.0 : 0.25);  // worker 1 launches later
    c.iallgather(x.data(), x.size(), req);
    c.progress(req);
    c.wait(req);
    done[static_cast<size_t>(r)] = c.now();
    data[static_cast<size_t>(r)] = x;
    ASSERT_EQ(log.size(), 1u);
    events[static_cast<size_t>(r)] = log.data()[0];
  });
  const double model = sim_collective_time(sim_ring_options(2, 1e-3, 1e9).network, std::nullopt,
                                           CollKind::coll_allgather, CollAlgo::algo_ring, 40.0, 2);
  for (int r = 0; r < 2; ++r) {
    for (size_t i = 0; i < 10; ++i) EXPECT_EQ(data[r][i], float(i) + 0.5f);
    EXPECT_EQ(events[r].kind, static_cast<int32_t>(CollKind::coll_allgather));
    EXPECT_DOUBLE_EQ(events[r].bytes_sent, 20.0);  // (n−1)/n · 40 bytes
    EXPECT_NEAR(done[r], 0.25 + model, 1e-15);
  }
  EXPECT_GT(model, 0.0);
}

TEST(Communicator, NonBlockingAllgatherIsHeldByTheEmulatedLink) {
  // The emulation hook sees kind allgather and S = 4·count; wait() returns no earlier than
  // launch + the hook's extra time, as for the non-blocking all-reduce.
  struct Seen {
    CollKind kind = CollKind::coll_barrier;
    double bytes = 0;
  } seen;
  auto comm = communicator_create_self();
  comm->set_emulation(EmulationHook{[](const void* ctx, CollKind kind, double bytes, int) {
                                      auto* s = static_cast<Seen*>(const_cast<void*>(ctx));
                                      s->kind = kind;
                                      s->bytes = bytes;
                                      return 0.02;
                                    },
                                    &seen});
  CollEventLog log;
  log.reserve(2);
  comm->attach_log(&log);
  std::vector<float> x(25, 1.0f);
  CollRequest req;
  comm->iallgather(x.data(), x.size(), req);
  comm->wait(req);
  EXPECT_EQ(seen.kind, CollKind::coll_allgather);
  EXPECT_EQ(seen.bytes, 100.0);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_GE(log.data()[0].depart, log.data()[0].launch + 0.02);
  EXPECT_EQ(log.data()[0].bytes_sent, 0.0);  // one rank sends nothing
}

}  // namespace
}  // namespace dsgd
