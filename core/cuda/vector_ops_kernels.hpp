// The kernel launchers behind CudaVectorOps (vector_ops_cuda.hpp), one per operation, each
// asynchronous on `stream`; pointers are device pointers, n elements. Only built with CUDA.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "core/vector_ops.hpp"

namespace dsgd {

void vec_fill(float* x, size_t n, float v, cudaStream_t stream);
void vec_scale(float* x, size_t n, float a, cudaStream_t stream);
void vec_scale_copy(float* y, const float* x, size_t n, float a, cudaStream_t stream);
void vec_axpy(float* y, const float* x, size_t n, float a, cudaStream_t stream);
void vec_scale_add(float* y, const float* x, size_t n, float a, cudaStream_t stream);
void vec_blend(float* y, const float* x, size_t n, float a, float b, cudaStream_t stream);
void vec_add(float* out, const float* a, const float* b, size_t n, cudaStream_t stream);
void vec_sub(float* out, const float* a, const float* b, size_t n, cudaStream_t stream);
void vec_rebase(float* x, const float* avg, const float* base, size_t n, bool only_changed, cudaStream_t stream);
void vec_sgd(float* x, float* v, const float* g, size_t n, const SgdUpdate& u, cudaStream_t stream);
void vec_adamw(float* x, float* m, float* v, const float* g, size_t n, const AdamWUpdate& u, cudaStream_t stream);

}  // namespace dsgd
