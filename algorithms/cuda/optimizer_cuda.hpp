// The optimizer updates of algorithms/optimizer.hpp as fused kernels on device memory: one pass
// over params, grads and the state per step (SGD with momentum / Nesterov / coupled L2 decay,
// AdamW with decoupled decay), the same float arithmetic in the same order as the CPU loops so
// the results agree to a rounding (the CPU build may contract a·b + c into an FMA; nvcc does).
// The AdamW bias corrections are computed on the host in double, as on the CPU.
// Asynchronous on `stream`. Only built with CUDA.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "algorithms/optimizer.hpp"

namespace dsgd {

// sgd_update on device: velocity (n floats) unused when momentum is 0.
void sgd_update_cuda(const SgdOptions& o, float* params, float* velocity, const float* grads, size_t n, double lr,
                     cudaStream_t stream);
// One AdamW step at step number t (1 for the first step): m, v (n floats each) updated.
void adamw_update_cuda(const AdamWOptions& o, float* params, float* m, float* v, const float* grads, size_t n,
                       double lr, int64_t t, cudaStream_t stream);

}  // namespace dsgd
