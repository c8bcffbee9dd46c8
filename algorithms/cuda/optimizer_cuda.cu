// See optimizer_cuda.hpp.
#include <cuda_runtime.h>

#include <cmath>

#include "algorithms/cuda/optimizer_cuda.hpp"
#include "core/cuda/cuda_check.hpp"

namespace dsgd {

namespace {

unsigned blocks_for(size_t n) {
  const size_t b = (n + 255) / 256;
  return unsigned(b < 65535 * 8 ? (b ? b : 1) : 65535 * 8);
}

__global__ void sgd_plain_kernel(float* x, const float* g, size_t n, float lr, float wd) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    x[i] -= lr * (g[i] + wd * x[i]);
}

__global__ void sgd_momentum_kernel(float* x, float* v, const float* g, size_t n, float lr, float mu, float wd,
                                    bool nesterov) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    if (nesterov) {
      const float d = g[i] + wd * x[i];
      v[i] = mu * v[i] + d;
      x[i] -= lr * (d + mu * v[i]);
    } else {
      v[i] = mu * v[i] + g[i] + wd * x[i];
      x[i] -= lr * v[i];
    }
  }
}

__global__ void adamw_kernel(float* x, float* m, float* v, const float* g, size_t n, float b1, float b2, float eps,
                             float decay, float step_size, float inv_sqrt_c2) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const float gi = g[i];
    m[i] = b1 * m[i] + (1.0f - b1) * gi;
    v[i] = b2 * v[i] + (1.0f - b2) * gi * gi;
    const float denom = sqrtf(v[i]) * inv_sqrt_c2 + eps;
    x[i] = x[i] * decay - step_size * m[i] / denom;
  }
}

}  // namespace

void sgd_update_cuda(const SgdOptions& o, float* params, float* velocity, const float* grads, size_t n, double lr,
                     cudaStream_t stream) {
  if (!n) return;
  const float flr = float(lr), mu = float(o.momentum), wd = float(o.weight_decay);
  if (mu == 0.0f)
    sgd_plain_kernel<<<blocks_for(n), 256, 0, stream>>>(params, grads, n, flr, wd);
  else
    sgd_momentum_kernel<<<blocks_for(n), 256, 0, stream>>>(params, velocity, grads, n, flr, mu, wd, o.nesterov);
  DSGD_CUDA_CHECK_LAUNCH();
}

void adamw_update_cuda(const AdamWOptions& o, float* params, float* m, float* v, const float* grads, size_t n,
                       double lr, int64_t t, cudaStream_t stream) {
  if (!n) return;
  // As AdamWOptimizer::step: the bias corrections in double, one step size and one scale.
  const double c1 = 1.0 - std::pow(o.beta1, double(t));
  const double c2 = 1.0 - std::pow(o.beta2, double(t));
  adamw_kernel<<<blocks_for(n), 256, 0, stream>>>(params, m, v, grads, n, float(o.beta1), float(o.beta2), float(o.eps),
                                                  float(1.0 - lr * o.weight_decay), float(lr / c1),
                                                  float(1.0 / std::sqrt(c2)));
  DSGD_CUDA_CHECK_LAUNCH();
}

}  // namespace dsgd
