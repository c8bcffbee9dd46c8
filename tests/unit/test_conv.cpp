// Image layers (workloads/layers/conv2d, batchnorm, relu, pooling): each fast kernel against
// its naive reference, each backward against central finite differences (grad_check.hpp).
// Tolerances: fast vs naive (double sums) with float_sums_close (float_compare.hpp): each
// output within 4·ε·sqrt(k)·Σ|t_i| for its k terms, so the same check holds for a 72-term
// forward output and a weight gradient summed over 1600 pixels (|dW| ~ 40), whichever ISA
// oneDNN or the compiler picked, and still fails on one missing or misindexed term (it moves
// an output by ~Σ|t_i|/k, at least ~30x the tolerance on these shapes); finite differences use
// the defaults of grad_check.hpp (atol 2e-3, rtol 2e-2, h 1e-2), justified there: conv and
// pooling are linear, so their central difference has no truncation error at all; BatchNorm is
// smooth with third derivatives O(1/σ³) ~ O(10) here, giving truncation ~h²·10/6 ~ 2e-4.
// BatchNorm and pooling fast vs naive: all_near_rel / near_rel with rtol = atol = tol, i.e.
// |got − ref| ≤ tol·(1 + |ref|). Their outputs are normalised (O(1) by construction), and their
// errors come from the float statistics (mean, 1/σ over M values, flushed to double every 1024)
// times values of that size, so tol (1e-6 to 1e-3 by quantity, unchanged) is the error at
// magnitude 1, relative above it (dγ and dβ are sums over M that grow as sqrt(M)) and a floor
// for values near 0. A wrong statistic (a missing value, a wrong M) moves them by ≥ 1e-3.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "conv_reference.hpp"
#include "core/errors.hpp"
#include "float_compare.hpp"
#include "grad_check.hpp"
#include "workloads/layers/batchnorm.hpp"
#include "workloads/layers/conv2d.hpp"
#include "workloads/layers/conv2d_dnnl.hpp"
#include "workloads/layers/conv3x3_blocked.hpp"
#include "workloads/layers/layer_threads.hpp"
#include "workloads/layers/pooling.hpp"
#include "workloads/layers/relu.hpp"

namespace dsgd {
namespace {

using testing::abs_plus;
using testing::all_near_rel;
using testing::conv_reference;
using testing::ConvReference;
using testing::dot;
using testing::expect_gradient_matches;
using testing::float_sums_close;
using testing::near_rel;
using testing::plus;
using testing::projection_weights;

std::vector<float> random_vector(size_t n, unsigned seed) {
  auto v = projection_weights(n, seed);
  for (auto& x : v) x *= 2.0f;  // in [-1, 1)
  return v;
}

// 3x3 pad 1 stride 1 / stride 2, 1x1 stride 1 (direct) / stride 2 (projection shortcut),
// an odd size, a 5x5 kernel with pad 2, and 5 images of 40x40 = 1600 output pixels, so the
// im2col chunks (kConvChunkCols = 4096: 2 images) are 2 + 2 + 1 images.
const Conv2dShape kConvShapes[] = {
    {2, 3, 5, 5, 4, 3, 1, 1}, {2, 3, 6, 6, 4, 3, 2, 1}, {3, 4, 4, 4, 5, 1, 1, 0},   {2, 4, 6, 6, 3, 1, 2, 0},
    {1, 2, 7, 5, 3, 3, 2, 1}, {2, 2, 6, 6, 2, 5, 1, 2}, {5, 2, 40, 40, 3, 3, 1, 1},
};

TEST(Conv2d, FastMatchesNaive) {
  ASSERT_EQ(kConvShapes[6].chunk_images(), 2u);
  unsigned seed = 100;
  for (const Conv2dShape& s : kConvShapes) {
    const size_t nx = s.c_in * s.n * s.h * s.w, ny = s.c_out * s.cols();
    auto x = random_vector(nx, seed++), w = random_vector(s.weight_count(), seed++), dy = random_vector(ny, seed++);
    const ConvReference ref = conv_reference(s, x, w, dy);
    const std::string what = "k=" + std::to_string(s.k) + " s=" + std::to_string(s.stride);
    std::vector<float> col(std::max<size_t>(1, s.col_size())), y(ny);
    conv2d_forward(s, x.data(), w.data(), y.data(), col.data());
    ASSERT_TRUE(float_sums_close(y, ref.y, ref.y_abs, ref.k_y)) << "y " << what;
    std::vector<float> dx(nx, 0.5f), dw(w.size());
    conv2d_backward_weights(s, x.data(), dy.data(), dw.data(), col.data());
    conv2d_backward_input(s, w.data(), dy.data(), dx.data(), col.data(), /*accumulate=*/false);
    ASSERT_TRUE(float_sums_close(dw, ref.dw, ref.dw_abs, ref.k_dw)) << "dw " << what;
    ASSERT_TRUE(float_sums_close(dx, ref.dx, ref.dx_abs, ref.k_dx)) << "dx " << what;
    // accumulate adds onto what is there.
    const std::vector<float> acc0(nx, 0.5f);
    std::vector<float> acc = acc0;
    conv2d_backward_input(s, w.data(), dy.data(), acc.data(), col.data(), /*accumulate=*/true);
    ASSERT_TRUE(float_sums_close(acc, plus(ref.dx, acc0), abs_plus(ref.dx_abs, acc0), ref.k_dx + 1)) << "acc " << what;
  }
}

TEST(Conv2d, GradientsMatchFiniteDifferences) {
  unsigned seed = 200;
  for (const Conv2dShape& s : {kConvShapes[1], kConvShapes[3], kConvShapes[4]}) {
    const size_t nx = s.c_in * s.n * s.h * s.w, ny = s.c_out * s.cols();
    auto x = random_vector(nx, seed++), w = random_vector(s.weight_count(), seed++);
    const auto r = projection_weights(ny, seed++);
    std::vector<float> col(std::max<size_t>(1, s.col_size())), y(ny);
    auto f = [&] {
      conv2d_forward(s, x.data(), w.data(), y.data(), col.data());
      return dot(y, r);
    };
    std::vector<float> dx(nx), dw(w.size());
    conv2d_backward_weights(s, x.data(), r.data(), dw.data(), col.data());
    conv2d_backward_input(s, w.data(), r.data(), dx.data(), col.data(), false);
    expect_gradient_matches(f, x, dx, "conv dx");
    expect_gradient_matches(f, w, dw, "conv dW");
  }
}

// The oneDNN backend: the same contract as the im2col functions (layouts, overwrite and
// accumulate), against the naive reference on every shape above, with the same tolerance.
// Channel counts of 8 and more: where oneDNN picks its blocked (nChw8c/16c) kernels.
const Conv2dShape kWideConvShapes[] = {
    {3, 16, 8, 8, 16, 3, 1, 1},
    {2, 16, 8, 8, 32, 3, 2, 1},
    {2, 16, 8, 8, 32, 1, 2, 0},
    {2, 32, 4, 4, 64, 3, 1, 1},
    {2, 3, 8, 8, 16, 3, 1, 1},
    // Pixel counts that are not a multiple of 8 (7×7 = 49, 5×5 = 25, 14×14 → 7×7 at stride
    // 2): the blocked-layout transposes' (conv2d_dnnl.cpp) scalar tails.
    {2, 16, 7, 7, 16, 3, 1, 1},
    {3, 8, 5, 5, 8, 3, 1, 1},
    {2, 16, 14, 14, 32, 3, 2, 1},
};

// im2col/col2im and the im2col convolution's gradients split their loops over the --threads
// threads (layer_threads(), OpenBLAS's count); each output value is computed by one thread in a
// fixed order, so 1, 2 and 3 threads give bitwise the same result. Shapes large enough to take
// the threaded path (> kParallelMinFloats), including a 1-channel 1x1 stride-2 convolution
// (a single col row: split over the images) and the ResNet stem.
TEST(Conv2d, Im2colAndCol2imDoNotDependOnThreadCount) {
  const Conv2dShape shapes[] = {{4, 8, 28, 28, 16, 3, 1, 1},
                                {6, 8, 28, 28, 8, 3, 2, 1},
                                {4, 1, 200, 200, 2, 1, 2, 0},
                                {16, 1, 28, 28, 16, 3, 1, 1}};
  const int before = openblas_get_num_threads();
  unsigned seed = 700;
  for (const Conv2dShape& s : shapes) {
    const size_t nx = s.c_in * s.n * s.h * s.w, ny = s.c_out * s.cols(), n1 = s.n;  // all images at once
    ASSERT_GE(s.patch() * s.cols(), kParallelMinFloats);
    const auto x = random_vector(nx, seed++), dy = random_vector(ny, seed++);
    const auto dcol = random_vector(s.patch() * n1 * s.h_out() * s.w_out(), seed++);
    std::vector<float> col_ref, dx_ref;
    for (int t : {1, 2, 3}) {
      openblas_set_num_threads(t);
      ASSERT_EQ(layer_threads(), t);
      std::vector<float> col(s.patch() * n1 * s.h_out() * s.w_out(), -1.0f), dx(nx, 0.25f);
      conv2d_im2col(s, x.data(), 0, n1, col.data());
      conv2d_col2im_add(s, dcol.data(), 0, n1, dx.data());
      if (t == 1) {
        col_ref = col;
        dx_ref = dx;
        continue;
      }
      EXPECT_EQ(col, col_ref) << "im2col, " << t << " threads, c_in " << s.c_in << " k " << s.k;
      EXPECT_EQ(dx, dx_ref) << "col2im, " << t << " threads, c_in " << s.c_in << " k " << s.k;
    }
    // The threaded kernels still match the naive convolution.
    std::vector<float> col(s.col_size() ? s.col_size() : 1), y(ny), w = random_vector(s.weight_count(), seed++);
    const ConvReference ref = conv_reference(s, x, w, dy);
    conv2d_forward(s, x.data(), w.data(), y.data(), col.data());
    ASSERT_TRUE(float_sums_close(y, ref.y, ref.y_abs, ref.k_y)) << "c_in " << s.c_in << " k " << s.k;
    std::vector<float> dx(nx), dw(w.size());
    conv2d_backward_input(s, w.data(), dy.data(), dx.data(), col.data(), false);
    conv2d_backward_weights(s, x.data(), dy.data(), dw.data(), col.data());
    ASSERT_TRUE(float_sums_close(dx, ref.dx, ref.dx_abs, ref.k_dx)) << "c_in " << s.c_in << " k " << s.k;
    ASSERT_TRUE(float_sums_close(dw, ref.dw, ref.dw_abs, ref.k_dw)) << "c_in " << s.c_in << " k " << s.k;
  }
  openblas_set_num_threads(before);
}

TEST(Conv2dDnnl, MatchesNaive) {
  if (!conv2d_dnnl_available()) GTEST_SKIP() << "built without oneDNN";
  unsigned seed = 300;
  std::vector<Conv2dShape> shapes(std::begin(kConvShapes), std::end(kConvShapes));
  shapes.insert(shapes.end(), std::begin(kWideConvShapes), std::end(kWideConvShapes));
  for (const Conv2dShape& s : shapes) {
    const size_t nx = s.c_in * s.n * s.h * s.w, ny = s.c_out * s.cols();
    auto x = random_vector(nx, seed++), w = random_vector(s.weight_count(), seed++), dy = random_vector(ny, seed++);
    DnnlConv2d conv(s);
    const ConvReference ref = conv_reference(s, x, w, dy);
    const std::string what = std::to_string(s.c_in) + "->" + std::to_string(s.c_out) + " k=" + std::to_string(s.k) +
                             " s=" + std::to_string(s.stride);
    std::vector<float> y(ny);
    conv.forward(x.data(), w.data(), y.data());
    ASSERT_TRUE(float_sums_close(y, ref.y, ref.y_abs, ref.k_y)) << "y " << what;
    std::vector<float> dx(nx, 0.5f), dw(w.size(), 0.5f);
    conv.backward_weights(x.data(), dy.data(), dw.data());
    conv.backward_input(w.data(), dy.data(), dx.data(), /*accumulate=*/false);
    ASSERT_TRUE(float_sums_close(dw, ref.dw, ref.dw_abs, ref.k_dw)) << "dw " << what;
    ASSERT_TRUE(float_sums_close(dx, ref.dx, ref.dx_abs, ref.k_dx)) << "dx " << what;
    const std::vector<float> acc0(nx, 0.5f);
    std::vector<float> acc = acc0;
    conv.backward_input(w.data(), dy.data(), acc.data(), /*accumulate=*/true);
    ASSERT_TRUE(float_sums_close(acc, plus(ref.dx, acc0), abs_plus(ref.dx_abs, acc0), ref.k_dx + 1)) << "acc " << what;
    // A weight gradient from another x pointer (not the forward's) converts it anew.
    std::vector<float> x2(x.rbegin(), x.rend()), dw2(w.size());
    conv.backward_weights(x2.data(), dy.data(), dw2.data());
    const ConvReference ref2 = conv_reference(s, x2, w, dy);
    ASSERT_TRUE(float_sums_close(dw2, ref2.dw, ref2.dw_abs, ref2.k_dw)) << "dw2 " << what;
  }
}

TEST(Conv2dDnnl, GradientsMatchFiniteDifferences) {
  if (!conv2d_dnnl_available()) GTEST_SKIP() << "built without oneDNN";
  unsigned seed = 400;
  for (const Conv2dShape& s : {kConvShapes[0], kConvShapes[1], kConvShapes[3]}) {
    const size_t nx = s.c_in * s.n * s.h * s.w, ny = s.c_out * s.cols();
    auto x = random_vector(nx, seed++), w = random_vector(s.weight_count(), seed++);
    const auto r = projection_weights(ny, seed++);
    DnnlConv2d conv(s);
    std::vector<float> y(ny);
    auto f = [&] {
      conv.forward(x.data(), w.data(), y.data());
      return dot(y, r);
    };
    f();
    std::vector<float> dx(nx), dw(w.size());
    conv.backward_weights(x.data(), r.data(), dw.data());
    conv.backward_input(w.data(), r.data(), dx.data(), false);
    expect_gradient_matches(f, x, dx, "dnnl conv dx");
    expect_gradient_matches(f, w, dw, "dnnl conv dW");
  }
}

// The measured table (conv2d_dnnl.cpp): oneDNN for 1x1 and for k x k with Cin >= 3 and
// Cout <= 128; im2col for single-channel stems and the wide layers.
TEST(Conv2dDnnl, BackendTable) {
  const bool have = conv2d_dnnl_available();
  const auto o = have ? ConvBackend::onednn : ConvBackend::im2col;
  EXPECT_EQ(conv2d_pick_backend({128, 1, 28, 28, 16, 3, 1, 1}), ConvBackend::im2col);
  EXPECT_EQ(conv2d_pick_backend({128, 16, 28, 28, 16, 3, 1, 1}), o);
  EXPECT_EQ(conv2d_pick_backend({32, 3, 32, 32, 64, 3, 1, 1}), o);
  EXPECT_EQ(conv2d_pick_backend({32, 128, 16, 16, 128, 3, 1, 1}), o);
  EXPECT_EQ(conv2d_pick_backend({32, 256, 8, 8, 512, 1, 2, 0}), o);
  EXPECT_EQ(conv2d_pick_backend({32, 128, 16, 16, 256, 3, 2, 1}), ConvBackend::im2col);
  EXPECT_EQ(conv2d_pick_backend({32, 512, 4, 4, 512, 3, 1, 1}), ConvBackend::im2col);
  EXPECT_STREQ(conv_backend_name(ConvBackend::onednn), "onednn");
  if (!have) {
    EXPECT_THROW(DnnlConv2d conv(kConvShapes[0]), InputError);
  }
}

// The AVX2 3x3 kernels (conv3x3_blocked.hpp) on nChw8c activations: each pass against the
// naive CNHW reference (converted by the two helpers below). Shapes: ResNet-20's 16->16 @28
// (rows of 28: one image per kernel call, segments of 10, 9, 9 pixels), 32->32 @14 and
// 64->64 @7; channel counts 8, 24 (an odd number of blocks) and 64; images of 1x1 (the first
// pixel is also the last, the only row also the bottom one), 1 row, 1 column, 3x9, 5x5, 7x7,
// 9x13, 14x14. Rows under 20 pixels are computed 2 (10-19) or 3 (under 10) images per kernel
// call: batches that fill the groups (n = 2 at 9x13, n = 3 at 5x5), that leave a smaller last
// group (n = 4 at 7x7, n = 5 at 14x14) and that are smaller than one group (n = 1 and 2).
// The weight gradient sums chunks of images of ~256 KiB: 16->16 @28 is 2 + 1 images.
// Tolerances: float_sums_close, as above (y and dx sum up to 576 products, dw up to
// n*H*W = 1568, |dw| up to ~40).
std::vector<float> cnhw_to_nchw8c_ref(const std::vector<float>& v, size_t n, size_t c, size_t hw) {
  std::vector<float> out(v.size());
  for (size_t ch = 0; ch < c; ++ch)
    for (size_t i = 0; i < n; ++i)
      for (size_t p = 0; p < hw; ++p) out[((i * (c / 8) + ch / 8) * hw + p) * 8 + ch % 8] = v[(ch * n + i) * hw + p];
  return out;
}
std::vector<float> nchw8c_to_cnhw_ref(const std::vector<float>& v, size_t n, size_t c, size_t hw) {
  std::vector<float> out(v.size());
  for (size_t ch = 0; ch < c; ++ch)
    for (size_t i = 0; i < n; ++i)
      for (size_t p = 0; p < hw; ++p) out[(ch * n + i) * hw + p] = v[((i * (c / 8) + ch / 8) * hw + p) * 8 + ch % 8];
  return out;
}

const Conv2dShape kBlockedShapes[] = {
    {3, 16, 28, 28, 16, 3, 1, 1}, {2, 8, 7, 7, 16, 3, 1, 1},    {3, 32, 5, 5, 8, 3, 1, 1}, {2, 16, 1, 1, 16, 3, 1, 1},
    {2, 8, 3, 9, 8, 3, 1, 1},     {2, 64, 7, 7, 64, 3, 1, 1},   {1, 8, 1, 5, 16, 3, 1, 1}, {1, 16, 6, 1, 8, 3, 1, 1},
    {2, 24, 9, 13, 24, 3, 1, 1},  {1, 32, 14, 14, 32, 3, 1, 1}, {4, 16, 7, 7, 8, 3, 1, 1}, {5, 8, 14, 14, 16, 3, 1, 1},
};

TEST(Conv3x3Blocked, MatchesNaive) {
  if (!conv3x3_blocked_supported(kBlockedShapes[0])) GTEST_SKIP() << "this CPU has no AVX2 + FMA";
  unsigned seed = 900;
  for (const Conv2dShape& s : kBlockedShapes) {
    ASSERT_TRUE(conv3x3_blocked_supported(s));
    const size_t hw = s.h * s.w, nx = s.c_in * s.n * hw, ny = s.c_out * s.n * hw;
    const auto x = random_vector(nx, seed++), w = random_vector(s.weight_count(), seed++),
               dy = random_vector(ny, seed++), dx0 = random_vector(nx, seed++);
    const auto xb = cnhw_to_nchw8c_ref(x, s.n, s.c_in, hw), dyb = cnhw_to_nchw8c_ref(dy, s.n, s.c_out, hw);
    BlockedConv3x3 conv(s);
    const std::string what = "shape " + std::to_string(s.c_in) + "->" + std::to_string(s.c_out) + " @" +
                             std::to_string(s.h) + "x" + std::to_string(s.w) + " n=" + std::to_string(s.n);

    const ConvReference ref = conv_reference(s, x, w, dy);

    std::vector<float> yb(ny, 7.0f);  // overwritten
    conv.forward(xb.data(), w.data(), yb.data());
    const auto y = nchw8c_to_cnhw_ref(yb, s.n, s.c_out, hw);
    ASSERT_TRUE(float_sums_close(y, ref.y, ref.y_abs, ref.k_y)) << "y " << what;

    std::vector<float> dw(s.weight_count(), 7.0f);
    conv.backward_weights(xb.data(), dyb.data(), dw.data());
    ASSERT_TRUE(float_sums_close(dw, ref.dw, ref.dw_abs, ref.k_dw)) << "dw " << what;

    std::vector<float> dxb(nx, 7.0f);
    conv.backward_input(w.data(), dyb.data(), dxb.data(), /*accumulate=*/false);
    auto dx = nchw8c_to_cnhw_ref(dxb, s.n, s.c_in, hw);
    ASSERT_TRUE(float_sums_close(dx, ref.dx, ref.dx_abs, ref.k_dx)) << "dx " << what;

    dxb = cnhw_to_nchw8c_ref(dx0, s.n, s.c_in, hw);
    conv.backward_input(w.data(), dyb.data(), dxb.data(), /*accumulate=*/true);
    dx = nchw8c_to_cnhw_ref(dxb, s.n, s.c_in, hw);
    ASSERT_TRUE(float_sums_close(dx, plus(ref.dx, dx0), abs_plus(ref.dx_abs, dx0), ref.k_dx + 1)) << "acc dx " << what;
  }
}

// forward and backward_input split over (image, output-channel group), backward_weights over
// (output block, input block, kh, lane half); every output is summed by one thread in a fixed
// order, so 1, 2 and 3 threads give bitwise the same results.
TEST(Conv3x3Blocked, DoesNotDependOnThreadCount) {
  if (!conv3x3_blocked_supported(kBlockedShapes[0])) GTEST_SKIP() << "this CPU has no AVX2 + FMA";
  const int before = openblas_get_num_threads();
  unsigned seed = 950;
  for (const Conv2dShape& s : {Conv2dShape{3, 16, 28, 28, 16, 3, 1, 1}, Conv2dShape{3, 64, 7, 7, 64, 3, 1, 1},
                               Conv2dShape{2, 24, 9, 13, 8, 3, 1, 1}}) {
    const size_t hw = s.h * s.w, nx = s.c_in * s.n * hw, ny = s.c_out * s.n * hw;
    const auto x = random_vector(nx, seed++), w = random_vector(s.weight_count(), seed++),
               dy = random_vector(ny, seed++), dx0 = random_vector(nx, seed++);
    std::vector<float> ref;
    for (int t : {1, 2, 3}) {
      openblas_set_num_threads(t);
      ASSERT_EQ(layer_threads(), t);
      BlockedConv3x3 conv(s);
      std::vector<float> y(ny), dw(s.weight_count()), dx(nx), dx_acc = dx0;
      conv.forward(x.data(), w.data(), y.data());
      conv.backward_weights(x.data(), dy.data(), dw.data());
      conv.backward_input(w.data(), dy.data(), dx.data(), false);
      conv.backward_input(w.data(), dy.data(), dx_acc.data(), true);
      std::vector<float> all = y;
      for (const auto* v : {&dw, &dx, &dx_acc}) all.insert(all.end(), v->begin(), v->end());
      if (t == 1)
        ref = all;
      else
        EXPECT_EQ(all, ref) << t << " threads, " << s.c_in << "->" << s.c_out << " @" << s.h << "x" << s.w;
    }
  }
  openblas_set_num_threads(before);
}

// Whether the kernels run is the CPU's answer, not the build's: a portable build
// (-DDSGD_NATIVE=OFF, no -mavx2 at compile time) runs them on an AVX2 + FMA machine too, and
// everywhere else reports them unsupported (ResNet then picks oneDNN or im2col).
TEST(Conv3x3Blocked, AvailableExactlyWhereTheCpuHasAvx2AndFma) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  const bool cpu = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  const bool cpu = false;
#endif
  EXPECT_EQ(conv3x3_blocked_cpu_supported(), cpu);
  EXPECT_EQ(conv3x3_blocked_supported(kBlockedShapes[0]), cpu);
  if (!cpu) {
    EXPECT_THROW(BlockedConv3x3 conv(kBlockedShapes[0]), InputError);
  }
}

TEST(Conv3x3Blocked, RejectsOtherShapes) {
  const Conv2dShape bad[] = {
      {2, 16, 8, 8, 16, 3, 2, 1},  // stride 2
      {2, 3, 8, 8, 16, 3, 1, 1},   // c_in not a multiple of 8
      {2, 16, 8, 8, 12, 3, 1, 1},  // c_out not a multiple of 8
      {2, 16, 8, 8, 16, 1, 1, 0},  // 1x1
      {2, 16, 8, 8, 16, 3, 1, 0},  // no padding
      {2, 16, 8, 8, 16, 5, 1, 2},  // 5x5
  };
  for (const Conv2dShape& s : bad) {
    EXPECT_FALSE(conv3x3_blocked_supported(s)) << s.k << " " << s.stride << " " << s.pad << " " << s.c_in;
    EXPECT_THROW(BlockedConv3x3 conv(s), InputError);
  }
}

TEST(BatchNorm, FastMatchesNaive) {
  const BatchNormShape s{3, 50};
  const BatchNormOptions o;
  auto x = random_vector(s.c * s.m, 1), dy = random_vector(s.c * s.m, 2);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 3.0f * x[i] + 1.5f;  // non-zero mean, non-unit variance
  const std::vector<float> gamma = {1.0f, 0.5f, -2.0f}, beta = {0.0f, 0.3f, -1.0f};
  std::vector<float> y(x.size()), y_ref(x.size()), mean(3), invstd(3), mean_ref(3), invstd_ref(3);
  std::vector<float> rm(3, 0.2f), rv(3, 1.5f), rm_ref = rm, rv_ref = rv;
  batchnorm_forward_train(s, o, x.data(), gamma.data(), beta.data(), y.data(), mean.data(), invstd.data(), rm.data(),
                          rv.data());
  batchnorm_forward_train_naive(s, o, x.data(), gamma.data(), beta.data(), y_ref.data(), mean_ref.data(),
                                invstd_ref.data(), rm_ref.data(), rv_ref.data());
  ASSERT_TRUE(all_near_rel(y, y_ref, 1e-5, 1e-5));
  for (size_t c = 0; c < 3; ++c) {
    EXPECT_TRUE(near_rel(rm[c], rm_ref[c], 1e-6, 1e-6)) << c;
    EXPECT_TRUE(near_rel(rv[c], rv_ref[c], 1e-5, 1e-5)) << c;
    EXPECT_NE(rm[c], 0.2f);  // the running statistics moved
  }
  std::vector<float> dx(x.size()), dg(3), db(3), dx_ref(x.size()), dg_ref(3), db_ref(3);
  batchnorm_backward(s, x.data(), gamma.data(), mean.data(), invstd.data(), dy.data(), dx.data(), dg.data(), db.data());
  batchnorm_backward_naive(s, x.data(), gamma.data(), dy.data(), dx_ref.data(), dg_ref.data(), db_ref.data());
  ASSERT_TRUE(all_near_rel(dx, dx_ref, 1e-5, 1e-5));
  for (size_t c = 0; c < 3; ++c) {
    EXPECT_TRUE(near_rel(dg[c], dg_ref[c], 1e-4, 1e-4)) << c;
    EXPECT_TRUE(near_rel(db[c], db_ref[c], 1e-4, 1e-4)) << c;
  }
  // Evaluation mode uses the running statistics and leaves them alone.
  const std::vector<float> rm_before = rm, rv_before = rv;
  batchnorm_forward_eval(s, o, x.data(), gamma.data(), beta.data(), rm.data(), rv.data(), y.data());
  EXPECT_EQ(rm, rm_before);
  EXPECT_EQ(rv, rv_before);
  for (size_t c = 0; c < 3; ++c)
    EXPECT_TRUE(near_rel(y[c * s.m], gamma[c] * (x[c * s.m] - rm[c]) / std::sqrt(rv[c] + o.eps) + beta[c], 1e-5, 1e-5));
}

// The fused BN + ReLU (forward with relu, backward with relu_y) against the naive BN composed
// with the naive ReLU; M = 2500 values per channel (not a multiple of the 8 lanes, more than
// one 1024-value flush) with a large mean (shifted one-pass moments must not cancel).
TEST(BatchNorm, FusedReluAndLongChannelsMatchNaive) {
  const BatchNormShape s{4, 2500};
  const BatchNormOptions o;
  auto x = random_vector(s.c * s.m, 61), dy = random_vector(s.c * s.m, 62);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.5f * x[i] + (i < s.m ? 40.0f : 0.3f);
  const std::vector<float> gamma = {1.0f, 0.5f, -2.0f, 1.5f}, beta = {0.1f, 0.3f, -0.2f, 0.0f};
  std::vector<float> y(x.size()), y_ref(x.size()), mean(4), invstd(4), mean_ref(4), invstd_ref(4);
  std::vector<float> rm(4, 0.0f), rv(4, 1.0f), rm_ref = rm, rv_ref = rv;
  batchnorm_forward_train(s, o, x.data(), gamma.data(), beta.data(), y.data(), mean.data(), invstd.data(), rm.data(),
                          rv.data(), /*relu=*/true);
  batchnorm_forward_train_naive(s, o, x.data(), gamma.data(), beta.data(), y_ref.data(), mean_ref.data(),
                                invstd_ref.data(), rm_ref.data(), rv_ref.data());
  relu_forward_naive(y_ref.data(), y_ref.data(), y_ref.size());
  ASSERT_TRUE(all_near_rel(y, y_ref, 2e-5, 2e-5));
  for (size_t c = 0; c < 4; ++c) {
    EXPECT_NEAR(mean[c], mean_ref[c], 1e-5 * (1 + std::fabs(mean_ref[c])));
    EXPECT_NEAR(invstd[c], invstd_ref[c], 1e-4 * invstd_ref[c]);
    EXPECT_TRUE(near_rel(rv[c], rv_ref[c], 1e-5, 1e-5)) << c;
  }
  // Backward: fused mask vs relu_backward_naive then the naive BN backward.
  std::vector<float> dx(x.size()), dg(4), db(4), g(x.size()), dx_ref(x.size()), dg_ref(4), db_ref(4);
  batchnorm_backward(s, x.data(), gamma.data(), mean.data(), invstd.data(), dy.data(), dx.data(), dg.data(), db.data(),
                     y.data());
  relu_backward_naive(y_ref.data(), dy.data(), g.data(), g.size());
  batchnorm_backward_naive(s, x.data(), gamma.data(), g.data(), dx_ref.data(), dg_ref.data(), db_ref.data());
  ASSERT_TRUE(all_near_rel(dx, dx_ref, 2e-4, 2e-4));
  for (size_t c = 0; c < 4; ++c) {
    EXPECT_TRUE(near_rel(dg[c], dg_ref[c], 1e-3, 1e-3)) << c;
    EXPECT_TRUE(near_rel(db[c], db_ref[c], 1e-3, 1e-3)) << c;
  }
  // The mask recomputed from x and the forward's affine map (relu_affine) is the same mask:
  // bitwise the same gradients as with relu_y.
  std::vector<float> y2(x.size()), mean2(4), invstd2(4), affine(8), rm2(4, 0.0f), rv2(4, 1.0f);
  batchnorm_forward_train(s, o, x.data(), gamma.data(), beta.data(), y2.data(), mean2.data(), invstd2.data(),
                          rm2.data(), rv2.data(), /*relu=*/true, affine.data());
  EXPECT_EQ(y2, y);
  for (size_t c = 0; c < 4; ++c) EXPECT_NEAR(affine[c], gamma[c] * invstd[c], 1e-5 * std::fabs(affine[c]));
  std::vector<float> dx2(x.size()), dg2(4), db2(4);
  batchnorm_backward(s, x.data(), gamma.data(), mean.data(), invstd.data(), dy.data(), dx2.data(), dg2.data(),
                     db2.data(), nullptr, affine.data());
  EXPECT_EQ(dx2, dx);
  EXPECT_EQ(dg2, dg);
  EXPECT_EQ(db2, db);
  // Evaluation with relu is the affine map then ReLU.
  std::vector<float> ye(x.size()), ye_plain(x.size());
  batchnorm_forward_eval(s, o, x.data(), gamma.data(), beta.data(), rm.data(), rv.data(), ye.data(), true);
  batchnorm_forward_eval(s, o, x.data(), gamma.data(), beta.data(), rm.data(), rv.data(), ye_plain.data());
  for (size_t i = 0; i < ye.size(); ++i) ASSERT_EQ(ye[i], std::max(ye_plain[i], 0.0f)) << i;
}

TEST(BatchNorm, GradientsMatchFiniteDifferences) {
  const BatchNormShape s{2, 6};
  const BatchNormOptions o;
  auto x = random_vector(s.c * s.m, 31), gamma = std::vector<float>{1.3f, -0.7f}, beta = std::vector<float>{0.1f, 0.4f};
  const auto r = projection_weights(x.size(), 32);
  std::vector<float> y(x.size()), mean(2), invstd(2);
  auto f = [&] {
    batchnorm_forward_train(s, o, x.data(), gamma.data(), beta.data(), y.data(), mean.data(), invstd.data(), nullptr,
                            nullptr);
    return dot(y, r);
  };
  f();
  std::vector<float> dx(x.size()), dg(2), db(2);
  batchnorm_backward(s, x.data(), gamma.data(), mean.data(), invstd.data(), r.data(), dx.data(), dg.data(), db.data());
  expect_gradient_matches(f, x, dx, "bn dx");
  expect_gradient_matches(f, gamma, dg, "bn dgamma");
  expect_gradient_matches(f, beta, db, "bn dbeta");
}

TEST(Relu, MatchesNaiveAndFiniteDifferences) {
  auto x = random_vector(40, 41), dy = random_vector(40, 42);
  std::vector<float> y(40), y_ref(40), dx(40), dx_ref(40);
  relu_forward(x.data(), y.data(), 40);
  relu_forward_naive(x.data(), y_ref.data(), 40);
  EXPECT_EQ(y, y_ref);
  relu_backward(y.data(), dy.data(), dx.data(), 40);
  relu_backward_naive(y_ref.data(), dy.data(), dx_ref.data(), 40);
  EXPECT_EQ(dx, dx_ref);
  // Keep inputs away from the kink at 0 so the finite difference (h = 1e-2) is valid.
  for (auto& v : x)
    if (std::fabs(v) < 0.05f) v = 0.5f;
  auto f = [&] {
    relu_forward(x.data(), y.data(), 40);
    return dot(y, dy);
  };
  f();
  relu_backward(y.data(), dy.data(), dx.data(), 40);
  expect_gradient_matches(f, x, dx, "relu dx");
  std::vector<float> a = random_vector(40, 43), b = random_vector(40, 44), s(40);
  add_relu_forward(a.data(), b.data(), s.data(), 40);
  for (size_t i = 0; i < 40; ++i) EXPECT_EQ(s[i], std::max(a[i] + b[i], 0.0f));
}

// The residual join's fused backward against relu_backward_naive then plain writes / adds, for
// every combination of "branch gradient already written".
TEST(Relu, AddReluBackwardMatchesNaive) {
  const size_t n = 1003;
  const auto y = random_vector(n, 51), dy = random_vector(n, 52), a0 = random_vector(n, 53), b0 = random_vector(n, 54);
  std::vector<float> g(n);
  relu_backward_naive(y.data(), dy.data(), g.data(), n);
  for (bool add_a : {false, true})
    for (bool add_b : {false, true}) {
      std::vector<float> a = a0, b = b0;
      add_relu_backward(y.data(), dy.data(), a.data(), add_a, b.data(), add_b, n);
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(a[i], add_a ? a0[i] + g[i] : g[i]) << i;
        ASSERT_EQ(b[i], add_b ? b0[i] + g[i] : g[i]) << i;
      }
    }
}

// BatchNorm (split by channel) and the join (split by element ranges) give bitwise the same
// results on 1, 2 and 3 threads.
TEST(BatchNorm, DoesNotDependOnThreadCount) {
  const BatchNormShape s{6, 9000};
  const BatchNormOptions o;
  ASSERT_GE(s.c * s.m, kParallelMinFloats);
  const auto x = random_vector(s.c * s.m, 81), dy = random_vector(s.c * s.m, 82);
  const std::vector<float> gamma = {1.0f, 0.5f, -2.0f, 1.5f, 0.7f, 1.1f}, beta = {0.1f, 0.3f, -0.2f, 0.0f, 0.2f, -0.1f};
  std::vector<float> ref;
  const int before = openblas_get_num_threads();
  for (int t : {1, 2, 3}) {
    openblas_set_num_threads(t);
    std::vector<float> y(x.size()), mean(6), invstd(6), affine(12), rm(6, 0.0f), rv(6, 1.0f), dx(x.size()), dg(6),
        db(6), a(x.size(), 1.0f), b(x.size());
    batchnorm_forward_train(s, o, x.data(), gamma.data(), beta.data(), y.data(), mean.data(), invstd.data(), rm.data(),
                            rv.data(), true, affine.data());
    batchnorm_backward(s, x.data(), gamma.data(), mean.data(), invstd.data(), dy.data(), dx.data(), dg.data(),
                       db.data(), nullptr, affine.data());
    add_relu_backward(y.data(), dy.data(), a.data(), true, b.data(), false, y.size());
    std::vector<float> all = y;
    for (const auto* v : {&mean, &invstd, &rm, &rv, &dx, &dg, &db, &a, &b}) all.insert(all.end(), v->begin(), v->end());
    if (t == 1)
      ref = all;
    else
      EXPECT_EQ(all, ref) << t << " threads";
  }
  openblas_set_num_threads(before);
}

TEST(GlobalAvgPool, MatchesNaiveAndFiniteDifferences) {
  const PoolShape s{3, 2, 5};
  auto x = random_vector(s.c * s.n * s.hw, 51);
  std::vector<float> y(s.n * s.c), y_ref(s.n * s.c);
  global_avg_pool_forward(s, x.data(), y.data());
  global_avg_pool_forward_naive(s, x.data(), y_ref.data());
  ASSERT_TRUE(all_near_rel(y, y_ref, 1e-6, 1e-6));
  const auto r = projection_weights(y.size(), 52);
  auto f = [&] {
    global_avg_pool_forward(s, x.data(), y.data());
    return dot(y, r);
  };
  std::vector<float> dx(x.size());
  global_avg_pool_backward(s, r.data(), dx.data());
  expect_gradient_matches(f, x, dx, "pool dx");
}

}  // namespace
}  // namespace dsgd
