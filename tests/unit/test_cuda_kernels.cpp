// The CUDA kernels and library wrappers (workloads/cuda/, algorithms/cuda/) against the CPU
// implementations and their naive double references on the same inputs, and gradients against
// central finite differences of the GPU forward (grad_check.hpp's default tolerances).
// Every test that needs a device starts with DSGD_REQUIRE_GPU() and skips with one line when
// none is usable; the CudaCheck tests run everywhere (they check the error path that a machine
// without a driver takes). Tolerances, all relative to the magnitude compared:
//   fp32 elementwise / row kernels vs the double naive: |got − ref| ≤ 1e-5·(1 + |ref|), as
//     test_attention_layers.cpp (float rounding over ≤ 64 dependent operations on O(1)
//     values, plus __expf/tanhf's ≤ 2 ulp); an index error moves outputs by ≥ 1e-2.
//   fp32 GEMMs: float_sum_tolerance(k, Σ|t|) (float_compare.hpp), Σ|t| from the naive
//     product of |A| and |B|.
//   tf32 GEMMs: each input rounded to 10 mantissa bits (relative ≤ 2^-11), so each product is
//     off by ≤ 2^-10 of its size: |err| ≤ 2^-10·Σ|t| + the fp32 tolerance (a deterministic
//     bound). bf16 operands (8 bits, ≤ 2^-9 each): ≤ 2^-8·Σ|t| + the fp32 tolerance.
//   optimizers on the device vs on the host: the same float operations (CudaVectorOps); nvcc
//     contracts a·b + c into FMAs, the host build does not: rtol 1e-6 over 5 steps, atol 1e-7.
//   cuDNN convolution vs the naive direct loop: 8 × float_sum_tolerance. cuDNN's heuristics
//     may pick Winograd or FFT algorithms, whose transforms round intermediate values that a
//     plain sum does not have; the factor 8 is a margin for that, chosen, not derived (it has
//     not yet run on a GPU: docs/gpu.md). A missing or misindexed term still exceeds it.
//   cuDNN batch norm vs the double naive: 1e-5·(1 + |ref|), as the row kernels.
#include <cblas.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "algorithms/optimizer.hpp"
#include "core/cuda/cuda_check.hpp"
#include "core/cuda/vector_ops_cuda.hpp"
#include "core/errors.hpp"
#include "float_compare.hpp"
#include "gpu_test.hpp"
#include "grad_check.hpp"
#include "workloads/cuda/attention.hpp"
#include "workloads/cuda/cudnn_conv.hpp"
#include "workloads/cuda/elementwise.hpp"
#include "workloads/cuda/embedding.hpp"
#include "workloads/cuda/gemm.hpp"
#include "workloads/cuda/layernorm.hpp"
#include "workloads/cuda/linear.hpp"
#include "workloads/cuda/softmax.hpp"
#include "workloads/cuda/svm_hinge.hpp"
#include "workloads/cuda/transformer_cuda.hpp"
#include "workloads/layers/attention.hpp"
#include "workloads/layers/batchnorm.hpp"
#include "workloads/layers/conv2d.hpp"
#include "workloads/layers/embedding.hpp"
#include "workloads/layers/gelu.hpp"
#include "workloads/layers/layernorm.hpp"
#include "workloads/layers/linear.hpp"
#include "workloads/layers/softmax_cross_entropy.hpp"
#include "workloads/svm_kernels.hpp"
#include "workloads/transformer.hpp"

namespace dsgd {
namespace {

using testing::dot;
using testing::expect_gradient_matches;
using testing::projection_weights;
using testing::to_device;

std::vector<float> random_vector(size_t n, unsigned seed, float amplitude = 1.0f) {
  auto v = projection_weights(n, seed);
  for (auto& x : v) x *= 2.0f * amplitude;
  return v;
}

void expect_near_all(const std::vector<float>& a, const std::vector<float>& b, double tol, const char* what) {
  EXPECT_TRUE(testing::all_near_rel(a, b, tol, tol)) << what;
}

// ---- the checked wrappers (no device needed) ------------------------------------------------

TEST(CudaCheck, ErrorNamesLibraryCodeCallAndPlace) {
  try {
    DSGD_CUDA_CHECK(cudaErrorInvalidValue);
    FAIL() << "no throw";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("CUDA error"), std::string::npos) << m;
    EXPECT_NE(m.find("cudaErrorInvalidValue"), std::string::npos) << m;
    EXPECT_NE(m.find("test_cuda_kernels.cpp"), std::string::npos) << m;
    EXPECT_NE(m.find("on host"), std::string::npos) << m;
    EXPECT_FALSE(e.hint().empty());
  }
  EXPECT_THROW(DSGD_CUDA_CHECK(CUBLAS_STATUS_NOT_INITIALIZED), Error);
  EXPECT_THROW(DSGD_CUDA_CHECK(CUDNN_STATUS_BAD_PARAM), Error);
  EXPECT_THROW(DSGD_CUDA_CHECK(ncclInvalidArgument), Error);
  EXPECT_NO_THROW(DSGD_CUDA_CHECK(cudaSuccess));
  EXPECT_NO_THROW(DSGD_CUDA_CHECK(ncclSuccess));
}

// Without a device, the first real call fails through the wrapper with the driver hint, not a crash.
TEST(CudaCheck, NoDeviceIsAClearErrorNotACrash) {
  if (testing::gpu_for_tests().available) GTEST_SKIP() << "a GPU is present: this checks the no-device path";
  try {
    CudaBuffer<float> b(16);
    FAIL() << "cudaMalloc succeeded without a device";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cudaMalloc"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("driver"), std::string::npos) << e.hint();
  }
}

// ---- GEMMs ------------------------------------------------------------------------------------

// Row-major naive C = op(A)·op(B) in double, and Σ|t| from |A|, |B|.
void gemm_naive(const GemmShape& s, const std::vector<float>& a, const std::vector<float>& b, std::vector<float>& c,
                std::vector<float>& abs_sum) {
  c.assign(size_t(s.m) * s.ldc, 0.0f);
  abs_sum.assign(c.size(), 0.0f);
  for (int i = 0; i < s.m; ++i)
    for (int j = 0; j < s.n; ++j) {
      double acc = 0, abs = 0;
      for (int k = 0; k < s.k; ++k) {
        const double x = s.trans_a ? a[size_t(k) * s.lda + i] : a[size_t(i) * s.lda + k];
        const double y = s.trans_b ? b[size_t(j) * s.ldb + k] : b[size_t(k) * s.ldb + j];
        acc += x * y;
        abs += std::fabs(x * y);
      }
      c[size_t(i) * s.ldc + j] = float(acc);
      abs_sum[size_t(i) * s.ldc + j] = float(abs);
    }
}

TEST(CudaGemm, AllTransposesMatchNaiveAtEachPrecision) {
  DSGD_REQUIRE_GPU();
  for (GemmPrecision p : {GemmPrecision::fp32, GemmPrecision::tf32, GemmPrecision::bf16}) {
    GpuContext g(0, p);
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        const int m = 37, n = 29, k = 53;
        const GemmShape s{ta, tb, m, n, k, ta ? m : k, tb ? k : n, n};
        const auto a = random_vector(size_t(k) * m, 1), b = random_vector(size_t(k) * n, 2);
        std::vector<float> ref, abs_sum;
        gemm_naive(s, a, b, ref, abs_sum);
        auto da = to_device(a), db = to_device(b);
        CudaBuffer<float> dc(ref.size());
        if (p == GemmPrecision::bf16) {
          CudaBuffer<__nv_bfloat16> a16(a.size()), b16(b.size());
          float_to_bf16_cuda(da.data(), a16.data(), a.size(), g.stream());
          float_to_bf16_cuda(db.data(), b16.data(), b.size(), g.stream());
          gemm_bf16(g, s, 1.0f, a16.data(), b16.data(), 0.0f, dc.data());
        } else {
          gemm(g, s, 1.0f, da.data(), db.data(), 0.0f, dc.data());
        }
        g.synchronize();
        const auto got = dc.download();
        const double rel = p == GemmPrecision::fp32 ? 0.0 : p == GemmPrecision::tf32 ? 0x1p-10 : 0x1p-8;
        EXPECT_TRUE(testing::detail::all_within(
            got, ref, [&](size_t i) { return rel * abs_sum[i] + testing::float_sum_tolerance(size_t(k), abs_sum[i]); }))
            << gemm_precision_name(p) << " ta=" << ta << " tb=" << tb;
      }
  }
}

TEST(CudaGemm, StridedBatchedIsOneGemmPerBatch) {
  DSGD_REQUIRE_GPU();
  GpuContext g;
  const int m = 9, n = 7, k = 11, batch = 3;
  const GemmShape s{false, true, m, n, k, k, k, n};
  const auto a = random_vector(size_t(m) * k * batch, 3), b = random_vector(size_t(n) * k * batch, 4);
  auto da = to_device(a), db = to_device(b);
  CudaBuffer<float> dc(size_t(m) * n * batch);
  gemm_strided_batched(g, s, 0.5f, da.data(), int64_t(m) * k, db.data(), int64_t(n) * k, 0.0f, dc.data(),
                       int64_t(m) * n, batch);
  g.synchronize();
  const auto got = dc.download();
  for (int i = 0; i < batch; ++i) {
    std::vector<float> ai(a.begin() + i * m * k, a.begin() + (i + 1) * m * k),
        bi(b.begin() + i * n * k, b.begin() + (i + 1) * n * k), ref, abs_sum;
    gemm_naive(s, ai, bi, ref, abs_sum);
    for (auto& v : ref) v *= 0.5f;
    for (auto& v : abs_sum) v *= 0.5f;
    std::vector<float> gi(got.begin() + i * m * n, got.begin() + (i + 1) * m * n);
    EXPECT_TRUE(testing::float_sums_close(gi, ref, abs_sum, size_t(k))) << "batch " << i;
  }
}

TEST(CudaGemm, PeakMeasurementIsPositive) {
  DSGD_REQUIRE_GPU();
  GpuContext g;
  EXPECT_GT(gemm_peak_flops_measure(g, GemmPrecision::fp32, 512, 3), 1e9);
  EXPECT_EQ(g.precision(), GemmPrecision::fp32);  // restored
}

// ---- linear ----------------------------------------------------------------------------------

TEST(CudaLinear, MatchesCpuForwardAndBackward) {
  DSGD_REQUIRE_GPU();
  GpuContext g;
  const LinearShape s{13, 17, 11};
  const auto x = random_vector(s.n * s.in, 5), w = random_vector(s.out * s.in, 6), b = random_vector(s.out, 7);
  const auto dy = random_vector(s.n * s.out, 8);
  std::vector<float> y(s.n * s.out), dx(s.n * s.in), dw(s.out * s.in), db(s.out);
  linear_forward_naive(s, x.data(), w.data(), b.data(), y.data());
  linear_backward_naive(s, x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data());
  auto gx = to_device(x), gw = to_device(w), gb = to_device(b), gdy = to_device(dy);
  CudaBuffer<float> gy(y.size()), gdx(dx.size()), gdw(dw.size()), gdb(db.size());
  linear_forward_cuda(g, s, gx.data(), gw.data(), gb.data(), gy.data());
  linear_backward_cuda(g, s, gx.data(), gw.data(), gdy.data(), gdx.data(), gdw.data(), gdb.data());
  g.synchronize();
  expect_near_all(gy.download(), y, 1e-5, "y");
  expect_near_all(gdx.download(), dx, 1e-5, "dx");
  expect_near_all(gdw.download(), dw, 1e-5, "dW");
  expect_near_all(gdb.download(), db, 1e-5, "db");
  // accumulate adds to dW and db.
  linear_backward_cuda(g, s, gx.data(), gw.data(), gdy.data(), nullptr, gdw.data(), gdb.data(), true);
  g.synchronize();
  for (auto& v : dw) v *= 2;
  for (auto& v : db) v *= 2;
  expect_near_all(gdw.download(), dw, 1e-5, "dW accumulated");
  expect_near_all(gdb.download(), db, 1e-5, "db accumulated");
}

// ---- elementwise and row kernels --------------------------------------------------------------

TEST(CudaGelu, MatchesNaiveAndFiniteDifferences) {
  DSGD_REQUIRE_GPU();
  GpuContext g;
  auto x = random_vector(97, 1, 4.0f);
  const auto dy = random_vector(x.size(), 2);
  std::vector<float> y_ref(x.size()), dx_ref(x.size());
  gelu_forward_naive(x.data(), y_ref.data(), x.size());
  gelu_backward_naive(x.data(), dy.data(), dx_ref.data(), x.size());
  auto gx = to_device(x), gdy = to_device(dy);
  CudaBuffer<float> gy(x.size()), gdx(x.size());
  gelu_forward_cuda(gx.data(), gy.data(), x.size(), g.stream());
  gelu_backward_cuda(gx.data(), gdy.data(), gdx.data(), x.size(), g.stream());
  g.synchronize();
  expect_near_all(gy.download(), y_ref, 1e-5, "y");
  const auto dx = gdx.download();
  expect_near_all(dx, dx_ref, 1e-5, "dx");
  // In place (dx aliases dy).
  gelu_backward_cuda(gx.data(), gdy.data(), gdy.data(), x.size(), g.stream());
  g.synchronize();
  expect_near_all(gdy.download(), dx, 0.0, "in place");
  const auto r = projection_weights(x.size(), 3);
  auto gr = to_device(r);
  gelu_backward_cuda(gx.data(), gr.data(), gdx.data(), x.size(), g.stream());
  g.synchronize();
  auto f = [&] {
    gx.upload(x);
    gelu_forward_cuda(gx.data(), gy.data(), x.size(), g.stream());
    g.synchronize();
    return dot(gy.download(), r);
  };
  expect_gradient_matches(f, x, gdx.download(), "dx");
}

TEST(CudaLayerNorm, MatchesNaiveAndFiniteDifferences) {
  DSGD_REQUIRE_GPU();
  GpuContext g;
  const LayerNormShape s{5, 77};  // d > 32: lanes stride over the row
  auto x = random_vector(s.n * s.d, 3, 2.0f);
  for (size_t k = 0; k < s.d; ++k) x[k] += 3.0f;
  auto gamma = random_vector(s.d, 4), beta = random_vector(s.d, 5);
  for (auto& v : gamma) v += 1.0f;
  const auto r = projection_weights(s.n * s.d, 6);
  std::vector<float> y_ref(x.size()), mean_ref(s.n), rstd_ref(s.n);
  layernorm_forward_naive(s, x.data(), gamma.data(), beta.data(), y_ref.data(), mean_ref.data(), rstd_ref.data());
  auto gx = to_device(x), gg = to_device(gamma), gb = to_device(beta), gr = to_device(r);
  CudaBuffer<float> gy(x.size()), gmean(s.n), grstd(s.n), gdx(x.size()), gdg(s.d), gdb(s.d);
  layernorm_forward_cuda(s, gx.data(), gg.data(), gb.data(), gy.data(), gmean.data(), grstd.data(), g.stream());
  g.synchronize();
  expect_near_all(gy.download(), y_ref, 1e-5, "y");
  expect_near_all(gmean.download(), mean_ref, 1e-5, "mean");
  expect_near_all(grstd.download(), rstd_ref, 1e-5, "rstd");
  for (bool accumulate : {false, true}) {
    std::vector<float> dx_ref(x.size(), 0.5f), dg_ref(s.d), db_ref(s.d);
    layernorm_backward_naive(s, x.data(), gamma.data(), r.data(), dx_ref.data(), dg_ref.data(), db_ref.data(),
                             accumulate);
    gdx.upload(std::vector<float>(x.size(), 0.5f));
    layernorm_backward_cuda(s, gx.data(), gg.data(), gmean.data(), grstd.data(), gr.data(), gdx.data(), gdg.data(),
                            gdb.data(), accumulate, g.stream());
    g.synchronize();
    expect_near_all(gdx.download(), dx_ref, 1e-5, "dx");
    expect_near_all(gdg.download(), dg_ref, 1e-5, "dgamma");
    expect_near_all(gdb.download(), db_ref, 1e-5, "dbeta");
  }
  layernorm_backward_cuda(s, gx.data(), gg.data(), gmean.data(), grstd.data(), gr.data(), gdx.data(), gdg.data(),
                          gdb.data(), false, g.stream());
  g.synchronize();
  const auto dx = gdx.download(), dg = gdg.download(), db = gdb.download();
  auto f = [&] {
    gx.upload(x);
    gg.upload(gamma);
    gb.upload(beta);
    layernorm_forward_cuda(s, gx.data(), gg.data(), gb.data(), gy.data(), gmean.data(), grstd.data(), g.stream());
    g.synchronize();
    return dot(gy.download(), r);
  };
  expect_gradient_matches(f, x, dx, "dx");
  expect_gradient_matches(f, gamma, dg, "dgamma");
  expect_gradient_matches(f, beta, db, "dbeta");
}

TEST(CudaSoftmaxCrossEntropy, MatchesNaiveAndFiniteDifferences) {
  DSGD_REQUIRE_GPU();
  GpuContext g;
  const size_t n = 7, c = 45;  // c > 32: lanes stride over the classes
  auto logits = random_vector(n * c, 9, 3.0f);
  logits[5] = 40.0f;  // a large logit: the max subtraction keeps exp finite
  std::vector<int32_t> targets(n);
  for (size_t i = 0; i < n; ++i) targets[i] = int32_t((i * 13) % c);
  targets[0] = 5;  // row 0's arg-max is its target
  const double loss_ref = softmax_cross_entropy_forward_naive(logits.data(), targets.data(), n, c);
  double correct_ref = 0;
  softmax_cross_entropy_forward(logits.data(), targets.data(), n, c, &correct_ref);
  std::vector<float> d_ref(n * c);
  softmax_cross_entropy_backward_naive(logits.data(), targets.data(), n, c, 1.0f / n, d_ref.data());
  auto gl = to_device(logits);
  auto gt = to_device(targets);
  CudaBuffer<float> row_loss(n), row_hit(n), gd(n * c);
  CudaBuffer<double> sums(2);
  double correct = -1;
  const double loss = softmax_cross_entropy_forward_cuda(gl.data(), gt.data(), n, c, row_loss.data(), row_hit.data(),
                                                         sums.data(), g.stream(), &correct);
  EXPECT_TRUE(testing::near_rel(loss, loss_ref, 1e-5, 1e-6));
  EXPECT_EQ(correct, correct_ref);
  EXPECT_GE(correct, 1.0);
  softmax_cross_entropy_backward_cuda(gl.data(), gt.data(), n, c, 1.0f / n, gd.data(), g.stream());
  g.synchronize();
  const auto d = gd.download();
  expect_near_all(d, d_ref, 1e-5, "dlogits");
  // In place (dlogits aliases logits), as the workloads call it.
  softmax_cross_entropy_backward_cuda(gl.data(), gt.data(), n, c, 1.0f / n, gl.data(), g.stream());
  g.synchronize();
  expect_near_all(gl.download(), d, 0.0, "in place");
  logits[5] = 0.3f;  // finite differences on moderate logits
  auto f = [&] {
    gl.upload(logits);
    return softmax_cross_entropy_forward_cuda(gl.data(), gt.data(), n, c, row_loss.data(), row_hit.data(), sums.data(),
                                              g.stream());
  };
  gl.upload(logits);
  softmax_cross_entropy_backward_cuda(gl.data(), gt.data(), n, c, 1.0f / n, gd.data(), g.stream());
  g.synchronize();
  expect_gradient_matches(f, logits, gd.download(), "dlogits");
}

// Attention on the device: the causal softmax kernels and the strided-batched products inside.
TEST(CudaAttention, MatchesNaiveAndIsCausal) {
  DSGD_REQUIRE_GPU();
  GpuContext g;
  const AttentionShape s{2, 37, 16, 2};  // seq > 32: the softmax lanes stride over the row
  const size_t N = s.batch * s.seq, D = s.d, P = s.batch * s.heads * s.seq * s.seq;
  const auto x = random_vector(N * D, 11), w_qkv = random_vector(3 * D * D, 12, 0.5f),
             b_qkv = random_vector(3 * D, 13, 0.2f), w_out = random_vector(D * D, 14, 0.5f),
             b_out = random_vector(D, 15, 0.2f);
  const AttentionParams hp{w_qkv.data(), b_qkv.data(), w_out.data(), b_out.data()};
  std::vector<float> y_ref(N * D);
  attention_forward_naive(s, hp, x.data(), y_ref.data());
  auto gx = to_device(x), gwq = to_device(w_qkv), gbq = to_device(b_qkv), gwo = to_device(w_out),
       gbo = to_device(b_out);
  CudaBuffer<float> qkv(N * 3 * D), probs(P), ctx(N * D), dctx(N * D), dqkv(N * 3 * D), dprobs(P), gy(N * D),
      gdx(N * D), ggq(w_qkv.size()), ggbq(b_qkv.size()), ggo(w_out.size()), ggbo(b_out.size());
  const AttentionParams dp{gwq.data(), gbq.data(), gwo.data(), gbo.data()};
  const AttentionCache cache{qkv.data(), probs.data(), ctx.data()};
  attention_forward_cuda(g, s, dp, gx.data(), cache, gy.data());
  g.synchronize();
  expect_near_all(gy.download(), y_ref, 1e-5, "y");
  const auto p = probs.download();
  for (size_t row = 0; row < s.batch * s.heads * s.seq; ++row) {
    const size_t t = row % s.seq;
    double sum = 0;
    for (size_t j = 0; j < s.seq; ++j) {
      sum += p[row * s.seq + j];
      if (j > t) {
        EXPECT_EQ(p[row * s.seq + j], 0.0f);
      }
    }
    EXPECT_NEAR(sum, 1.0, 1e-6);
  }
  const auto dy = projection_weights(N * D, 16);
  auto gdy = to_device(dy);
  attention_backward_cuda(g, s, dp, gx.data(), cache, gdy.data(), {dctx.data(), dqkv.data(), dprobs.data()}, gdx.data(),
                          {ggq.data(), ggbq.data(), ggo.data(), ggbo.data()});
  g.synchronize();
  std::vector<float> dx_r(N * D), gq_r(w_qkv.size()), gbq_r(b_qkv.size()), go_r(w_out.size()), gbo_r(b_out.size());
  attention_backward_naive(s, hp, x.data(), dy.data(), dx_r.data(),
                           {gq_r.data(), gbq_r.data(), go_r.data(), gbo_r.data()});
  expect_near_all(gdx.download(), dx_r, 1e-5, "dx");
  expect_near_all(ggq.download(), gq_r, 1e-5, "dW_qkv");
  expect_near_all(ggbq.download(), gbq_r, 1e-5, "db_qkv");
  expect_near_all(ggo.download(), go_r, 1e-5, "dW_out");
  expect_near_all(ggbo.download(), gbo_r, 1e-5, "db_out");
}

// ---- SVM hinge ---------------------------------------------------------------------------------

TEST(CudaSvmHinge, MatchesCpuLossGradientAndActiveCount) {
  DSGD_REQUIRE_GPU();
  GpuContext g;
  for (size_t C : {size_t(1), size_t(10)}) {
    const size_t B = 33;
    const auto s = random_vector(B * C, 21, 2.0f);
    std::vector<int32_t> labels(B);
    for (size_t i = 0; i < B; ++i) labels[i] = int32_t(C == 1 ? i % 2 : (i * 7) % C);
    const float scale = 1.0f / B;
    std::vector<float> ds_ref(B * C);
    const double loss_ref = svm_hinge_loss_sum(s.data(), labels.data(), B, C);
    const size_t active_ref = svm_hinge_grad(s.data(), labels.data(), B, C, scale, ds_ref.data());
    auto gs = to_device(s);
    auto gl = to_device(labels);
    CudaBuffer<float> gds(B * C), loss(B * C), active(B * C);
    CudaBuffer<double> sums(2);
    svm_hinge_grad_cuda(gs.data(), gl.data(), B, C, scale, gds.data(), loss.data(), active.data(), sums.data(),
                        g.stream());
    g.synchronize();
    const auto h = sums.download();
    EXPECT_TRUE(testing::near_rel(h[0], loss_ref, 1e-6, 1e-6)) << "C=" << C;
    EXPECT_EQ(size_t(h[1]), active_ref) << "C=" << C;
    expect_near_all(gds.download(), ds_ref, 0.0, "ds");  // exact: ±scale or 0
  }
}

// ---- optimizers ---------------------------------------------------------------------------------

// The optimizers (algorithms/optimizer.hpp) with their parameters and state on the GPU (their
// updates: CudaVectorOps) against the same optimizers on the host, five steps.
TEST(CudaOptimizer, SgdAndAdamWOnTheDeviceMatchTheHostOverSeveralSteps) {
  DSGD_REQUIRE_GPU();
  CudaVectorOps& ops = vector_ops_cuda();
  const Device cuda = ops.device();
  const size_t n = 1000;
  const auto x0 = random_vector(n, 31);
  std::vector<std::vector<float>> grads;
  for (unsigned t = 0; t < 5; ++t) grads.push_back(random_vector(n, 40 + t));
  std::vector<CudaBuffer<float>> dgrads;
  for (const auto& gr : grads) dgrads.push_back(to_device(gr));
  auto run = [&](Optimizer& host, Optimizer& dev, const char* what) {
    auto x = x0;
    auto gx = to_device(x0);
    for (size_t t = 0; t < grads.size(); ++t) {
      host.step(x.data(), grads[t].data(), 0.05);
      dev.step(gx.data(), dgrads[t].data(), 0.05);
    }
    ops.synchronize();
    EXPECT_TRUE(testing::all_near_rel(gx.download(), x, 1e-6, 1e-7)) << what;
  };
  for (const SgdOptions o :
       {SgdOptions{0.1, 0.0, 1e-3, false}, SgdOptions{0.1, 0.9, 1e-3, false}, SgdOptions{0.1, 0.9, 1e-3, true}}) {
    SgdOptimizer host(o, n), dev(o, n, cuda);
    run(host, dev, o.nesterov ? "sgd nesterov" : o.momentum != 0 ? "sgd momentum" : "sgd");
  }
  const AdamWOptions o{1e-2, 0.9, 0.999, 1e-8, 0.01};
  AdamWOptimizer host(o, n), dev(o, n, cuda);
  run(host, dev, "adamw");
}

// ---- cuDNN: convolution and batch norm --------------------------------------------------------

// CNHW (the CPU layers' layout) <-> NCHW (cuDNN's).
std::vector<float> cnhw_to_nchw(const std::vector<float>& v, size_t c, size_t n, size_t hw) {
  std::vector<float> out(v.size());
  for (size_t ci = 0; ci < c; ++ci)
    for (size_t ni = 0; ni < n; ++ni) std::memcpy(&out[(ni * c + ci) * hw], &v[(ci * n + ni) * hw], hw * sizeof(float));
  return out;
}

TEST(CudnnConv2d, MatchesNaiveForwardAndBothGradients) {
  DSGD_REQUIRE_GPU();
  GpuContext g;
  for (const Conv2dShape s : {Conv2dShape{2, 3, 9, 9, 8, 3, 1, 1}, Conv2dShape{3, 8, 8, 8, 16, 3, 2, 1},
                              Conv2dShape{2, 8, 8, 8, 16, 1, 2, 0}}) {
    const size_t hw = s.h * s.w, hwo = s.h_out() * s.w_out();
    const auto x = random_vector(s.c_in * s.n * hw, 51), w = random_vector(s.weight_count(), 52);
    const auto dy = random_vector(s.c_out * s.n * hwo, 53);
    std::vector<float> y(s.c_out * s.n * hwo), dx(x.size()), dw(w.size());
    conv2d_forward_naive(s, x.data(), w.data(), y.data());
    conv2d_backward_naive(s, x.data(), w.data(), dy.data(), dx.data(), dw.data());
    // Σ|t| per output from the naive pass on absolute values.
    std::vector<float> ya(y.size()), dxa(dx.size()), dwa(dw.size());
    const auto xa = testing::abs_of(x), wa = testing::abs_of(w), dya = testing::abs_of(dy);
    conv2d_forward_naive(s, xa.data(), wa.data(), ya.data());
    conv2d_backward_naive(s, xa.data(), wa.data(), dya.data(), dxa.data(), dwa.data());
    CudnnConv2d conv(g, s);
    auto gx = to_device(cnhw_to_nchw(x, s.c_in, s.n, hw)), gw = to_device(w),
         gdy = to_device(cnhw_to_nchw(dy, s.c_out, s.n, hwo));
    CudaBuffer<float> gy(y.size()), gdx(x.size()), gdw(w.size());
    conv.forward(gx.data(), gw.data(), gy.data());
    conv.backward_input(gw.data(), gdy.data(), gdx.data(), false);
    conv.backward_weights(gx.data(), gdy.data(), gdw.data());
    g.synchronize();
    const size_t kf = s.patch(), kx = s.c_out * s.k * s.k, kw = s.cols();
    auto tol = [](size_t k, const std::vector<float>& abs) {
      return [k, &abs](size_t i) { return 8 * testing::float_sum_tolerance(k, abs[i]); };
    };
    const auto ya_n = cnhw_to_nchw(ya, s.c_out, s.n, hwo);
    EXPECT_TRUE(testing::detail::all_within(gy.download(), cnhw_to_nchw(y, s.c_out, s.n, hwo), tol(kf, ya_n))) << "y";
    const auto dxa_n = cnhw_to_nchw(dxa, s.c_in, s.n, hw);
    EXPECT_TRUE(testing::detail::all_within(gdx.download(), cnhw_to_nchw(dx, s.c_in, s.n, hw), tol(kx, dxa_n))) << "dx";
    EXPECT_TRUE(testing::detail::all_within(gdw.download(), dw, tol(kw, dwa))) << "dw";
  }
}

TEST(CudnnBatchNorm, MatchesNaiveTrainingForwardAndBackward) {
  DSGD_REQUIRE_GPU();
  GpuContext g;
  const size_t n = 4, c = 5, h = 3, w = 3, hw = h * w;
  const BatchNormShape s{c, n * hw};
  auto x = random_vector(c * n * hw, 61, 2.0f);
  auto gamma = random_vector(c, 62), beta = random_vector(c, 63);
  for (auto& v : gamma) v += 1.0f;
  const auto dy = random_vector(x.size(), 64);
  std::vector<float> y(x.size()), mean(c), invstd(c), rm(c, 0.0f), rv(c, 1.0f), dx(x.size()), dg(c), db(c);
  batchnorm_forward_train_naive(s, BatchNormOptions{}, x.data(), gamma.data(), beta.data(), y.data(), mean.data(),
                                invstd.data(), rm.data(), rv.data());
  batchnorm_backward_naive(s, x.data(), gamma.data(), dy.data(), dx.data(), dg.data(), db.data());
  CudnnBatchNorm bn(g, n, c, h, w);
  auto gx = to_device(cnhw_to_nchw(x, c, n, hw)), gg = to_device(gamma), gb = to_device(beta),
       gdy = to_device(cnhw_to_nchw(dy, c, n, hw)), grm = to_device(std::vector<float>(c, 0.0f)),
       grv = to_device(std::vector<float>(c, 1.0f));
  CudaBuffer<float> gy(x.size()), gmean(c), ginv(c), gdx(x.size()), gdg(c), gdb(c);
  bn.forward_train(gx.data(), gg.data(), gb.data(), gy.data(), gmean.data(), ginv.data(), grm.data(), grv.data());
  bn.backward(gx.data(), gg.data(), gmean.data(), ginv.data(), gdy.data(), gdx.data(), gdg.data(), gdb.data());
  g.synchronize();
  expect_near_all(gy.download(), cnhw_to_nchw(y, c, n, hw), 1e-5, "y");
  expect_near_all(gmean.download(), mean, 1e-5, "mean");
  expect_near_all(ginv.download(), invstd, 1e-5, "invstd");
  expect_near_all(grm.download(), rm, 1e-5, "running mean");
  expect_near_all(grv.download(), rv, 1e-5, "running var (unbiased)");
  expect_near_all(gdx.download(), cnhw_to_nchw(dx, c, n, hw), 1e-5, "dx");
  expect_near_all(gdg.download(), dg, 1e-5, "dgamma");
  expect_near_all(gdb.download(), db, 1e-5, "dbeta");
}

// ---- embedding and the whole GPT step ------------------------------------------------------

TEST(CudaEmbedding, MatchesCpu) {
  DSGD_REQUIRE_GPU();
  GpuContext g;
  const EmbeddingShape s{3, 5, 11, 37};
  std::vector<int32_t> tokens(s.batch * s.seq);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = int32_t((i * 5) % 4);  // repeats: rows sum in dwte
  const auto wte = random_vector(s.vocab * s.d, 71), wpe = random_vector(s.seq * s.d, 72),
             dx = random_vector(tokens.size() * s.d, 73);
  std::vector<float> x(tokens.size() * s.d), dwte(wte.size()), dwpe(wpe.size());
  embedding_forward(s, tokens.data(), wte.data(), wpe.data(), x.data());
  embedding_backward(s, tokens.data(), dx.data(), dwte.data(), dwpe.data());
  auto gt = to_device(tokens);
  auto gwte = to_device(wte), gwpe = to_device(wpe), gdx = to_device(dx);
  CudaBuffer<float> gx(x.size()), gdwte(wte.size()), gdwpe(wpe.size());
  embedding_forward_cuda(s, gt.data(), gwte.data(), gwpe.data(), gx.data(), g.stream());
  embedding_backward_cuda(s, gt.data(), gdx.data(), gdwte.data(), gdwpe.data(), g.stream());
  g.synchronize();
  expect_near_all(gx.download(), x, 0.0, "x");  // one float add each: exact
  expect_near_all(gdwte.download(), dwte, 1e-6, "dwte");
  expect_near_all(gdwpe.download(), dwpe, 1e-6, "dwpe");
}

// The whole GPT training step on the device against the CPU workload on the same parameters
// and batch: loss and every gradient (the hooks fire head, blocks L−1..0, embedding, as on CPU).
// Tolerance per layer: |got − ref| ≤ 1e-4·|ref| + 1e-3·max|ref of that layer|: ~10 chained float
// layers each within ~1e-6 relative of the CPU's, amplified by the backward's cancellations; the
// floor is relative to the layer's own gradient scale (gradients are ~1e-3 here, not O(1)).
TEST(CudaTransformer, StepMatchesTheCpuWorkload) {
  DSGD_REQUIRE_GPU();
  GpuContext g;
  const TransformerConfig c{2, 64, 2, 40, 37};  // seq > 32, d > 32: the lanes stride
  TransformerWorkload cpu(c);
  std::vector<float> p(cpu.param_count()), grad(cpu.param_count());
  cpu.init_params(p.data(), 9);
  Dataset ds;
  ds.name = "tokens";
  ds.classes = int(c.vocab);
  for (size_t i = 0; i < 400; ++i) ds.tokens.push_back(int32_t((i * i + 7 * i) % c.vocab));
  dataset_set_window(ds, c.seq + 1);
  const uint32_t idx[3] = {5, 77, 200};
  cpu.reserve(3);
  cpu.load_batch(ds, idx, 3);
  const double loss_ref = cpu.forward(p.data());
  cpu.backward(p.data(), grad.data(), LayerHook{});
  TransformerCuda gpu(g, c);
  ASSERT_EQ(gpu.param_count(), cpu.param_count());
  gpu.reserve(3);
  std::vector<int32_t> windows;
  for (uint32_t i : idx) windows.insert(windows.end(), ds.tokens.begin() + i, ds.tokens.begin() + i + c.seq + 1);
  gpu.load_batch(windows.data(), 3);
  auto gp = to_device(p);
  CudaBuffer<float> gg(p.size());
  const double loss = gpu.forward(gp.data());
  EXPECT_TRUE(testing::near_rel(loss, loss_ref, 1e-5, 1e-6));
  std::vector<size_t> order;
  struct Ctx {
    std::vector<size_t>* order;
  } ctx{&order};
  gpu.backward(gp.data(), gg.data(),
               LayerHook{[](void* x, size_t layer) { static_cast<Ctx*>(x)->order->push_back(layer); }, &ctx});
  g.synchronize();
  const std::vector<size_t> want{3, 2, 1, 0};
  EXPECT_EQ(order, want);
  const auto got = gg.download();
  for (const LayerView& v : cpu.layers()) {
    const std::vector<float> a(got.begin() + v.offset, got.begin() + v.offset + v.count),
        b(grad.begin() + v.offset, grad.begin() + v.offset + v.count);
    double scale = 0;
    for (float x : b) scale = std::max(scale, double(std::fabs(x)));
    EXPECT_GT(scale, 0.0) << v.name;
    EXPECT_TRUE(testing::all_near_rel(a, b, 1e-4, 1e-3 * scale)) << v.name;
  }
}

}  // namespace
}  // namespace dsgd
