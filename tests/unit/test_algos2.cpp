// Part-2 variants on one process: the Communicator's new operations (shards, self backend,
// recorded bytes, the "does not implement" default), the gradient compressors against their
// defining properties (top-k keeps the k largest and error feedback conserves the sum; QSGD
// is unbiased, seeded and on its level grid; PowerSGD recovers low-rank and full-rank
// matrices), dpsgd's topology check and zero's refusal of a model too small to shard.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "algorithms/algorithm.hpp"
#include "algorithms/compress/compressor.hpp"
#include "algorithms/dpsgd.hpp"
#include "core/errors.hpp"
#include "grad_check.hpp"
#include "null_communicator.hpp"
#include "workloads/datasets/dataset.hpp"

using namespace dsgd;

namespace {

using dsgd::testing::normal_vector;

// A backend that implements only the original operations (as a backend written before the
// sharded and point-to-point operations existed), with a configurable size.
using MinimalComm = dsgd::testing::NullCommunicator;

}  // namespace

TEST(Communicator, ShardsCoverTheBufferAndDifferByAtMostOne) {
  for (size_t count : {1u, 7u, 100u, 1001u})
    for (int n : {1, 2, 3, 8}) {
      EXPECT_EQ(Communicator::shard_begin(count, n, 0), 0u);
      EXPECT_EQ(Communicator::shard_begin(count, n, n), count);
      for (int r = 0; r < n; ++r) {
        const size_t len = Communicator::shard_begin(count, n, r + 1) - Communicator::shard_begin(count, n, r);
        EXPECT_LE(len, count / n + 1);
        EXPECT_GE(len, count / n);
      }
    }
}

TEST(Communicator, NewOperationsOnOneRankAreIdentitiesAndRecorded) {
  auto comm = communicator_create_self();
  CollEventLog log;
  log.reserve(16);
  comm->attach_log(&log);
  std::vector<float> x = normal_vector(10, 1), shard(10), recv(10);
  comm->reduce_scatter_average(x.data(), shard.data(), x.size());
  EXPECT_EQ(shard, x);
  std::vector<float> y = x;
  comm->allgather(y.data(), y.size());
  EXPECT_EQ(y, x);
  comm->sendrecv(x.data(), x.size(), 0, recv.data(), recv.size(), 0);
  EXPECT_EQ(recv, x);
  comm->neighbor_exchange(x.data(), x.size(), nullptr, 0, recv.data());  // no peers: nothing moves
  ASSERT_EQ(log.size(), 4u);
  EXPECT_EQ(log.data()[0].kind, static_cast<int32_t>(CollKind::coll_reduce_scatter));
  EXPECT_EQ(log.data()[0].bytes_sent, 0.0);  // (n−1)/n · S with n = 1
  EXPECT_EQ(log.data()[1].kind, static_cast<int32_t>(CollKind::coll_allgather));
  EXPECT_EQ(log.data()[2].kind, static_cast<int32_t>(CollKind::coll_sendrecv));
  EXPECT_EQ(log.data()[2].bytes_sent, 40.0);  // 4 · send count to one peer
  EXPECT_EQ(log.data()[3].bytes_sent, 0.0);
  EXPECT_EQ(std::string(coll_kind_name(CollKind::coll_sendrecv)), "sendrecv");
  EXPECT_DOUBLE_EQ(ring_scatter_gather_bytes_sent(800.0, 4), 600.0);
}

TEST(Communicator, OneSidedWindowOnOneRankKeepsModelAndVersion) {
  auto comm = communicator_create_self();
  CollEventLog log;
  log.reserve(4);
  comm->attach_log(&log);
  comm->window_create(5);
  const std::vector<float> x = normal_vector(5, 2);
  std::vector<float> y(5);
  uint64_t version = 99;
  comm->window_lock(0);
  comm->window_get(y.data(), 5, 0, &version);
  EXPECT_EQ(version, 0u);  // created zeroed
  EXPECT_EQ(y, std::vector<float>(5, 0.0f));
  comm->window_put(x.data(), 5, 0, 7);
  comm->window_get(y.data(), 5, 0, &version);
  comm->window_unlock(0);
  EXPECT_EQ(y, x);
  EXPECT_EQ(version, 7u);
  ASSERT_EQ(log.size(), 1u);  // one event per epoch
  EXPECT_EQ(log.data()[0].kind, static_cast<int32_t>(CollKind::coll_onesided));
  EXPECT_EQ(log.data()[0].bytes_sent, 0.0);  // puts to the own window send nothing
  comm->window_free();
  MinimalComm minimal;
  EXPECT_THROW(minimal.window_create(5), Error);
}

TEST(Communicator, BackendsWithoutTheNewOperationsThrowNamingThem) {
  MinimalComm comm;
  std::vector<float> x(4), y(4);
  try {
    comm.reduce_scatter_sum(x.data(), y.data(), 4);
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("backend null does not implement reduce_scatter"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(comm.allgather(x.data(), 4), Error);
  EXPECT_THROW(comm.sendrecv(x.data(), 4, 0, y.data(), 4, 0), Error);
}

TEST(TopK, KeepsTheLargestAndErrorFeedbackConservesTheSum) {
  auto comm = communicator_create_self();
  auto topk = compressor_create("topk:0.25");
  const size_t n = 40;
  topk->setup(*comm, {}, n, 1);
  std::vector<double> sent(n, 0.0), given(n, 0.0);
  for (int step = 0; step < 5; ++step) {
    std::vector<float> g = normal_vector(n, 10 + step);
    for (size_t i = 0; i < n; ++i) given[i] += g[i];
    std::vector<float> out = g;
    topk->allreduce_average(*comm, out.data(), n, step);
    size_t nonzero = 0;
    for (size_t i = 0; i < n; ++i) {
      nonzero += out[i] != 0.0f;
      sent[i] += out[i];
    }
    EXPECT_EQ(nonzero, 10u);
    if (step == 0) {  // no error yet: the kept ones are the 10 largest |g_i|
      std::vector<float> mags(n);
      for (size_t i = 0; i < n; ++i) mags[i] = std::fabs(g[i]);
      std::vector<float> sorted = mags;
      std::sort(sorted.begin(), sorted.end(), std::greater<>());
      for (size_t i = 0; i < n; ++i)
        if (out[i] != 0.0f) {
          EXPECT_GE(mags[i], sorted[9]);
          EXPECT_EQ(out[i], g[i]);
        }
    }
  }
  // Σ sent + final error = Σ given: flush the error with g = 0 until nothing is left.
  for (int step = 5; step < 40; ++step) {
    std::vector<float> out(n, 0.0f);
    topk->allreduce_average(*comm, out.data(), n, step);
    for (size_t i = 0; i < n; ++i) sent[i] += out[i];
  }
  // Float sums over 40 steps of O(1) values: within 1e-5 relative (a floor of 1e-5 near 0).
  for (size_t i = 0; i < n; ++i) EXPECT_NEAR(sent[i], given[i], 1e-5 * (1 + std::fabs(given[i]))) << i;
  EXPECT_DOUBLE_EQ(topk->bytes_sent_per_call(n, 4), 3.0 * 8 * 10);  // (n−1)·8k
}

TEST(Qsgd, UnbiasedSeededAndOnItsGrid) {
  auto comm = communicator_create_self();
  const size_t n = 600;  // two buckets of 512 (the second partial)
  const std::vector<float> g = normal_vector(n, 3);
  auto q = compressor_create("qsgd:bits=4");
  q->setup(*comm, {}, n, 42);
  std::vector<double> mean(n, 0.0);
  const int trials = 4000;
  std::vector<float> first;
  for (int t = 0; t < trials; ++t) {
    std::vector<float> out = g;
    q->allreduce_average(*comm, out.data(), n, t);
    if (t == 0) first = out;
    for (size_t i = 0; i < n; ++i) mean[i] += out[i] / trials;
  }
  // On the grid ‖bucket‖·l/7 with the sign of g.
  double norm0 = 0;
  for (size_t i = 0; i < 512; ++i) norm0 += double(g[i]) * g[i];
  norm0 = std::sqrt(norm0);
  for (size_t i = 0; i < 512; ++i) {
    const double level = std::fabs(first[i]) / norm0 * 7.0;
    EXPECT_NEAR(level, std::round(level), 1e-4);
    if (first[i] != 0.0f) {
      EXPECT_EQ(std::signbit(first[i]), std::signbit(g[i]));
    }
  }
  // Unbiased: the mean of 4000 draws is within 5 standard errors (variance ≤ ‖v‖²/(4s²) per value).
  const double se = norm0 / (2.0 * 7.0) / std::sqrt(double(trials));
  for (size_t i = 0; i < 512; ++i) EXPECT_NEAR(mean[i], g[i], 5 * se) << i;
  // Same seed and step: same bits; another step: other draws.
  auto q2 = compressor_create("qsgd:bits=4");
  q2->setup(*comm, {}, n, 42);
  std::vector<float> again = g, other = g;
  q2->allreduce_average(*comm, again.data(), n, 0);
  EXPECT_EQ(again, first);
  q2->allreduce_average(*comm, other.data(), n, 1);
  EXPECT_NE(other, first);
  // 32 bits: the identity.
  auto id = compressor_create("qsgd:bits=32");
  id->setup(*comm, {}, n, 42);
  std::vector<float> same = g;
  id->allreduce_average(*comm, same.data(), n, 0);
  EXPECT_EQ(same, g);
}

TEST(PowerSgd, RecoversLowRankAndFullRankMatricesWithErrorFeedback) {
  auto comm = communicator_create_self();
  // One 15×16 layer (m = 15: the largest divisor of 240 not above √240) and a 5-float layer
  // (prime: not compressed).
  const std::vector<LayerView> layers = {{"w", 0, 240}, {"b", 240, 5}};
  const size_t count = 245;
  // Rank-1 gradient u vᵀ: rank 1 reproduces it after one power iteration.
  std::vector<float> g(count);
  const std::vector<float> u = normal_vector(15, 5), v = normal_vector(16, 6), b = normal_vector(5, 7);
  for (size_t i = 0; i < 15; ++i)
    for (size_t j = 0; j < 16; ++j) g[i * 16 + j] = u[i] * v[j];
  for (size_t i = 0; i < 5; ++i) g[240 + i] = b[i];
  auto p1 = compressor_create("powersgd:rank=1");
  p1->setup(*comm, layers, count, 9);
  std::vector<float> out = g;
  p1->allreduce_average(*comm, out.data(), count, 0);
  for (size_t i = 0; i < count; ++i) EXPECT_NEAR(out[i], g[i], 1e-5 * (1 + std::fabs(g[i])));
  EXPECT_DOUBLE_EQ(p1->bytes_sent_per_call(count, 2), 4.0 * (15 + 5) + 4.0 * 16);  // P (+ the plain layer), Q
  // A generic (full-rank) matrix with rank 2: approximation + error = the input.
  const std::vector<float> h = normal_vector(count, 8);
  auto p2 = compressor_create("powersgd:rank=2");
  p2->setup(*comm, layers, count, 9);
  std::vector<float> approx = h;
  p2->allreduce_average(*comm, approx.data(), count, 0);
  double diff = 0;
  for (size_t i = 0; i < 240; ++i) diff += std::fabs(approx[i] - h[i]);
  EXPECT_GT(diff, 1.0);  // rank 2 of a random 15×16 is not the matrix
  // Feeding zeros next: the output is the low-rank approximation of the error h − approx,
  // and over many steps the sum of outputs converges to h (error feedback).
  std::vector<double> total(count);
  for (size_t i = 0; i < count; ++i) total[i] = approx[i];
  for (int step = 1; step < 200; ++step) {
    std::vector<float> zero(count, 0.0f);
    p2->allreduce_average(*comm, zero.data(), count, step);
    for (size_t i = 0; i < count; ++i) total[i] += zero[i];
  }
  for (size_t i = 0; i < count; ++i) EXPECT_NEAR(total[i], h[i], 1e-3 * (1 + std::fabs(h[i]))) << i;
  // Full rank (rank ≥ 15): exact up to rounding in one step.
  auto full = compressor_create("powersgd:rank=15");
  full->setup(*comm, layers, count, 9);
  std::vector<float> f = h;
  full->allreduce_average(*comm, f.data(), count, 0);
  for (size_t i = 0; i < count; ++i) EXPECT_NEAR(f[i], h[i], 1e-5 * (1 + std::fabs(h[i]))) << i;
}

TEST(Compressors, BadSpecsNameTheFlag) {
  for (const char* spec : {"topk:0", "topk:1.5", "topk:x", "qsgd:bits=1", "qsgd:bits=33", "powersgd:rank=0", "lz4"}) {
    try {
      compressor_create(spec);
      FAIL() << spec;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("--compress"), std::string::npos) << e.what();
    }
  }
}

TEST(Dpsgd, RefusesATopologyWithoutNeighbours) {
  Topology t;
  t.spec = "islands";
  t.workers = 2;
  t.neighbors = {{}, {}};
  t.neighbor_weights = {{}, {}};
  t.self_weight = {1, 1};
  t.spectral_gap = 0;
  try {
    dpsgd_check_topology(t);
    FAIL() << "no throw";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--topology islands: rank 0 has no neighbours"), std::string::npos)
        << e.what();
  }
  t.neighbors = {{1}, {0}};  // neighbours listed but W never mixes
  EXPECT_THROW(dpsgd_check_topology(t), InputError);
  EXPECT_NO_THROW(dpsgd_check_topology(topology_make("ring", 4)));
  EXPECT_NO_THROW(dpsgd_check_topology(topology_make("random-perm", 3)));
}

TEST(Zero, RefusesAModelWithFewerParametersThanWorkers) {
  MinimalComm comm(3);
  RunConfig cfg;
  cfg.algo = "zero";
  auto zero = algorithm_create("zero", cfg);
  const DatasetPair data = dataset_load("synthetic:n=60,d=2,classes=2,test=10", 1);
  auto workload = workload_create(cfg, data.train);
  SgdOptimizer opt(SgdOptions{}, 0);
  std::vector<float> params(2), grads(2);
  TrainState s{comm, *workload, opt, params.data(), grads.data(), 2, 0};
  try {
    zero->setup(s);
    FAIL() << "no throw";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("fewer than the 3 workers"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(zero->owns_optimizer());
  // Model state: params + gradient + (reduced gradient + velocity) of a ⌈|x|/n⌉ shard.
  EXPECT_DOUBLE_EQ(zero->model_state_bytes(1000, 4), 4.0 * (2000 + 2 * 250));
  EXPECT_DOUBLE_EQ(zero->bytes_sent_per_step(4000.0, 4), 2 * 3000.0);
}
