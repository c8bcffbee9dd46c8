// Microbenchmarks of the svm workload on one core (OpenBLAS set to 1 thread):
//   BM_StreamTriad                a[i] = b[i] + s c[i] over 3 x 128 MiB: this machine's single-thread
//                                 memory bandwidth (bytes = 3 arrays x 4 B x 32M per iteration)
//   BM_SvmEpochDense/{blas,fused} one epoch of Fashion-MNIST train (or a synthetic 60000 x 784,
//                                 10-class set when the package is absent), batches of 64 from a
//                                 shuffled order: load_batch + forward + backward + plain SGD
//   BM_SvmEpochDense/fused_binary the same data as a binary problem (sandal, sneaker, bag, ankle
//                                 boot vs the rest): 10x less arithmetic, the memory-bound case
//   BM_SvmEpochSparse             the same on synthetic n=20000,d=1e6,density=0.001, binary
//   BM_SvmForwardBackwardDense/{blas,fused,naive}  one batch of 64 (naive: the double reference)
// Derived counters (formulas, also in the output):
//   x_stream_bound = epoch seconds / (feature_bytes / triad bandwidth): how many times longer an
//                    epoch takes than streaming its features once from memory (goal <= 2); the
//                    triad bandwidth is measured once per process (median of 5 runs).
//   active_frac    = non-zero hinge terms / (samples x outputs) over the epoch.
//   flops          = flops_per_sample x samples / second.
// Every epoch restarts from the same initial parameters and the same shuffled order, so each
// iteration does identical work (epoch 1 of a run).
// Measured (2-vCPU AMD EPYC Zen3 VM, quiet moment; the other vCPU's load halves the FMA rate):
//   bench_svm --benchmark_min_time=0.5 --benchmark_repetitions=3 (medians)
//   triad 12.2-12.9 GB/s (Fashion-MNIST train streams once in 15.5 ms)
//   10 classes: fused 58 ms (x_stream_bound 3.8), BLAS 101 ms (6.5). Compute-bound: the
//     arithmetic alone (0.94 GFLOP forward + ~0.18 GFLOP backward at 19 % active terms) takes
//     ~19 ms at the fused kernels' in-cache ~60 GFLOP/s, most of the 31 ms that 2x allows.
//   binary (C = 1, memory-bound): fused 23 ms (x 1.5), BLAS 58 ms (3.8).
//   sparse d=1e6: ~170-210 ms (x 13-16): per step the 4 MB gradient memset and the dense SGD
//     update over 1e6 parameters cost more than the 20M-non-zero kernels themselves.
// The sparse epoch also zeroes and updates all d = 1e6 gradient/parameter floats each step
// (the flat gradient is what a distributed run all-reduces); that is part of its cost.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "core/copy_aliasing.hpp"
#include "core/rng.hpp"
#include "workloads/blas_core.hpp"
#include "workloads/datasets/dataset.hpp"
#include "workloads/svm.hpp"
#include "workloads/svm_kernels.hpp"

extern "C" void openblas_set_num_threads(int);

namespace {

using dsgd::SvmDenseKernel;
using Clock = std::chrono::steady_clock;

constexpr size_t kBatch = 64;
constexpr size_t kTriadFloats = size_t{32} << 20;  // 32M floats = 128 MiB per array

// Plain SGD step sizes: pixel features (|x|^2 ~ 100) want a small one; the synthetic sparse
// rows are unit-norm and barely overlap, so their weights want a large one and the bias (a
// feature present in every row) a small one.
struct StepSizes {
  float weights;
  float bias;
};
constexpr StepSizes kDenseSteps{0.01f, 0.01f};
constexpr StepSizes kSparseSteps{30.0f, 0.3f};

void single_thread_blas() {
  static const bool done = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)done;
}

// ---- STREAM triad -----------------------------------------------------------------------------

struct TriadArrays {
  std::vector<float> a, b, c;
  TriadArrays() : a(kTriadFloats, 0.0f), b(kTriadFloats, 1.0f), c(kTriadFloats, 2.0f) {}  // touches every page
};

TriadArrays& triad_arrays() {
  static TriadArrays arrays;
  return arrays;
}

[[gnu::noinline]] void stream_triad(float* a, const float* b, const float* c, float s, size_t n) {
  for (size_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
}

constexpr double kTriadBytes = 3.0 * sizeof(float) * static_cast<double>(kTriadFloats);

// Bytes per second of the triad: median of 5 timed runs after one warm-up, measured once.
double triad_bandwidth() {
  static const double bandwidth = [] {
    TriadArrays& t = triad_arrays();
    stream_triad(t.a.data(), t.b.data(), t.c.data(), 3.0f, kTriadFloats);
    std::vector<double> seconds;
    for (int r = 0; r < 5; ++r) {
      const auto t0 = Clock::now();
      stream_triad(t.a.data(), t.b.data(), t.c.data(), 3.0f, kTriadFloats);
      benchmark::ClobberMemory();
      seconds.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
    std::sort(seconds.begin(), seconds.end());
    return kTriadBytes / seconds[2];
  }();
  return bandwidth;
}

void BM_StreamTriad(benchmark::State& state) {
  TriadArrays& t = triad_arrays();
  for (auto _ : state) {
    stream_triad(t.a.data(), t.b.data(), t.c.data(), 3.0f, kTriadFloats);
    benchmark::DoNotOptimize(t.a.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(kTriadBytes));
}
BENCHMARK(BM_StreamTriad)->Unit(benchmark::kMillisecond)->UseRealTime();

// ---- data -------------------------------------------------------------------------------------

const dsgd::DatasetPair& dense_data() {
  static const dsgd::DatasetPair data = [] {
    if (std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")) {
      return dsgd::dataset_load("fashion-mnist", 0);
    }
    return dsgd::dataset_make_synthetic("n=60000,d=784,classes=10,test=10000", 1);
  }();
  return data;
}

// Fashion-MNIST as a binary problem: classes 5, 7, 8, 9 (sandal, sneaker, bag, ankle boot) are 1.
const dsgd::DatasetPair& dense_binary_data() {
  static const dsgd::DatasetPair data = [] {
    dsgd::DatasetPair pair = dense_data();
    for (dsgd::Dataset* ds : {&pair.train, &pair.test}) {
      for (int32_t& label : ds->labels) label = (label == 5 || label >= 7) ? 1 : 0;
      ds->classes = 2;
      ds->name += "/binary";
    }
    return pair;
  }();
  return data;
}

const dsgd::DatasetPair& sparse_data() {
  static const dsgd::DatasetPair data = dsgd::dataset_make_synthetic("n=20000,d=1000000,density=0.001,classes=2", 1);
  return data;
}

// ---- epochs -----------------------------------------------------------------------------------

struct EpochRunner {
  const dsgd::DatasetPair& data;
  std::unique_ptr<dsgd::Workload> workload;
  dsgd::SvmWorkload* svm;
  std::vector<float> init, params, grads;
  std::vector<uint32_t> order;
  size_t active_terms = 0;

  StepSizes steps;

  EpochRunner(const dsgd::DatasetPair& d, SvmDenseKernel kernel, StepSizes step_sizes)
      : data(d), workload(dsgd::svm_create(d.train)), steps(step_sizes) {
    svm = static_cast<dsgd::SvmWorkload*>(workload.get());
    svm->set_dense_kernel(kernel);
    workload->reserve(kBatch);
    init.resize(workload->param_count());
    workload->init_params(init.data(), 1);
    params = init;
    grads.resize(workload->param_count());
    order.resize(d.train.rows);
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<uint32_t>(i);
    dsgd::Rng rng(7);
    rng.shuffle(order.data(), order.size());
  }

  void run() {
    std::memcpy(params.data(), init.data(), init.size() * sizeof(float));
    active_terms = 0;
    const size_t rows = order.size();
    const size_t weights = workload->layers()[dsgd::SvmWorkload::kLayerWeights].count;
    const size_t count = params.size();
    for (size_t pos = 0; pos < rows; pos += kBatch) {
      const size_t n = std::min(kBatch, rows - pos);
      workload->load_batch(data.train, order.data() + pos, n);
      workload->forward(params.data());
      workload->backward(params.data(), grads.data(), {});
      active_terms += svm->last_active_terms();
      float* p = params.data();
      const float* g = grads.data();
      for (size_t k = 0; k < weights; ++k) p[k] -= steps.weights * g[k];
      for (size_t k = weights; k < count; ++k) p[k] -= steps.bias * g[k];
    }
  }
};

void run_epoch_benchmark(benchmark::State& state, const dsgd::DatasetPair& data, SvmDenseKernel kernel,
                         StepSizes steps) {
  single_thread_blas();
  const double bandwidth = triad_bandwidth();
  EpochRunner runner(data, kernel, steps);
  double seconds = 0;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    runner.run();
    seconds += std::chrono::duration<double>(Clock::now() - t0).count();
    benchmark::DoNotOptimize(runner.params.data());
  }
  const double epoch_seconds = seconds / static_cast<double>(state.iterations());
  const auto feature_bytes = static_cast<double>(data.train.feature_bytes());
  state.SetBytesProcessed(static_cast<int64_t>(feature_bytes) * static_cast<int64_t>(state.iterations()));
  state.SetItemsProcessed(static_cast<int64_t>(data.train.rows) * static_cast<int64_t>(state.iterations()));
  state.counters["triad_GBps"] = bandwidth / 1e9;
  state.counters["stream_ms"] = 1e3 * feature_bytes / bandwidth;
  state.counters["x_stream_bound"] = epoch_seconds / (feature_bytes / bandwidth);
  state.counters["active_frac"] = static_cast<double>(runner.active_terms) /
                                  (static_cast<double>(data.train.rows) * static_cast<double>(runner.svm->outputs()));
  state.counters["flops"] =
      benchmark::Counter(runner.workload->flops_per_sample() * static_cast<double>(data.train.rows) *
                             static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
  // Not timed: accuracy after one epoch, a sanity check that the epoch trains.
  const dsgd::EvalSums e = runner.workload->evaluate(runner.params.data(), data.test, 0, data.test.rows);
  state.counters["test_acc"] = e.correct / e.count;
  state.SetLabel(data.train.name);
}

void BM_SvmEpochDense(benchmark::State& state, SvmDenseKernel kernel, bool binary) {
  run_epoch_benchmark(state, binary ? dense_binary_data() : dense_data(), kernel, kDenseSteps);
}
BENCHMARK_CAPTURE(BM_SvmEpochDense, blas, SvmDenseKernel::svm_dense_blas, false)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_SvmEpochDense, fused, SvmDenseKernel::svm_dense_fused, false)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_SvmEpochDense, blas_binary, SvmDenseKernel::svm_dense_blas, true)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_SvmEpochDense, fused_binary, SvmDenseKernel::svm_dense_fused, true)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_SvmEpochSparse(benchmark::State& state) {
  run_epoch_benchmark(state, sparse_data(), SvmDenseKernel::svm_dense_fused, kSparseSteps);
}
BENCHMARK(BM_SvmEpochSparse)->Unit(benchmark::kMillisecond)->UseRealTime();

// ---- one batch --------------------------------------------------------------------------------

enum class BatchPath { batch_blas, batch_fused, batch_naive };

void BM_SvmForwardBackwardDense(benchmark::State& state, BatchPath path) {
  single_thread_blas();
  const dsgd::Dataset& train = dense_data().train;
  auto workload = dsgd::svm_create(train);
  auto* svm = static_cast<dsgd::SvmWorkload*>(workload.get());
  svm->set_dense_kernel(path == BatchPath::batch_blas ? SvmDenseKernel::svm_dense_blas
                                                      : SvmDenseKernel::svm_dense_fused);
  workload->reserve(kBatch);
  std::vector<float> params(workload->param_count()), grads(workload->param_count());
  workload->init_params(params.data(), 1);
  std::vector<uint32_t> idx(kBatch);
  dsgd::Rng rng(3);
  for (uint32_t& i : idx) i = static_cast<uint32_t>(rng.below(train.rows));

  const size_t D = train.features;
  const size_t C = svm->outputs();
  std::vector<float> x(kBatch * D);
  std::vector<int32_t> labels(kBatch);
  std::vector<double> pd(params.begin(), params.end()), s(kBatch * C), dw(D * C), db(C);
  for (auto _ : state) {
    if (path == BatchPath::batch_naive) {
      for (size_t i = 0; i < kBatch; ++i) {
        std::memcpy(&x[i * D], &train.dense[size_t{idx[i]} * D], D * sizeof(float));
        labels[i] = train.labels[idx[i]];
      }
      dsgd::svm_forward_dense_naive(x.data(), kBatch, D, pd.data(), pd.data() + D * C, C, labels.data(), s.data());
      dsgd::svm_backward_dense_naive(x.data(), kBatch, D, s.data(), labels.data(), C, dw.data(), db.data());
      benchmark::DoNotOptimize(dw.data());
    } else {
      workload->load_batch(train, idx.data(), kBatch);
      workload->forward(params.data());
      workload->backward(params.data(), grads.data(), {});
      benchmark::DoNotOptimize(grads.data());
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(kBatch) * static_cast<int64_t>(state.iterations()));
  state.counters["flops"] = benchmark::Counter(
      workload->flops_per_sample() * kBatch * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(BM_SvmForwardBackwardDense, blas, BatchPath::batch_blas)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_SvmForwardBackwardDense, fused, BatchPath::batch_fused)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_SvmForwardBackwardDense, naive, BatchPath::batch_naive)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  dsgd::copy_aliasing_start(argv);  // the product's memory copies (core/copy_aliasing.hpp)
  dsgd::blas_core_start();          // the product's BLAS kernels (workloads/blas_core.hpp)
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
