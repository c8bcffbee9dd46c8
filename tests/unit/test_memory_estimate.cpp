// The memory estimate of a run (engine/memory_estimate.hpp) and the checks a real run makes
// before its worker allocates: the figures, the refusal and its hint, the step bound.
#include <gtest/gtest.h>
#include <malloc.h>
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
// The sanitizer runtime's allocator statistics (libasan / libtsan export it; GCC ships no
// sanitizer/allocator_interface.h, so it is declared here).
extern "C" size_t __sanitizer_get_current_allocated_bytes();
#endif

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "core/run_config.hpp"
#include "engine/memory_estimate.hpp"
#include "engine/sim_run.hpp"
#include "workloads/workload.hpp"

using namespace dsgd;

namespace {

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const InputError& e) {
    EXPECT_FALSE(e.hint().empty()) << e.what();
    return std::string(e.what()) + " | hint: " + e.hint();
  }
  return "";
}

Dataset dense(size_t rows, size_t features) {
  Dataset d;
  d.rows = rows;
  d.features = features;
  d.classes = 10;
  d.dense.assign(rows * features, 0.0f);
  d.labels.assign(rows, 0);
  return d;
}

}  // namespace

TEST(MemoryEstimate, TermsFollowTheFormula) {
  RunConfig cfg;
  cfg.batch = 1000;
  const Dataset train = dense(100, 50), test = dense(10, 50);
  const MemoryEstimate m = memory_estimate(cfg, train, test, 510, -1, nullptr, 1, 3);
  EXPECT_DOUBLE_EQ(m.model_bytes, 510 * 4.0);
  EXPECT_DOUBLE_EQ(m.replicas_bytes, 6 * 510 * 4.0);
  EXPECT_DOUBLE_EQ(m.batch_bytes, 1000 * 50 * 4.0);
  EXPECT_DOUBLE_EQ(m.dataset_bytes, 110 * 50 * 4.0 + 110 * 4.0);  // ssgd builds no gossip graph
  EXPECT_DOUBLE_EQ(m.per_worker_bytes, m.replicas_bytes + m.batch_bytes + 100 * 4.0 + 256 * 1024.0);
  EXPECT_DOUBLE_EQ(m.total_bytes, 3 * (m.dataset_bytes + m.per_worker_bytes));  // 3 ranks on the host
  // The sim backend's estimate is the same formula with every worker in one process.
  cfg.workers = 4;
  const SimMemory s = sim_memory_estimate(cfg, train, test, 510, -1);
  EXPECT_EQ(s.workers_per_process, 4);
  EXPECT_EQ(s.processes, 1);
  EXPECT_DOUBLE_EQ(s.total_bytes, s.dataset_bytes + 4 * s.per_worker_bytes);
  // A gossip variant adds its topology once: an int and a double per edge and self-loop
  // (ring: degree bound 2 log2 n + 2 = 14 at n = 64; complete: n − 1).
  RunConfig gossip = cfg;
  gossip.algo = "dpsgd";
  gossip.workers = 64;
  gossip.topology = "ring";
  EXPECT_DOUBLE_EQ(memory_estimate(gossip, train, test, 510, -1, nullptr, 1, 1).dataset_bytes,
                   110 * 50 * 4.0 + 110 * 4.0 + 64 * 15 * 12.0);
  gossip.topology = "complete";
  EXPECT_DOUBLE_EQ(memory_estimate(gossip, train, test, 510, -1, nullptr, 1, 1).dataset_bytes,
                   110 * 50 * 4.0 + 110 * 4.0 + 64 * 64 * 12.0);
  // A workload's own figure for its step buffers replaces the input batch's.
  const MemoryEstimate w = memory_estimate(cfg, train, test, 510, 123456.0, nullptr, 1, 1);
  EXPECT_DOUBLE_EQ(w.batch_bytes, 123456.0);
}

// --batch 10000000 on 784 dense features: 31 GB of batch buffer; refused with the figures
// and "a smaller --batch" instead of a bare std::bad_alloc.
TEST(MemoryEstimate, RefusalNamesTheFiguresAndTheDominantTerm) {
  RunConfig cfg;
  cfg.batch = 10000000;
  const Dataset train = dense(100, 784), test = dense(10, 784);
  MemoryEstimate m = memory_estimate(cfg, train, test, 7850, -1, nullptr, 1, 1);
  m.available_bytes = 16e9;
  const std::string msg = error_of([&] { memory_check(m, cfg, train); });
  EXPECT_NE(msg.find("the run needs about 31.4 GB of memory, more than the 16 GB available"), std::string::npos) << msg;
  EXPECT_NE(msg.find("31.4 GB of batch and activation buffers for --batch 10000000"), std::string::npos) << msg;
  EXPECT_NE(msg.find("hint: use a smaller --batch"), std::string::npos) << msg;
  m.available_bytes = 64e9;
  EXPECT_EQ(error_of([&] { memory_check(m, cfg, train); }), "");
  m.available_bytes = 0;  // unknown: nothing is refused
  EXPECT_EQ(error_of([&] { memory_check(m, cfg, train); }), "");
}

// A dense dataset of huge dimension dominates: the hint points at the sparse path.
TEST(MemoryEstimate, DenseHighDimensionalDataSuggestsSparse) {
  RunConfig cfg;
  cfg.batch = 1;
  Dataset train;
  train.rows = 20;
  train.features = 50'000'000;
  train.classes = 2;
  train.labels.assign(20, 0);
  MemoryEstimate m = memory_estimate(cfg, train, train, 0, -1, nullptr, 1, 1);
  m.dataset_bytes = 40 * 50e6 * 4;  // what dense rows of that width would hold
  m.total_bytes = m.dataset_bytes + m.per_worker_bytes;
  m.available_bytes = 1e9;
  const std::string msg = error_of([&] { memory_check(m, cfg, train); });
  EXPECT_NE(msg.find("hint: the dense dataset dominates: use a sparse one (libsvm:PATH"), std::string::npos) << msg;
}

TEST(MemoryEstimate, ModelDominatedRefusalSuggestsFewerFeatures) {
  RunConfig cfg;
  cfg.workers = 4;
  Dataset train;
  train.rows = 100;
  train.features = 2'000'000'000;
  train.sparse = true;
  train.row_ptr.assign(101, 0);
  train.labels.assign(100, 0);
  MemoryEstimate m = memory_estimate(cfg, train, train, 2'000'000'001, -1, nullptr, 1, 4);
  m.available_bytes = 20e9;
  const std::string msg = error_of([&] { memory_check(m, cfg, train); });
  EXPECT_NE(msg.find("4 worker(s) x 48 GB (48 GB of model copies: 8 GB per copy"), std::string::npos) << msg;
  EXPECT_NE(msg.find("per rank (4 ranks on this host)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("hint: use a smaller model (2e+09 parameters: 2000000000 features x classes), or fewer workers"),
            std::string::npos)
      << msg;
}

// The epochs-to-steps conversion refuses more than 1e9 steps (1e18 epochs used to overflow
// into a one-step run).
TEST(MemoryEstimate, StepsFromEpochsAreBounded) {
  RunConfig cfg;
  cfg.batch = 10;
  cfg.epochs = 1e6;
  const std::string msg = error_of([&] { run_steps_for_shard(cfg, 40000); });
  EXPECT_NE(msg.find("--epochs 1000000 is 4e+09 steps at 4000 batches per epoch, more than the 1000000000"),
            std::string::npos)
      << msg;
  cfg.epochs = 2.5;
  EXPECT_EQ(run_steps_for_shard(cfg, 40000), 10000);
  cfg.epochs = 0;
  EXPECT_EQ(run_steps_for_shard(cfg, 40000), 4000);  // default: one epoch
  cfg.steps = 7;
  EXPECT_EQ(run_steps_for_shard(cfg, 40000), 7);
}

// The real-run checks: a batch larger than the shard is refused before any buffer of that
// size is allocated; the sim backend is left to sim_run.
TEST(MemoryEstimate, PreflightRefusesABatchLargerThanTheShard) {
  RunConfig cfg;
  cfg.dataset = "synthetic:n=1000,d=20,classes=2,test=100";
  cfg.batch = 10000000;
  cfg.workers = 2;
  const std::string msg = error_of([&] { memory_preflight(cfg, 2, 2); });
  EXPECT_NE(
      msg.find("--batch 10000000 is larger than each worker's shard (500 of 1000 training samples over 2 workers)"),
      std::string::npos)
      << msg;
  cfg.batch = 16;
  const RunPreflight ok = memory_preflight(cfg, 2, 2);
  ASSERT_NE(ok.data, nullptr);
  EXPECT_EQ(ok.memory.processes, 2);
  EXPECT_GT(ok.memory.total_bytes, 0);
  cfg.backend = "sim";
  cfg.batch = 10000000;
  EXPECT_EQ(memory_preflight(cfg, 2, 2).data, nullptr);
}

// Each workload's reserve_bytes (the preflight's per-worker figure) against what its
// reserve() and first evaluation really allocate from the heap (glibc's in-use bytes, all
// arenas and mmapped blocks; a sanitizer's allocator in those builds). Tolerance: within 10 % (allocator rounding;
// oneDNN's scratchpads are not in the estimate).
namespace {

double heap_in_use() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return static_cast<double>(__sanitizer_get_current_allocated_bytes());  // the sanitizer's allocator
#else
  const struct mallinfo2 mi = mallinfo2();
  return static_cast<double>(mi.uordblks) + static_cast<double>(mi.hblkhd);
#endif
}

struct ReserveCase {
  std::string workload, model, dataset;
  size_t batch;
};

void expect_reserve_estimate(const ReserveCase& c) {
  RunConfig cfg;
  cfg.workload = c.workload;
  cfg.model = c.model;
  cfg.dataset = c.dataset;
  cfg.layers = 2;
  cfg.d_model = 64;
  cfg.heads = 2;
  cfg.seq = 32;
  cfg.threads = 1;
  DatasetPair data = dataset_load(cfg.dataset, 1);
  workload_prepare_data(cfg, data);
  std::unique_ptr<Workload> w = workload_create(cfg, data.train);
  std::vector<float> params(w->param_count());
  w->init_params(params.data(), 1);
  const double estimate = w->reserve_bytes(c.batch);
  const double before = heap_in_use();
  w->reserve(c.batch);
  // One evaluation chunk of exactly the batch (a shorter last chunk would make more primitives).
  const size_t eval_rows = std::min(c.batch, data.test.rows);
  (void)w->evaluate(params.data(), data.test, 0, eval_rows);
  const double measured = heap_in_use() - before;
  std::printf("%s %s batch %zu: estimate %.4g bytes, allocated %.4g (ratio %.3f)\n", c.workload.c_str(),
              c.model.c_str(), c.batch, estimate, measured, estimate / measured);
  EXPECT_NEAR(estimate / measured, 1.0, 0.10) << c.workload << " " << c.model << " batch " << c.batch << ": estimate "
                                              << estimate << " bytes, allocated " << measured;
}

}  // namespace

TEST(MemoryEstimate, WorkloadReserveBytesMatchWhatReserveAllocates) {
  const std::vector<ReserveCase> cases = {
      {"svm", "", "synthetic:n=600,d=3000,classes=10,test=300", 256},
      {"svm", "", "synthetic:n=600,d=30000,density=0.01,classes=10,test=300", 256},
      {"resnet", "resnet8", "synthetic:shape=1x28x28,classes=10,n=256,test=64", 64},
      {"resnet", "resnet20", "synthetic:shape=3x32x32,classes=10,n=256,test=64", 32},
      {"transformer", "gpt", "synthetic-text:n=20000,test=4000", 16},
      {"transformer", "gpt", "synthetic-text:n=20000,test=4000", 64},
  };
  for (const ReserveCase& c : cases) expect_reserve_estimate(c);
}

// The preflight of a real run counts ResNet's activations: a batch that fits the shard but
// whose activations do not fit memory is refused with the figures before anything of that
// size is allocated (it used to die in reserve() with std::bad_alloc, or be OOM-killed).
TEST(MemoryEstimate, PreflightCountsResNetAndTransformerActivations) {
  RunConfig cfg;
  cfg.workload = "resnet";
  cfg.model = "resnet20";
  cfg.dataset = "synthetic:shape=3x32x32,classes=10,n=2000,test=100";
  cfg.batch = 1000;
  const RunPreflight p = memory_preflight(cfg, 1, 1);
  // ResNet-20 at 32x32 keeps some 0.3 M activation floats per sample, for training, for
  // evaluation and as gradients: over 100x the 3072 input floats the old estimate counted.
  EXPECT_GT(p.memory.batch_bytes, 1000 * 3072 * 4.0 * 100) << p.memory.batch_bytes;
  EXPECT_DOUBLE_EQ(p.memory.batch_bytes, p.workload->reserve_bytes(1000));
  cfg.workload = "transformer";
  cfg.model = "gpt";
  cfg.dataset = "synthetic-text:n=20000,test=4000";
  cfg.batch = 64;
  const RunPreflight t = memory_preflight(cfg, 1, 1);
  EXPECT_DOUBLE_EQ(t.memory.batch_bytes, t.workload->reserve_bytes(64));
  EXPECT_GT(t.memory.batch_bytes, 64 * 4 * 128 * 256 * 4.0 * 10);  // 4 blocks of 128 x 256 activations, many of them
}
