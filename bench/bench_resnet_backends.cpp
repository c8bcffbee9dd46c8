// Convolution backends by measurement: for the convolution shapes of the two benchmark cases
// (ResNet-18 CIFAR batch 32 on 3x32x32, ResNet-20 batch 128 on 1x28x28), times forward +
// weight gradient + input gradient of
//   im2col + SGEMM (workloads/layers/conv2d.cpp) on the BLAS this program is linked with, and
//   oneDNN's convolution primitives (when built with -DDSGD_BENCH_DNNL), in the memory formats
//   oneDNN picks itself (tag any, reorders not timed: oneDNN's best case),
// and prints, per shape, median milliseconds and the FLOP-weighted total of each model (every
// shape times its count in the model). Built and run by bench/bench_resnet_backends.sh, once
// linked with OpenBLAS (+ oneDNN) and once with BLIS, single-threaded.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "workloads/layers/conv2d.hpp"

#ifdef DSGD_BENCH_DNNL
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

template <typename Fn>
double median_s(Fn&& fn, int reps) {
  std::vector<double> t;
  fn();  // warm-up
  for (int r = 0; r < reps; ++r) {
    const double t0 = now_s();
    fn();
    t.push_back(now_s() - t0);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct Case {
  const char* model;
  dsgd::Conv2dShape s;
  int count;  // how many convolutions of this shape the model has
};

double ours(const dsgd::Conv2dShape& s, int reps) {
  std::vector<float> x(s.c_in * s.n * s.h * s.w, 0.1f), w(s.weight_count(), 0.01f), y(s.c_out * s.cols());
  std::vector<float> dy(y.size(), 0.01f), dx(x.size()), dw(w.size()), col(std::max<size_t>(1, s.col_size()));
  return median_s(
      [&] {
        dsgd::conv2d_forward(s, x.data(), w.data(), y.data(), col.data());
        dsgd::conv2d_backward_weights(s, x.data(), dy.data(), dw.data(), col.data());
        dsgd::conv2d_backward_input(s, w.data(), dy.data(), dx.data(), col.data(), false);
      },
      reps);
}

#ifdef DSGD_BENCH_DNNL
double onednn(const dsgd::Conv2dShape& s, int reps) {
  using namespace dnnl;
  using dt = memory::data_type;
  using tag = memory::format_tag;
  engine eng(engine::kind::cpu, 0);
  stream str(eng);
  const auto N = memory::dim(s.n), C = memory::dim(s.c_in), H = memory::dim(s.h), W = memory::dim(s.w);
  const auto O = memory::dim(s.c_out), K = memory::dim(s.k), Ho = memory::dim(s.h_out()), Wo = memory::dim(s.w_out());
  const memory::dims strides{memory::dim(s.stride), memory::dim(s.stride)}, pad{memory::dim(s.pad), memory::dim(s.pad)};
  const memory::desc src({N, C, H, W}, dt::f32, tag::any), wei({O, C, K, K}, dt::f32, tag::any),
      dst({N, O, Ho, Wo}, dt::f32, tag::any);
  convolution_forward::primitive_desc fwd(
      convolution_forward::desc(prop_kind::forward_training, algorithm::convolution_direct, src, wei, dst, strides, pad,
                                pad),
      eng);
  convolution_backward_data::primitive_desc bwd_d(
      convolution_backward_data::desc(algorithm::convolution_direct, src, wei, dst, strides, pad, pad), eng, fwd);
  convolution_backward_weights::primitive_desc bwd_w(
      convolution_backward_weights::desc(algorithm::convolution_direct, src, wei, dst, strides, pad, pad), eng, fwd);
  memory src_m(fwd.src_desc(), eng), wei_m(fwd.weights_desc(), eng), dst_m(fwd.dst_desc(), eng);
  memory ddst_m(bwd_d.diff_dst_desc(), eng), wei_d_m(bwd_d.weights_desc(), eng), dsrc_m(bwd_d.diff_src_desc(), eng);
  memory src_w_m(bwd_w.src_desc(), eng), ddst_w_m(bwd_w.diff_dst_desc(), eng), dwei_m(bwd_w.diff_weights_desc(), eng);
  for (memory* m : {&src_m, &wei_m, &ddst_m, &wei_d_m, &src_w_m, &ddst_w_m}) {
    auto* p = static_cast<float*>(m->get_data_handle());
    std::fill(p, p + m->get_desc().get_size() / sizeof(float), 0.01f);
  }
  convolution_forward f(fwd);
  convolution_backward_data bd(bwd_d);
  convolution_backward_weights bw(bwd_w);
  return median_s(
      [&] {
        f.execute(str, {{DNNL_ARG_SRC, src_m}, {DNNL_ARG_WEIGHTS, wei_m}, {DNNL_ARG_DST, dst_m}});
        bw.execute(str, {{DNNL_ARG_SRC, src_w_m}, {DNNL_ARG_DIFF_DST, ddst_w_m}, {DNNL_ARG_DIFF_WEIGHTS, dwei_m}});
        bd.execute(str, {{DNNL_ARG_DIFF_DST, ddst_m}, {DNNL_ARG_WEIGHTS, wei_d_m}, {DNNL_ARG_DIFF_SRC, dsrc_m}});
        str.wait();
      },
      reps);
}
#endif

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 5;
  const char* blas = argc > 2 ? argv[2] : "?";
  const std::vector<Case> cases = {
      // ResNet-18 CIFAR, batch 32 (stem, then per stage the 3x3 convs; stride-2 firsts; shortcuts).
      {"resnet18", {32, 3, 32, 32, 64, 3, 1, 1}, 1},
      {"resnet18", {32, 64, 32, 32, 64, 3, 1, 1}, 4},
      {"resnet18", {32, 64, 32, 32, 128, 3, 2, 1}, 1},
      {"resnet18", {32, 128, 16, 16, 128, 3, 1, 1}, 3},
      {"resnet18", {32, 64, 32, 32, 128, 1, 2, 0}, 1},
      {"resnet18", {32, 128, 16, 16, 256, 3, 2, 1}, 1},
      {"resnet18", {32, 256, 8, 8, 256, 3, 1, 1}, 3},
      {"resnet18", {32, 128, 16, 16, 256, 1, 2, 0}, 1},
      {"resnet18", {32, 256, 8, 8, 512, 3, 2, 1}, 1},
      {"resnet18", {32, 512, 4, 4, 512, 3, 1, 1}, 3},
      {"resnet18", {32, 256, 8, 8, 512, 1, 2, 0}, 1},
      // ResNet-20, batch 128, 1x28x28.
      {"resnet20", {128, 1, 28, 28, 16, 3, 1, 1}, 1},
      {"resnet20", {128, 16, 28, 28, 16, 3, 1, 1}, 6},
      {"resnet20", {128, 16, 28, 28, 32, 3, 2, 1}, 1},
      {"resnet20", {128, 32, 14, 14, 32, 3, 1, 1}, 5},
      {"resnet20", {128, 16, 28, 28, 32, 1, 2, 0}, 1},
      {"resnet20", {128, 32, 14, 14, 64, 3, 2, 1}, 1},
      {"resnet20", {128, 64, 7, 7, 64, 3, 1, 1}, 5},
      {"resnet20", {128, 32, 14, 14, 64, 1, 2, 0}, 1},
  };
  std::printf("blas=%s  per shape: forward + weight grad + input grad, median of %d, ms\n", blas, reps);
  std::printf("%-9s %-24s %5s %10s %10s\n", "model", "N Cin HxW -> Cout k s", "count", "im2col", "onednn");
  double tot_ours[2] = {0, 0}, tot_dnnl[2] = {0, 0};
  for (const Case& c : cases) {
    const int m = std::string(c.model) == "resnet18" ? 0 : 1;
    const double a = ours(c.s, reps);
    double b = 0;
#ifdef DSGD_BENCH_DNNL
    b = onednn(c.s, reps);
#endif
    tot_ours[m] += a * c.count;
    tot_dnnl[m] += b * c.count;
    std::printf("%-9s %3zu %3zu %2zux%-2zu -> %3zu %zu %zu %5d %10.2f %10.2f\n", c.model, c.s.n, c.s.c_in, c.s.h, c.s.w,
                c.s.c_out, c.s.k, c.s.stride, c.count, a * 1e3, b * 1e3);
  }
  for (int m = 0; m < 2; ++m)
    std::printf("TOTAL %-8s blas=%-9s im2col+gemm %8.1f ms   onednn %8.1f ms\n", m == 0 ? "resnet18" : "resnet20", blas,
                tot_ours[m] * 1e3, tot_dnnl[m] * 1e3);
  return 0;
}
