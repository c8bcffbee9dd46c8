// The AVX2 3×3 kernels (workloads/layers/conv3x3_blocked.hpp) against oneDNN on ResNet-20's
// stride-1 3×3 convolutions (batch 128 by default): 16→16 @28², 32→32 @14², 64→64 @7².
// Per shape, thread count and pass (forward, weight gradient, input gradient), timed
// interleaved rep by rep, median of --reps:
//   ours:  BlockedConv3x3 on nChw8c activations (its weight repack included);
//   raw:   the oneDNN primitive alone on the same nChw8c tensors, weights already in its own
//          format and the weight gradient left in it (its reorders not timed: favours oneDNN);
//   full:  DnnlConv2d, what the step pays today (CNHW in and out, its transposes and reorders).
// GFLOP/s = 2·N·H·W·Cout·Cin·9 / time for every pass; raw/ours and full/ours are speed-ups.
// Prints oneDNN's implementation name per primitive (jit:avx2 expected).
// Usage: bench_conv3x3 [--threads 1,2] [--reps 10] [--n 128] [--shapes 16x28,32x14,64x7]
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "workloads/layers/conv2d_dnnl.hpp"
#include "workloads/layers/conv3x3_blocked.hpp"

#if DSGD_HAVE_DNNL
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>
#endif

#include "bench/bench_timing.hpp"
#include "core/copy_aliasing.hpp"
#include "workloads/blas_core.hpp"

extern "C" void openblas_set_num_threads(int);

namespace {

using dsgd::bench::median;
using dsgd::bench::now_s;

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> out;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    out.push_back(std::atoi(s.substr(i, j - i).c_str()));
    i = j + 1;
  }
  return out;
}

std::vector<float> random_floats(size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

#if DSGD_HAVE_DNNL
// The three oneDNN primitives on nChw8c activations, weights in the primitives' formats.
struct RawDnnl {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream str{eng};
  dnnl::convolution_forward fwd;
  dnnl::convolution_backward_data bwd_d;
  dnnl::convolution_backward_weights bwd_w;
  dnnl::memory x, y, dy, dx, w_f, w_d, dw;
  std::string impl[3];

  RawDnnl(const dsgd::Conv2dShape& s, const float* xb, const float* w_oihw, const float* dyb) {
    using namespace dnnl;
    using tag = memory::format_tag;
    using dt = memory::data_type;
    const auto N = memory::dim(s.n), C = memory::dim(s.c_in), O = memory::dim(s.c_out), H = memory::dim(s.h),
               W = memory::dim(s.w);
    const memory::desc x_md({N, C, H, W}, dt::f32, tag::nChw8c), y_md({N, O, H, W}, dt::f32, tag::nChw8c);
    const memory::desc w_any({O, C, 3, 3}, dt::f32, tag::any), w_user({O, C, 3, 3}, dt::f32, tag::oihw);
    const memory::dims st{1, 1}, pad{1, 1};
    const convolution_forward::primitive_desc fpd(
        convolution_forward::desc(prop_kind::forward_training, algorithm::convolution_direct, x_md, w_any, y_md, st,
                                  pad, pad),
        eng);
    const convolution_backward_data::primitive_desc dpd(
        convolution_backward_data::desc(algorithm::convolution_direct, x_md, w_any, y_md, st, pad, pad), eng, fpd);
    const convolution_backward_weights::primitive_desc wpd(
        convolution_backward_weights::desc(algorithm::convolution_direct, x_md, w_any, y_md, st, pad, pad), eng, fpd);
    fwd = convolution_forward(fpd);
    bwd_d = convolution_backward_data(dpd);
    bwd_w = convolution_backward_weights(wpd);
    impl[0] = fpd.impl_info_str();
    impl[1] = wpd.impl_info_str();
    impl[2] = dpd.impl_info_str();
    x = memory(x_md, eng, const_cast<float*>(xb));
    dy = memory(y_md, eng, const_cast<float*>(dyb));
    y = memory(y_md, eng);
    dx = memory(x_md, eng);
    w_f = memory(fpd.weights_desc(), eng);
    w_d = memory(dpd.weights_desc(), eng);
    dw = memory(wpd.diff_weights_desc(), eng);
    memory wu(w_user, eng, const_cast<float*>(w_oihw));
    reorder(wu, w_f).execute(str, wu, w_f);
    reorder(wu, w_d).execute(str, wu, w_d);
    str.wait();
  }
  void forward() {
    fwd.execute(str, {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, w_f}, {DNNL_ARG_DST, y}});
    str.wait();
  }
  void backward_weights() {
    bwd_w.execute(str, {{DNNL_ARG_SRC, x}, {DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_DIFF_WEIGHTS, dw}});
    str.wait();
  }
  void backward_input() {
    bwd_d.execute(str, {{DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_WEIGHTS, w_d}, {DNNL_ARG_DIFF_SRC, dx}});
    str.wait();
  }
};
#endif

// The command line.
struct Options {
  std::vector<int> threads = {1, 2};
  int reps = 10, n = 128;
  std::vector<std::pair<int, int>> shapes = {{16, 28}, {32, 14}, {64, 7}};  // (channels, width)
};

// --shapes: CxW,CxW,...
std::vector<std::pair<int, int>> parse_shapes(const std::string& v) {
  std::vector<std::pair<int, int>> shapes;
  size_t a = 0;
  while (a < v.size()) {
    size_t b = v.find(',', a);
    if (b == std::string::npos) b = v.size();
    const std::string e = v.substr(a, b - a);
    const size_t x = e.find('x');
    shapes.emplace_back(std::atoi(e.substr(0, x).c_str()), std::atoi(e.substr(x + 1).c_str()));
    a = b + 1;
  }
  return shapes;
}

// Parses argv into o; false (after a message) on an unknown option.
bool options_parse(int argc, char** argv, Options& o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--threads") {
      o.threads = parse_list(v);
    } else if (k == "--reps") {
      o.reps = std::max(1, std::atoi(v.c_str()));
    } else if (k == "--n") {
      o.n = std::max(1, std::atoi(v.c_str()));
    } else if (k == "--shapes") {
      o.shapes = parse_shapes(v);
    } else {
      std::fprintf(stderr, "bench_conv3x3: unknown option %s\n", k.c_str());
      return false;
    }
  }
  return true;
}

using PassRuns = std::vector<std::function<void()>>[3];  // per pass: ours, raw, full
using PassTimes = std::vector<double>[3][3];             // [pass][ours, raw, full]

// Every run of every pass once per round, interleaved; 2 untimed warm-up rounds, then `reps`.
void time_interleaved(PassRuns& run, int reps, PassTimes& times) {
  for (int r = -2; r < reps; ++r)  // 2 untimed warm-up rounds
    for (int p = 0; p < 3; ++p)
      for (size_t k = 0; k < run[p].size(); ++k) {
        const double t0 = now_s();
        run[p][k]();
        const double dt = now_s() - t0;
        if (r >= 0) times[p][k].push_back(dt);
      }
}

// One line per pass: ours, then raw and full with their ratio to ours ("-" where not run).
void pass_rows_print(const char* name, int t, double flops, const PassRuns& run, PassTimes& times) {
  const char* pass_name[3] = {"fwd", "bwdW", "bwdX"};
  for (int p = 0; p < 3; ++p) {
    const double o = median(times[p][0]);
    std::printf("%-12s %3d %-4s | %8.3f %7.1f |", name, t, pass_name[p], o * 1e3, flops / o / 1e9);
    for (size_t k = 1; k < 3; ++k) {
      if (run[p].size() > k) {
        const double m = median(times[p][k]);
        std::printf(" %8.3f %7.1f %6.2f |", m * 1e3, flops / m / 1e9, m / o);
      } else {
        std::printf(" %8s %7s %6s |", "-", "-", "-");
      }
    }
    std::printf("\n");
  }
}

// One shape (c channels in and out, hw × hw) at every thread count.
void shape_bench(const Options& o, int c, int hw) {
  const std::vector<int>& threads = o.threads;
  const dsgd::Conv2dShape s{size_t(o.n), size_t(c), size_t(hw), size_t(hw), size_t(c), 3, 1, 1};
  const size_t nx = s.c_in * s.n * s.h * s.w, ny = s.c_out * s.n * s.h * s.w;
  const double flops = s.forward_flops();
  // The same values serve as CNHW (DnnlConv2d) and nChw8c (the others): timing only.
  const auto x = random_floats(nx, 1), w = random_floats(s.weight_count(), 2), dy = random_floats(ny, 3);
  std::vector<float> y(ny), dx(nx), dw(s.weight_count());
  for (int t : threads) {
    openblas_set_num_threads(t);
#if DSGD_HAVE_DNNL
    omp_set_num_threads(t);
#endif
    dsgd::BlockedConv3x3 ours(s);
    PassRuns run;  // per pass: ours, raw, full
    run[0].push_back([&] { ours.forward(x.data(), w.data(), y.data()); });
    run[1].push_back([&] { ours.backward_weights(x.data(), dy.data(), dw.data()); });
    run[2].push_back([&] { ours.backward_input(w.data(), dy.data(), dx.data(), false); });
#if DSGD_HAVE_DNNL
    RawDnnl raw(s, x.data(), w.data(), dy.data());
    dsgd::DnnlConv2d full(s);
    run[0].push_back([&] { raw.forward(); });
    run[1].push_back([&] { raw.backward_weights(); });
    run[2].push_back([&] { raw.backward_input(); });
    // A distinct x / dy pointer copy is not needed: each full call converts what it is given
    // (backward_weights reuses forward's converted x, as in the step).
    run[0].push_back([&] { full.forward(x.data(), w.data(), y.data()); });
    run[1].push_back([&] { full.backward_weights(x.data(), dy.data(), dw.data()); });
    run[2].push_back([&] { full.backward_input(w.data(), dy.data(), dx.data(), false); });
    if (t == threads.front())
      std::printf("# %dx%d: oneDNN fwd %s, bwdW %s, bwdX %s\n", c, hw, raw.impl[0].c_str(), raw.impl[1].c_str(),
                  raw.impl[2].c_str());
#endif
    PassTimes times;
    time_interleaved(run, o.reps, times);
    char name[32];
    std::snprintf(name, sizeof name, "%d->%d@%d", c, c, hw);
    pass_rows_print(name, t, flops, run, times);
  }
}

}  // namespace

int main(int argc, char** argv) {
  dsgd::copy_aliasing_start(argv);  // the product's memory copies (core/copy_aliasing.hpp)
  dsgd::blas_core_start();          // the product's BLAS kernels (workloads/blas_core.hpp)
  Options o;
  if (!options_parse(argc, argv, o)) return 2;
  const bool have_dnnl = dsgd::conv2d_dnnl_available();
  std::printf("# bench_conv3x3: n=%d, median of %d interleaved reps; ms and GFLOP/s per pass%s\n", o.n, o.reps,
              have_dnnl ? "" : " (no oneDNN in this build: ours only)");
  std::printf("%-12s %3s %-4s | %8s %7s | %8s %7s %6s | %8s %7s %6s\n", "shape", "thr", "pass", "ours_ms", "GF/s",
              "raw_ms", "GF/s", "raw/us", "full_ms", "GF/s", "full/us");
  for (const auto& [c, hw] : o.shapes) shape_bench(o, c, hw);
  return 0;
}
