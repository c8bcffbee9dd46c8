// Times one training step of the resnet workload — forward, backward, SGD with momentum 0.9
// (v ← 0.9 v + g; x ← x − η v, PyTorch's update) — on a batch already loaded, as
// bench/bench_resnet.py does for PyTorch, and prints one JSON line:
//   {"model", "batch", "shape", "threads", "steps", "median_s", "p10_s", "p90_s",
//    "flops_per_step", "gflops", "sgemm_gflops"}
// gflops = flops_per_sample × batch / median_s (convolutions and the head only, see
// ResNetWorkload::flops_per_sample); sgemm_gflops: a 1024×1024×1024 cblas_sgemm at the same
// thread count, median of 7, measured in the same process.
// conv_backends: each convolution's backend in forward order (i = im2col + SGEMM, o = oneDNN,
// d = the direct 3×3 kernels);
// --conv-backend auto|im2col|onednn (default auto: the per-shape table, layers/conv2d_dnnl.cpp).
// layout: the activation layout (cnhw or nchw8c); --layout auto|cnhw|nchw8c (default auto:
// nChw8c where the network can keep it, see workloads/resnet.hpp).
// --profile 1: after the timed steps, runs --steps more with per-kernel and per-layer
// accounting (layers/kernel_profile.hpp) and prints the mean seconds per step of each to
// stderr (a table) and as "profile" in the JSON line; the timed steps are not profiled.
// Usage: bench_resnet --model resnet18 --batch 32 --shape 3x32x32 --threads 1 --steps 10 --warmup 3
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/copy_aliasing.hpp"
#include "workloads/blas_core.hpp"
#include "workloads/datasets/dataset.hpp"
#include "workloads/layers/kernel_profile.hpp"
#include "workloads/resnet.hpp"

extern "C" void openblas_set_num_threads(int);

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * double(v.size() - 1) + 0.5)];
}

double sgemm_gflops() {
  const int n = 1024;
  std::vector<float> a(size_t(n) * n, 0.5f), b(size_t(n) * n, 0.25f), c(size_t(n) * n);
  std::vector<double> t;
  for (int r = 0; r < 8; ++r) {
    const double t0 = now_s();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    if (r > 0) t.push_back(now_s() - t0);
  }
  return 2.0 * n * n * double(n) / quantile(t, 0.5) / 1e9;
}

// The command line (every option takes a value).
struct Options {
  std::string model = "resnet20", shape = "1x28x28", backend = "auto", layout = "auto";
  int batch = 128, threads = 1, steps = 10, warmup = 3, profile = 0;
};

// Parses argv into o; false (after a message) on an unknown option or a bad value.
bool options_parse(int argc, char** argv, Options& o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--model")
      o.model = v;
    else if (k == "--batch")
      o.batch = std::atoi(v.c_str());
    else if (k == "--shape")
      o.shape = v;
    else if (k == "--threads")
      o.threads = std::atoi(v.c_str());
    else if (k == "--steps")
      o.steps = std::atoi(v.c_str());
    else if (k == "--warmup")
      o.warmup = std::atoi(v.c_str());
    else if (k == "--conv-backend")
      o.backend = v;
    else if (k == "--layout")
      o.layout = v;
    else if (k == "--profile")
      o.profile = std::atoi(v.c_str());
    else {
      std::fprintf(stderr, "bench_resnet: unknown option %s\n", k.c_str());
      return false;
    }
  }
  if (o.batch < 1 || o.steps < 1 || o.threads < 1) {
    std::fprintf(stderr, "bench_resnet: --batch, --steps and --threads must be positive\n");
    return false;
  }
  return true;
}

// Per-layer accounting of the profiled steps: a table on stderr, and the "layers" JSON object's
// entries appended to prof_json.
void layers_profile_report(const Options& o, const dsgd::ResNetWorkload& resnet, std::string& prof_json) {
  std::fprintf(stderr, "  %-26s %-6s %-6s %9s %9s %7s\n", "layer", "shape", "conv", "fwd ms", "bwd ms", "GFLOP/s");
  const auto& us = resnet.unit_seconds();
  for (size_t u = 0; u < resnet.conv_layer_count(); ++u) {
    const double f = us[2 * u] / o.steps, b = us[2 * u + 1] / o.steps;
    const dsgd::Conv2dShape cs = resnet.conv_shape(u);
    dsgd::Conv2dShape sb = cs;
    sb.n = size_t(o.batch);
    const double fl = 3.0 * sb.forward_flops();
    char shape_s[64];
    std::snprintf(shape_s, sizeof shape_s, "%zu>%zu k%zu s%zu @%zu", cs.c_in, cs.c_out, cs.k, cs.stride, cs.h);
    std::fprintf(stderr, "  %-26s %-16s %-6s %9.2f %9.2f %7.1f\n", resnet.conv_layer_name(u).c_str(), shape_s,
                 dsgd::conv_backend_name(resnet.conv_backend(u)), f * 1e3, b * 1e3, fl / (f + b) / 1e9);
    prof_json +=
        (u ? ", \"" : "\"") + resnet.conv_layer_name(u) + "\": [" + std::to_string(f) + ", " + std::to_string(b) + "]";
  }
}

// --profile 1: --steps more steps with per-kernel and per-layer accounting; prints the table to
// stderr and returns the JSON line's "profile" member (with its leading comma).
template <typename Step>
std::string profile_run(const Options& o, dsgd::ResNetWorkload& resnet, Step& step, double& opt_s) {
  auto& kp = dsgd::kernel_profile();
  kp.clear();
  resnet.clear_unit_seconds();
  kp.enabled = true;
  opt_s = 0;
  const int steps = o.steps;
  const double t0 = now_s();
  for (int s = 0; s < steps; ++s) step();
  const double total = (now_s() - t0) / steps;
  kp.enabled = false;
  double covered = opt_s / steps;
  std::fprintf(stderr, "profile: %s batch %d, %d thread(s), mean of %d steps: %.1f ms/step\n", o.model.c_str(), o.batch,
               o.threads, steps, total * 1e3);
  std::fprintf(stderr, "  %-16s %9s %6s\n", "kernel", "ms/step", "share");
  std::string prof_json = ", \"profile\": {\"step_s\": " + std::to_string(total);
  for (size_t k = 0; k < kp.seconds.size(); ++k) {
    const double v = kp.seconds[k] / steps;
    covered += v;
    if (v == 0) continue;
    std::fprintf(stderr, "  %-16s %9.2f %5.1f%%\n", dsgd::kernel_name(dsgd::Kernel(k)), v * 1e3, 100 * v / total);
    prof_json += ", \"" + std::string(dsgd::kernel_name(dsgd::Kernel(k))) + "\": " + std::to_string(v);
  }
  std::fprintf(stderr, "  %-16s %9.2f %5.1f%%\n", "optimizer", opt_s / steps * 1e3, 100 * opt_s / steps / total);
  std::fprintf(stderr, "  %-16s %9.2f %5.1f%%\n", "other", (total - covered) * 1e3, 100 * (total - covered) / total);
  prof_json += ", \"optimizer\": " + std::to_string(opt_s / steps) + ", \"layers\": {";
  layers_profile_report(o, resnet, prof_json);
  prof_json += "}}";
  return prof_json;
}

}  // namespace

int main(int argc, char** argv) {
  dsgd::copy_aliasing_start(argv);  // the product's memory copies (core/copy_aliasing.hpp)
  dsgd::blas_core_start();          // the product's BLAS kernels (workloads/blas_core.hpp)
  Options o;
  if (!options_parse(argc, argv, o)) return 2;
  const std::string& model = o.model;
  const std::string& shape = o.shape;
  const int batch = o.batch, threads = o.threads, steps = o.steps, warmup = o.warmup;
  openblas_set_num_threads(threads);
  const dsgd::DatasetPair data =
      dsgd::dataset_load("synthetic:shape=" + shape + ",classes=10,n=" + std::to_string(batch) + ",test=0", 1);
  auto wl = dsgd::resnet_create(model, data.train, false, 1);
  auto* resnet = dynamic_cast<dsgd::ResNetWorkload*>(wl.get());
  resnet->set_conv_backend(o.backend);
  resnet->set_activation_layout(o.layout);
  const char* layout_name = resnet->activation_layout() == dsgd::ActivationLayout::nchw8c ? "nchw8c" : "cnhw";
  std::string backends;
  for (size_t u = 0; u < resnet->conv_layer_count(); ++u)
    backends += dsgd::conv_backend_name(resnet->conv_backend(u))[0];
  wl->reserve(size_t(batch));
  std::vector<float> params(wl->param_count()), grads(wl->param_count()), velocity(wl->param_count(), 0.0f);
  wl->init_params(params.data(), 1);
  std::vector<uint32_t> idx(static_cast<size_t>(batch));
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = uint32_t(i);
  wl->load_batch(data.train, idx.data(), idx.size());
  const float lr = 0.01f, mu = 0.9f;
  std::vector<double> times;
  double loss = 0;
  double opt_s = 0;
  auto step = [&]() {
    loss = wl->forward(params.data());
    wl->backward(params.data(), grads.data(), dsgd::LayerHook{});
    const double t1 = now_s();
    for (size_t k = 0; k < params.size(); ++k) {
      velocity[k] = mu * velocity[k] + grads[k];
      params[k] -= lr * velocity[k];
    }
    opt_s += now_s() - t1;
  };
  for (int s = 0; s < warmup + steps; ++s) {
    const double t0 = now_s();
    step();
    if (s >= warmup) times.push_back(now_s() - t0);
  }
  const double med = quantile(times, 0.5);
  const std::string prof_json = o.profile ? profile_run(o, *resnet, step, opt_s) : std::string();
  const double flops = wl->flops_per_sample() * batch;
  std::printf(
      "{\"impl\": \"dsgd\", \"model\": \"%s\", \"batch\": %d, \"shape\": \"%s\", \"threads\": %d, \"steps\": %d, "
      "\"median_s\": %.6f, \"p10_s\": %.6f, \"p90_s\": %.6f, \"flops_per_step\": %.6g, \"gflops\": %.3f, "
      "\"sgemm_gflops\": %.3f, \"final_loss\": %.4f, \"conv_backends\": \"%s\", \"layout\": \"%s\"%s}\n",
      model.c_str(), batch, shape.c_str(), threads, steps, med, quantile(times, 0.1), quantile(times, 0.9), flops,
      flops / med / 1e9, sgemm_gflops(), loss, backends.c_str(), layout_name, prof_json.c_str());
  return 0;
}
