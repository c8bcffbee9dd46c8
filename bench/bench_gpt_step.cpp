// One training step of the GPT workload (load_batch + forward + backward + SGD with momentum
// 0.9), timed step by step, plus an SGEMM reference and the GEMM-bound layers alone, on the
// same threads in the same process. Prints one JSON object (bench/bench_gpt.py reads it and
// puts it beside PyTorch's figure for the same architecture):
//   step_median_s      median over --steps timed steps after --warmup untimed ones
//   step_best_s        the fastest of those steps
//   step_times_s       every timed step, in order
//   step_cpu_s         the process's CPU time (all threads) of each: on a busy machine it
//                      counts the work done, not the time spent waiting for a core
//   step_gflops        flops_per_sample × batch / step_median_s (the workload's model FLOPs:
//                      the attention's products over the causal half only, transformer.hpp)
//   sgemm_gflops       median of the layers' SGEMM (linear_forward, no bias: oneDNN's where the
//                      build has it, else OpenBLAS's) on 1024×1024×1024 (the GEMM rate now)
//   mlp_gflops         linear forward + backward of the MLP's fc and proj layers alone
//                      (n = batch·seq rows, d → 4d → d), the most GEMM-bound part of the step
//   qkv_gflops         the same for the attention's qkv projection (d → 3d)
//   profile            with --profile 1: seconds per step by kernel kind (kernel_profile.hpp),
//                      the optimizer and the rest, over --steps more steps run after the timed
//                      ones with the accounting on (also printed as a table on stderr)
// Usage: bench_gpt_step [--threads T] [--layers L] [--d-model D] [--heads H] [--seq S]
//                       [--batch B] [--vocab V] [--steps N] [--warmup W] [--profile 0|1]
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "algorithms/optimizer.hpp"
#include "bench/bench_timing.hpp"
#include "core/copy_aliasing.hpp"
#include "core/rng.hpp"
#include "workloads/blas_core.hpp"
#include "workloads/datasets/dataset.hpp"
#include "workloads/layers/kernel_profile.hpp"
#include "workloads/layers/linear.hpp"
#include "workloads/transformer.hpp"

extern "C" void openblas_set_num_threads(int);

namespace {

using dsgd::bench::median;
using dsgd::bench::now_s;

// The process's CPU time in seconds (all its threads).
double cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// The times of reps calls of f after warmup untimed ones; each call's CPU time into cpu if given.
template <typename F>
std::vector<double> sample_times(int warmup, int reps, F&& f, std::vector<double>* cpu = nullptr) {
  for (int i = 0; i < warmup; ++i) f();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const double t0 = now_s(), c0 = cpu ? cpu_s() : 0;
    f();
    t.push_back(now_s() - t0);
    if (cpu) cpu->push_back(cpu_s() - c0);
  }
  return t;
}

template <typename F>
double median_time(int warmup, int reps, F&& f) {
  return median(sample_times(warmup, reps, f));
}

// The command line (every option takes a whole number).
struct Options {
  size_t threads = 1, batch = 8, steps = 15, warmup = 3, profile = 0;
  dsgd::TransformerConfig c;
};

// Parses argv into o; false (after a message) on an unknown option.
bool options_parse(int argc, char** argv, Options& o) {
  dsgd::TransformerConfig& c = o.c;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const size_t v = std::strtoull(argv[i + 1], nullptr, 10);
    if (k == "--threads")
      o.threads = v;
    else if (k == "--layers")
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
    else if (k == "--profile")
      o.profile = v;
    else {
      std::fprintf(stderr, "bench_gpt_step: unknown option %s\n", k.c_str());
      return false;
    }
  }
  return true;
}

// Random bytes (from rng): the step's cost does not depend on the text.
dsgd::Dataset random_bytes(const dsgd::TransformerConfig& c, size_t batch, dsgd::Rng& rng) {
  dsgd::Dataset ds;
  ds.name = "random-bytes";
  ds.classes = 256;
  ds.tokens.resize(std::max<size_t>(100000, 4 * batch * (c.seq + 1)));
  for (auto& t : ds.tokens) t = static_cast<int32_t>(rng.below(std::min<size_t>(256, c.vocab)));
  dsgd::dataset_set_window(ds, c.seq + 1);
  return ds;
}

// SGEMM reference: 1024³, GFLOP/s of the median of 7.
// The layers' own GEMM (linear_forward without bias: oneDNN's or OpenBLAS's SGEMM, linear.cpp).
double sgemm_reference_gflops() {
  const size_t m = 1024;
  std::vector<float> a(m * m, 0.5f), b(m * m, 0.25f), cc(m * m);
  const double sgemm_s = median_time(2, 7, [&] {
    dsgd::linear_forward(dsgd::LinearShape{m, m, m}, a.data(), b.data(), nullptr, cc.data());
  });
  return 2.0 * double(m * m * m) / sgemm_s * 1e-9;
}

// A GEMM-bound layer alone: forward + backward (dx, dW, db) of an in → out linear over n rows;
// (median seconds, FLOPs).
std::pair<double, double> linear_time(size_t n, size_t in, size_t out) {
  std::vector<float> x(n * in, 0.1f), wt(out * in, 0.01f), bias(out, 0.0f), y(n * out), dy(n * out, 0.01f), dx(n * in),
      dw(out * in), db(out);
  const dsgd::LinearShape s{n, in, out};
  const double t = median_time(2, 9, [&] {
    dsgd::linear_forward(s, x.data(), wt.data(), bias.data(), y.data());
    dsgd::linear_backward(s, x.data(), wt.data(), dy.data(), dx.data(), dw.data(), db.data());
  });
  return std::make_pair(t, 6.0 * double(n) * double(in) * double(out));
}

// Runs `steps` more steps with the kernel accounting on and returns the JSON member
// `, "profile": {kind: seconds per step, ..., "optimizer": s, "other": s}`; prints the table on
// stderr. step() adds its optimizer's time to opt_s while the accounting is on.
template <typename Step>
std::string profile_steps(size_t steps, Step& step, double& opt_s) {
  auto& kp = dsgd::kernel_profile();
  kp.clear();
  opt_s = 0;
  kp.enabled = true;
  const double t0 = now_s();
  for (size_t i = 0; i < steps; ++i) step();
  const double total = (now_s() - t0) / double(steps);
  kp.enabled = false;
  std::string json = ", \"profile\": {";
  double covered = 0;
  std::fprintf(stderr, "per step: %.2f ms\n", total * 1e3);
  for (size_t k = 0; k < kp.seconds.size(); ++k) {
    const double v = kp.seconds[k] / double(steps);
    if (v == 0) continue;
    covered += v;
    const char* name = dsgd::kernel_name(dsgd::Kernel(k));
    std::fprintf(stderr, "  %-16s %9.2f ms %5.1f%%\n", name, v * 1e3, 100 * v / total);
    json += "\"" + std::string(name) + "\": " + std::to_string(v) + ", ";
  }
  const double opt = opt_s / double(steps);
  covered += opt;
  std::fprintf(stderr, "  %-16s %9.2f ms %5.1f%%\n", "optimizer", opt * 1e3, 100 * opt / total);
  std::fprintf(stderr, "  %-16s %9.2f ms %5.1f%%\n", "other", (total - covered) * 1e3, 100 * (total - covered) / total);
  return json + "\"optimizer\": " + std::to_string(opt) + ", \"other\": " + std::to_string(total - covered) + "}";
}

}  // namespace

int main(int argc, char** argv) {
  dsgd::copy_aliasing_start(argv);  // the product's memory copies (core/copy_aliasing.hpp)
  dsgd::blas_core_start();          // the product's BLAS kernels (workloads/blas_core.hpp)
  Options o;
  if (!options_parse(argc, argv, o)) return 2;
  const size_t threads = o.threads, batch = o.batch, steps = o.steps, warmup = o.warmup;
  const dsgd::TransformerConfig& c = o.c;
  openblas_set_num_threads(static_cast<int>(threads));

  dsgd::Rng rng(1);
  const dsgd::Dataset ds = random_bytes(c, batch, rng);

  dsgd::TransformerWorkload w(c);
  std::vector<float> params(w.param_count()), grads(w.param_count());
  w.init_params(params.data(), 1);
  w.reserve(batch);
  dsgd::SgdOptimizer opt(dsgd::SgdOptions{0.01, 0.9, 0.0, false}, w.param_count());
  std::vector<uint32_t> idx(batch);
  double opt_s = 0;  // the optimizer's share, when profiling
  auto step = [&] {
    for (auto& i : idx) i = static_cast<uint32_t>(rng.below(ds.rows));
    w.load_batch(ds, idx.data(), batch);
    w.forward(params.data());
    w.backward(params.data(), grads.data(), dsgd::LayerHook{});
    const double t0 = dsgd::kernel_profile().enabled ? now_s() : 0;
    opt.step(params.data(), grads.data());
    if (dsgd::kernel_profile().enabled) opt_s += now_s() - t0;
  };
  std::vector<double> step_cpu;
  const std::vector<double> step_times =
      sample_times(static_cast<int>(warmup), static_cast<int>(steps), step, &step_cpu);
  const double step_s = median(step_times), best_s = *std::min_element(step_times.begin(), step_times.end());
  std::string samples = ", \"step_times_s\": [";
  for (size_t i = 0; i < step_times.size(); ++i) samples += (i ? ", " : "") + std::to_string(step_times[i]);
  samples += "], \"step_cpu_s\": [";
  for (size_t i = 0; i < step_cpu.size(); ++i) samples += (i ? ", " : "") + std::to_string(step_cpu[i]);
  samples += "]";
  const std::string profile = o.profile ? profile_steps(steps, step, opt_s) : std::string();
  const double step_flops = w.flops_per_sample() * double(batch);
  const double sgemm_gflops = sgemm_reference_gflops();

  // GEMM-bound layers alone, n = batch·seq rows.
  const size_t n = batch * c.seq, D = c.d_model;
  const auto fc = linear_time(n, D, 4 * D), proj = linear_time(n, 4 * D, D), qkv = linear_time(n, D, 3 * D);
  const double mlp_gflops = (fc.second + proj.second) / (fc.first + proj.first) * 1e-9;
  const double qkv_gflops = qkv.second / qkv.first * 1e-9;

  std::printf(
      "{\"threads\": %zu, \"layers\": %zu, \"d_model\": %zu, \"heads\": %zu, \"seq\": %zu, \"batch\": %zu, "
      "\"vocab\": %zu, \"params\": %zu, \"steps\": %zu, \"step_median_s\": %.6f, \"step_best_s\": %.6f, "
      "\"step_flops\": %.6g, \"step_gflops\": %.3f, \"sgemm_gflops\": %.3f, \"mlp_gflops\": %.3f, "
      "\"qkv_gflops\": %.3f%s%s}\n",
      threads, c.layers, c.d_model, c.heads, c.seq, batch, c.vocab, w.param_count(), steps, step_s, best_s, step_flops,
      step_flops / step_s * 1e-9, sgemm_gflops, mlp_gflops, qkv_gflops, samples.c_str(), profile.c_str());
  return 0;
}
