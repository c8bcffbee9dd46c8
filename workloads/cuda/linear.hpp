// Fully connected layer on the GPU, the contract of workloads/layers/linear.hpp (x n×in,
// W out×in, b out, y n×out, row-major): the products on cuBLAS (gemm.hpp) at the context's
// precision (fp32 or tf32), the bias add and bias gradient as kernels (elementwise.hpp).
// Asynchronous on the context's stream. Only built with CUDA.
#pragma once

#include "workloads/cuda/gpu_context.hpp"
#include "workloads/layers/linear.hpp"

namespace dsgd {

void linear_forward_cuda(const GpuContext& g, const LinearShape& s, const float* x, const float* w, const float* b,
                         float* y);
// dx = dy W (skipped when null), dW = dyᵀ x, db = Σ_rows dy (skipped when null); accumulate
// adds to dW and db instead of overwriting them.
void linear_backward_cuda(const GpuContext& g, const LinearShape& s, const float* x, const float* w, const float* dy,
                          float* dx, float* dw, float* db, bool accumulate = false);

}  // namespace dsgd
