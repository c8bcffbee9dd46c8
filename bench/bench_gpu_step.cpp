// One GPT training step on one GPU (workloads/cuda/transformer_cuda.*: forward, backward and
// an AdamW update, all on the device), timed with CUDA events step by step, and the device's
// GEMM peak at the same precision measured in the same process (workloads/cuda/gemm.hpp), so
// the MFU is against what this GPU's cuBLAS does now, not a datasheet. Prints one JSON object:
//   device, precision, step_median_s / step_min_s / step_max_s over --steps timed steps after
//   --warmup untimed ones, tokens_per_s, model_tflops (flops_per_sample·batch / median, the
//   workload's FLOP count: docs/metrics.md), peak_tflops (best of 10 n=8192 GEMMs; n=2048 with
//   --quick), mfu = model_tflops / peak_tflops.
// Without a usable GPU it prints the reason and exits 77 (ctest: skipped).
// Not implemented yet: the ResNet step on the GPU (the cuDNN layers exist, the model does not;
// docs/gpu.md). Usage: bench_gpu_step [--layers L] [--d-model D] [--heads H] [--seq S]
//   [--batch B] [--vocab V] [--steps N] [--warmup W] [--precision fp32|tf32] [--quick]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "algorithms/optimizer.hpp"
#include "bench/bench_timing.hpp"
#include "core/cuda/vector_ops_cuda.hpp"
#include "core/errors.hpp"
#include "core/gpu_info.hpp"
#include "workloads/cuda/elementwise.hpp"
#include "workloads/cuda/gemm.hpp"
#include "workloads/cuda/transformer_cuda.hpp"

namespace {

// The command line: --quick alone, every other option with a value.
struct Options {
  dsgd::TransformerConfig c{12, 768, 12, 1024, 256};
  size_t batch = 8, steps = 10, warmup = 3;
  std::string precision = "tf32";
  bool quick = false;
};

// Parses argv into o; false (after a message) on an unknown option or a missing value.
bool options_parse(int argc, char** argv, Options& o) {
  dsgd::TransformerConfig& c = o.c;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--quick") {
      o.quick = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "bench_gpu_step: %s needs a value\n", k.c_str());
      return false;
    }
    const std::string val = argv[++i];
    const size_t v = std::strtoull(val.c_str(), nullptr, 10);
    if (k == "--layers")
      c.layers = v;
    else if (k == "--d-model")
      c.d_model = v;
    else if (k == "--heads")
      c.heads = v;
    else if (k == "--seq")
      c.seq = v;
    else if (k == "--batch")
      o.batch = v;
    else if (k == "--vocab")
      c.vocab = v;
    else if (k == "--steps")
      o.steps = v;
    else if (k == "--warmup")
      o.warmup = v;
    else if (k == "--precision")
      o.precision = val;
    else {
      std::fprintf(stderr, "bench_gpu_step: unknown option %s\n", k.c_str());
      return false;
    }
  }
  return true;
}

// The timed steps on GPU 0 and the GEMM peak; prints the JSON line (throws dsgd::Error).
void gpu_step_bench(const Options& o, const dsgd::GpuInfo& info) {
  const dsgd::TransformerConfig& c = o.c;
  const size_t batch = o.batch, steps = o.steps, warmup = o.warmup;
  const std::string& precision = o.precision;
  const bool quick = o.quick;
  dsgd::GpuContext g(0, dsgd::gemm_precision_parse(precision));
  if (g.precision() == dsgd::GemmPrecision::bf16)
    DSGD_THROW(dsgd::InputError, "use fp32 or tf32", "--precision bf16: the GPU transformer has no bf16 path yet");
  dsgd::TransformerCuda model(g, c);
  const size_t n = model.param_count();
  dsgd::CudaBuffer<float> params(n), grads(n);
  // The optimizer's update runs through the CUDA vector operations, on the model's stream.
  dsgd::vector_ops_cuda().set_stream(g.stream());
  // Parameters from the CPU workload's initialisation (GPT-2's), uploaded once.
  std::vector<float> host(n);
  dsgd::TransformerWorkload(c).init_params(host.data(), 1);
  params.upload(host);
  std::vector<int32_t> windows(batch * (c.seq + 1));
  for (size_t i = 0; i < windows.size(); ++i) windows[i] = int32_t((i * 2654435761u) % c.vocab);
  model.reserve(batch);
  const dsgd::AdamWOptions opts{3e-4, 0.9, 0.95, 1e-8, 0.1};
  dsgd::AdamWOptimizer opt(opts, n, dsgd::vector_ops_cuda().device());
  dsgd::CudaEvent start, stop;
  std::vector<double> times;
  double loss = 0;
  for (size_t s = 0; s < warmup + steps; ++s) {
    start.record(g.stream());
    model.load_batch(windows.data(), batch);
    loss = model.forward(params.data());  // synchronises once, for the loss
    model.backward(params.data(), grads.data(), dsgd::LayerHook{});
    opt.step(params.data(), grads.data());
    stop.record(g.stream());
    stop.synchronize();
    if (s >= warmup) times.push_back(stop.elapsed_ms_since(start) * 1e-3);
  }
  const double peak = dsgd::gemm_peak_flops_measure(g, g.precision(), quick ? 2048 : 8192, 10);
  const double med = dsgd::bench::median(times);
  const double flops = model.flops_per_sample() * double(batch) / med;
  std::printf(
      "{\"bench\": \"gpt_step\", \"device\": \"%s\", \"precision\": \"%s\", \"layers\": %zu, \"d_model\": %zu, "
      "\"seq\": %zu, \"batch\": %zu, \"steps\": %zu, \"step_median_s\": %.6g, \"step_min_s\": %.6g, "
      "\"step_max_s\": %.6g, \"tokens_per_s\": %.6g, \"loss\": %.6g, \"model_tflops\": %.6g, \"peak_tflops\": "
      "%.6g, \"mfu\": %.4f}\n",
      info.name.c_str(), precision.c_str(), c.layers, c.d_model, c.seq, batch, steps, med,
      *std::min_element(times.begin(), times.end()), *std::max_element(times.begin(), times.end()),
      double(batch * c.seq) / med, loss, flops / 1e12, peak / 1e12, peak > 0 ? flops / peak : 0.0);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!options_parse(argc, argv, o)) return 2;
  const dsgd::GpuInfo info = dsgd::gpu_info_probe();
  if (!info.available) {
    std::printf("bench_gpu_step: skipped: %s\n", info.reason.c_str());
    return 77;
  }
  try {
    gpu_step_bench(o, info);
  } catch (const dsgd::Error& e) {
    std::fprintf(stderr, "bench_gpu_step: %s\n", e.what());
    if (!e.hint().empty()) std::fprintf(stderr, "  hint: %s\n", e.hint().c_str());
    return 1;
  }
  return 0;
}
