// See layernorm.hpp. Two passes over each row (mean, then the variance of the centred values,
// as the CPU kernel), lanes striding over the d features and a butterfly sum across the warp.
#include <cuda_runtime.h>

#include "core/cuda/cuda_check.hpp"
#include "workloads/cuda/layernorm.hpp"
#include "workloads/cuda/warp_reduce.cuh"

namespace dsgd {

namespace {

using namespace cuda_detail;

__global__ void layernorm_forward_kernel(size_t n, size_t d, const float* x, const float* gamma, const float* beta,
                                         float* y, float* mean, float* rstd) {
  const size_t row = blockIdx.x * size_t(kRowsPerBlock) + threadIdx.y;
  if (row >= n) return;
  const int lane = threadIdx.x;
  const float* xr = x + row * d;
  float* yr = y + row * d;
  float s = 0;
  for (size_t k = lane; k < d; k += kWarp) s += xr[k];
  const float m = warp_sum(s) / float(d);
  float sq = 0;
  for (size_t k = lane; k < d; k += kWarp) {
    const float c = xr[k] - m;
    sq += c * c;
  }
  const float r = rsqrtf(warp_sum(sq) / float(d) + kLayerNormEps);
  for (size_t k = lane; k < d; k += kWarp) yr[k] = (xr[k] - m) * r * gamma[k] + beta[k];
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = r;
  }
}

__global__ void layernorm_backward_dx_kernel(size_t n, size_t d, const float* x, const float* gamma, const float* mean,
                                             const float* rstd, const float* dy, float* dx, bool accumulate) {
  const size_t row = blockIdx.x * size_t(kRowsPerBlock) + threadIdx.y;
  if (row >= n) return;
  const int lane = threadIdx.x;
  const float* xr = x + row * d;
  const float* dyr = dy + row * d;
  float* dxr = dx + row * d;
  const float m = mean[row], r = rstd[row];
  // dx = r · (g − mean(g) − x̂ · mean(g · x̂)), g = dy · γ, x̂ = (x − m) · r.
  float sg = 0, sgx = 0;
  for (size_t k = lane; k < d; k += kWarp) {
    const float g = dyr[k] * gamma[k];
    sg += g;
    sgx += g * ((xr[k] - m) * r);
  }
  const float mg = warp_sum(sg) / float(d), mgx = warp_sum(sgx) / float(d);
  for (size_t k = lane; k < d; k += kWarp) {
    const float v = r * (dyr[k] * gamma[k] - mg - (xr[k] - m) * r * mgx);
    dxr[k] = accumulate ? dxr[k] + v : v;
  }
}

// Block (32, 8): 32 features; lane y sums rows y, y+8, ...; then the 8 partials in order.
__global__ void layernorm_backward_params_kernel(size_t n, size_t d, const float* x, const float* mean,
                                                 const float* rstd, const float* dy, float* dgamma, float* dbeta) {
  __shared__ float pg[8][33], pb[8][33];
  const size_t k = blockIdx.x * 32 + threadIdx.x;
  float g = 0, b = 0;
  if (k < d)
    for (size_t i = threadIdx.y; i < n; i += 8) {
      const float v = dy[i * d + k];
      g += v * ((x[i * d + k] - mean[i]) * rstd[i]);
      b += v;
    }
  pg[threadIdx.y][threadIdx.x] = g;
  pb[threadIdx.y][threadIdx.x] = b;
  __syncthreads();
  if (threadIdx.y == 0 && k < d) {
    float tg = 0, tb = 0;
    for (int j = 0; j < 8; ++j) {
      tg += pg[j][threadIdx.x];
      tb += pb[j][threadIdx.x];
    }
    dgamma[k] = tg;
    dbeta[k] = tb;
  }
}

}  // namespace

void layernorm_forward_cuda(const LayerNormShape& s, const float* x, const float* gamma, const float* beta, float* y,
                            float* mean, float* rstd, cudaStream_t stream) {
  if (!s.n || !s.d) return;
  layernorm_forward_kernel<<<row_blocks(s.n), dim3(kWarp, kRowsPerBlock), 0, stream>>>(s.n, s.d, x, gamma, beta, y,
                                                                                       mean, rstd);
  DSGD_CUDA_CHECK_LAUNCH();
}

void layernorm_backward_cuda(const LayerNormShape& s, const float* x, const float* gamma, const float* mean,
                             const float* rstd, const float* dy, float* dx, float* dgamma, float* dbeta,
                             bool accumulate_dx, cudaStream_t stream) {
  if (!s.n || !s.d) return;
  layernorm_backward_dx_kernel<<<row_blocks(s.n), dim3(kWarp, kRowsPerBlock), 0, stream>>>(s.n, s.d, x, gamma, mean,
                                                                                           rstd, dy, dx, accumulate_dx);
  DSGD_CUDA_CHECK_LAUNCH();
  layernorm_backward_params_kernel<<<unsigned((s.d + 31) / 32), dim3(32, 8), 0, stream>>>(s.n, s.d, x, mean, rstd, dy,
                                                                                          dgamma, dbeta);
  DSGD_CUDA_CHECK_LAUNCH();
}

}  // namespace dsgd
