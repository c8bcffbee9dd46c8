// Row-major GEMMs on cuBLAS (column-major underneath: a row-major C = op(A)·op(B) is the
// column-major Cᵀ = op(B)ᵀ·op(A)ᵀ, so the operands are passed swapped and nothing is copied).
//   C (M×N, ldc) = alpha · op(A) · op(B) + beta · C
//   op(A) is M×K: A stored M×K (lda ≥ K) when !trans_a, K×M (lda ≥ M) when trans_a; same for B.
// Precision (gpu_context.hpp): fp32 and tf32 take float operands; bf16 takes __nv_bfloat16
// operands (gemm_bf16) with float C. The strided-batched form runs `batch` independent
// products A + i·stride_a, B + i·stride_b, C + i·stride_c (attention's per-head products).
// Only built with CUDA.
#pragma once

#include <cublas_v2.h>
#include <cuda_bf16.h>

#include <cstdint>

#include "workloads/cuda/gpu_context.hpp"

namespace dsgd {

struct GemmShape {
  bool trans_a = false, trans_b = false;
  int m = 0, n = 0, k = 0;
  int lda = 0, ldb = 0, ldc = 0;
};

// Float operands; precision fp32 or tf32 (bf16 is refused here: use gemm_bf16).
void gemm(const GpuContext& g, const GemmShape& s, float alpha, const float* a, const float* b, float beta, float* c);
void gemm_strided_batched(const GpuContext& g, const GemmShape& s, float alpha, const float* a, int64_t stride_a,
                          const float* b, int64_t stride_b, float beta, float* c, int64_t stride_c, int batch);
// bfloat16 operands, float accumulation and output.
void gemm_bf16(const GpuContext& g, const GemmShape& s, float alpha, const __nv_bfloat16* a, const __nv_bfloat16* b,
               float beta, float* c);

// FLOP/s of an n×n×n product at `precision` on g's device: the best of `reps` timed products
// (CUDA events) after one untimed warm-up, the peak MFU is measured against (docs/metrics.md).
double gemm_peak_flops_measure(GpuContext& g, GemmPrecision precision, int n, int reps);

}  // namespace dsgd
