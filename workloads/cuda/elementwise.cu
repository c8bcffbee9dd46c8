// See elementwise.hpp. GELU uses the device tanhf (max error 2 ulp) where the CPU kernel uses
// its fast_tanh (absolute error ≤ 3e-7): the two agree to a few float ulps.
#include <cuda_runtime.h>

#include "core/cuda/cuda_check.hpp"
#include "workloads/cuda/elementwise.hpp"
#include "workloads/cuda/warp_reduce.cuh"

namespace dsgd {

namespace {

using cuda_detail::elem_blocks;

constexpr float kC = 0.7978845608028654f;  // √(2/π)
constexpr float kA = 0.044715f;

__global__ void gelu_forward_kernel(const float* x, float* y, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const float v = x[i];
    y[i] = 0.5f * v * (1.0f + tanhf(kC * (v + kA * v * v * v)));
  }
}

__global__ void gelu_backward_kernel(const float* x, const float* dy, float* dx, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const float v = x[i];
    const float t = tanhf(kC * (v + kA * v * v * v));
    const float dt = kC * (1.0f + 3.0f * kA * v * v) * (1.0f - t * t);
    dx[i] = dy[i] * (0.5f * (1.0f + t) + 0.5f * v * dt);
  }
}

__global__ void bias_add_rows_kernel(float* y, const float* b, size_t rows, size_t cols) {
  const size_t n = rows * cols;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    y[i] += b[i % cols];
}

// Block (32, 8): 32 columns, 8 row lanes; lane r sums rows r, r+8, ... then the 8 partial sums
// are added in lane order: a fixed order for every run.
__global__ void column_sum_kernel(const float* dy, size_t rows, size_t cols, float* db, bool accumulate) {
  __shared__ float part[8][33];
  const size_t col = blockIdx.x * 32 + threadIdx.x;
  float s = 0;
  if (col < cols)
    for (size_t r = threadIdx.y; r < rows; r += 8) s += dy[r * cols + col];
  part[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && col < cols) {
    float t = 0;
    for (int k = 0; k < 8; ++k) t += part[k][threadIdx.x];
    db[col] = accumulate ? db[col] + t : t;
  }
}

__global__ void add_inplace_kernel(float* y, const float* x, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    y[i] += x[i];
}

__global__ void float_to_bf16_kernel(const float* in, __nv_bfloat16* out, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    out[i] = __float2bfloat16_rn(in[i]);
}

__device__ inline uint64_t splitmix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

__global__ void fill_uniform_kernel(float* x, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    x[i] = float(splitmix64(seed * 0x100000001B3ull + i) >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

}  // namespace

void gelu_forward_cuda(const float* x, float* y, size_t n, cudaStream_t stream) {
  if (!n) return;
  gelu_forward_kernel<<<elem_blocks(n), 256, 0, stream>>>(x, y, n);
  DSGD_CUDA_CHECK_LAUNCH();
}

void gelu_backward_cuda(const float* x, const float* dy, float* dx, size_t n, cudaStream_t stream) {
  if (!n) return;
  gelu_backward_kernel<<<elem_blocks(n), 256, 0, stream>>>(x, dy, dx, n);
  DSGD_CUDA_CHECK_LAUNCH();
}

void bias_add_rows_cuda(float* y, const float* b, size_t rows, size_t cols, cudaStream_t stream) {
  if (!rows || !cols) return;
  bias_add_rows_kernel<<<elem_blocks(rows * cols), 256, 0, stream>>>(y, b, rows, cols);
  DSGD_CUDA_CHECK_LAUNCH();
}

void column_sum_cuda(const float* dy, size_t rows, size_t cols, float* db, bool accumulate, cudaStream_t stream) {
  if (!cols) return;
  column_sum_kernel<<<unsigned((cols + 31) / 32), dim3(32, 8), 0, stream>>>(dy, rows, cols, db, accumulate);
  DSGD_CUDA_CHECK_LAUNCH();
}

void add_inplace_cuda(float* y, const float* x, size_t n, cudaStream_t stream) {
  if (!n) return;
  add_inplace_kernel<<<elem_blocks(n), 256, 0, stream>>>(y, x, n);
  DSGD_CUDA_CHECK_LAUNCH();
}

void float_to_bf16_cuda(const float* in, __nv_bfloat16* out, size_t n, cudaStream_t stream) {
  if (!n) return;
  float_to_bf16_kernel<<<elem_blocks(n), 256, 0, stream>>>(in, out, n);
  DSGD_CUDA_CHECK_LAUNCH();
}

void fill_uniform_cuda(float* x, size_t n, uint64_t seed, cudaStream_t stream) {
  if (!n) return;
  fill_uniform_kernel<<<elem_blocks(n), 256, 0, stream>>>(x, n, seed);
  DSGD_CUDA_CHECK_LAUNCH();
}

}  // namespace dsgd
