// Layer normalisation on device memory, the contract of workloads/layers/layernorm.hpp:
// x, y, dy, dx are n rows × d features (row-major); mean, rstd n floats (saved by the forward
// for the backward); γ, β, dγ, dβ d floats. One warp per row; dγ, dβ summed over the rows in
// a fixed order (deterministic). Asynchronous on `stream`. Only built with CUDA.
#pragma once

#include <cuda_runtime_api.h>

#include "workloads/layers/layernorm.hpp"

namespace dsgd {

void layernorm_forward_cuda(const LayerNormShape& s, const float* x, const float* gamma, const float* beta, float* y,
                            float* mean, float* rstd, cudaStream_t stream);
// dγ, dβ overwritten; dx overwritten, or added to when accumulate_dx.
void layernorm_backward_cuda(const LayerNormShape& s, const float* x, const float* gamma, const float* mean,
                             const float* rstd, const float* dy, float* dx, float* dgamma, float* dbeta,
                             bool accumulate_dx, cudaStream_t stream);

}  // namespace dsgd
