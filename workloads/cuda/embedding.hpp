// Token + position embedding on the GPU, the contract of workloads/layers/embedding.hpp
// (x[b,t,:] = wte[token[b,t],:] + wpe[t,:]; backward overwrites dwte and dwpe). The backward
// is deterministic: each dwte row sums the rows of its token in row order (no atomics).
// Asynchronous on `stream`. Only built with CUDA.
#pragma once

#include <cuda_runtime_api.h>

#include "workloads/layers/embedding.hpp"

namespace dsgd {

void embedding_forward_cuda(const EmbeddingShape& s, const int32_t* tokens, const float* wte, const float* wpe,
                            float* x, cudaStream_t stream);
void embedding_backward_cuda(const EmbeddingShape& s, const int32_t* tokens, const float* dx, float* dwte, float* dwpe,
                             cudaStream_t stream);

}  // namespace dsgd
