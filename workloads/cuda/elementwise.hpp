// Elementwise and broadcast kernels on device memory: GELU (tanh approximation, as
// workloads/layers/gelu.hpp) forward and backward, the bias add and bias gradient of a linear
// layer, the residual add, float → bfloat16 conversion, and a deterministic uniform fill.
// All asynchronous on `stream`; pointers are device pointers. Only built with CUDA.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace dsgd {

// y = ½x(1 + tanh(√(2/π)(x + 0.044715x³))), n floats.
void gelu_forward_cuda(const float* x, float* y, size_t n, cudaStream_t stream);
// dx = dy · gelu'(x); dx may alias dy.
void gelu_backward_cuda(const float* x, const float* dy, float* dx, size_t n, cudaStream_t stream);
// y (rows×cols) += b (cols) on every row.
void bias_add_rows_cuda(float* y, const float* b, size_t rows, size_t cols, cudaStream_t stream);
// db (cols) = Σ_rows dy (rows×cols), or += when accumulate. Each column summed in a fixed order.
void column_sum_cuda(const float* dy, size_t rows, size_t cols, float* db, bool accumulate, cudaStream_t stream);
// y += x, n floats.
void add_inplace_cuda(float* y, const float* x, size_t n, cudaStream_t stream);
// out = bfloat16(in) (round to nearest even), n values.
void float_to_bf16_cuda(const float* in, __nv_bfloat16* out, size_t n, cudaStream_t stream);
// x[i] = uniform in [−1, 1) from a hash of (seed, i): the same values on every device and run.
void fill_uniform_cuda(float* x, size_t n, uint64_t seed, cudaStream_t stream);

}  // namespace dsgd
