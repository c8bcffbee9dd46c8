// See gemm.hpp.
#include "workloads/cuda/gemm.hpp"

#include <algorithm>

#include "core/errors.hpp"
#include "workloads/cuda/elementwise.hpp"

namespace dsgd {

namespace {

cublasComputeType_t compute_type(GemmPrecision p) {
  return p == GemmPrecision::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

cublasOperation_t op(bool trans) {
  return trans ? CUBLAS_OP_T : CUBLAS_OP_N;
}

void check_float_precision(const GpuContext& g) {
  if (g.precision() == GemmPrecision::bf16)
    DSGD_THROW(Error, "convert the operands to bfloat16 and call gemm_bf16",
               "gemm: float operands with precision bf16");
}

}  // namespace

void gemm(const GpuContext& g, const GemmShape& s, float alpha, const float* a, const float* b, float beta, float* c) {
  check_float_precision(g);
  // Column-major: Cᵀ (n×m) = op(B)ᵀ (n×k) · op(A)ᵀ (k×m).
  DSGD_CUDA_CHECK(cublasGemmEx(g.blas(), op(s.trans_b), op(s.trans_a), s.n, s.m, s.k, &alpha, b, CUDA_R_32F, s.ldb, a,
                               CUDA_R_32F, s.lda, &beta, c, CUDA_R_32F, s.ldc, compute_type(g.precision()),
                               CUBLAS_GEMM_DEFAULT));
}

void gemm_strided_batched(const GpuContext& g, const GemmShape& s, float alpha, const float* a, int64_t stride_a,
                          const float* b, int64_t stride_b, float beta, float* c, int64_t stride_c, int batch) {
  check_float_precision(g);
  DSGD_CUDA_CHECK(cublasGemmStridedBatchedEx(
      g.blas(), op(s.trans_b), op(s.trans_a), s.n, s.m, s.k, &alpha, b, CUDA_R_32F, s.ldb, stride_b, a, CUDA_R_32F,
      s.lda, stride_a, &beta, c, CUDA_R_32F, s.ldc, stride_c, batch, compute_type(g.precision()), CUBLAS_GEMM_DEFAULT));
}

void gemm_bf16(const GpuContext& g, const GemmShape& s, float alpha, const __nv_bfloat16* a, const __nv_bfloat16* b,
               float beta, float* c) {
  DSGD_CUDA_CHECK(cublasGemmEx(g.blas(), op(s.trans_b), op(s.trans_a), s.n, s.m, s.k, &alpha, b, CUDA_R_16BF, s.ldb, a,
                               CUDA_R_16BF, s.lda, &beta, c, CUDA_R_32F, s.ldc, CUBLAS_COMPUTE_32F,
                               CUBLAS_GEMM_DEFAULT));
}

double gemm_peak_flops_measure(GpuContext& g, GemmPrecision precision, int n, int reps) {
  const size_t nn = size_t(n) * size_t(n);
  CudaBuffer<float> a(nn), b(nn), c(nn);
  CudaBuffer<__nv_bfloat16> a16, b16;
  fill_uniform_cuda(a.data(), nn, 1, g.stream());
  fill_uniform_cuda(b.data(), nn, 2, g.stream());
  if (precision == GemmPrecision::bf16) {
    a16.resize(nn);
    b16.resize(nn);
    float_to_bf16_cuda(a.data(), a16.data(), nn, g.stream());
    float_to_bf16_cuda(b.data(), b16.data(), nn, g.stream());
  }
  const GemmPrecision saved = g.precision();
  g.set_precision(precision);
  const GemmShape s{false, false, n, n, n, n, n, n};
  auto once = [&] {
    if (precision == GemmPrecision::bf16)
      gemm_bf16(g, s, 1.0f, a16.data(), b16.data(), 0.0f, c.data());
    else
      gemm(g, s, 1.0f, a.data(), b.data(), 0.0f, c.data());
  };
  CudaEvent start, stop;
  double best_s = 0;
  try {
    once();  // warm-up: cuBLAS picks and loads its kernel
    for (int r = 0; r < reps; ++r) {
      start.record(g.stream());
      once();
      stop.record(g.stream());
      stop.synchronize();
      const double t = stop.elapsed_ms_since(start) * 1e-3;
      if (r == 0 || t < best_s) best_s = t;
    }
  } catch (...) {
    g.set_precision(saved);
    throw;
  }
  g.set_precision(saved);
  return best_s > 0 ? 2.0 * double(n) * double(n) * double(n) / best_s : 0.0;
}

}  // namespace dsgd
