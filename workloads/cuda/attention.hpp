// Causal multi-head self-attention on the GPU, the contract and buffers of
// workloads/layers/attention.hpp (AttentionShape/Params/Grads/Cache/Scratch, all device
// pointers): the projections on linear_*_cuda, the per-head products as cuBLAS strided-batched
// GEMMs straight on the qkv buffer (one call per sample, the heads as the batch: head h of
// sample b starts at b·S·3d + h·dh, stride dh), the causal softmax as a kernel (softmax.hpp).
// Like the CPU pass it computes the full S×S square and zeroes the masked half.
// Asynchronous on the context's stream. Only built with CUDA.
#pragma once

#include "workloads/cuda/gpu_context.hpp"
#include "workloads/layers/attention.hpp"

namespace dsgd {

void attention_forward_cuda(const GpuContext& g, const AttentionShape& s, const AttentionParams& p, const float* x,
                            const AttentionCache& c, float* y);
// Gradients and dx overwritten. scratch.dprobs needs batch·heads·S·S floats.
void attention_backward_cuda(const GpuContext& g, const AttentionShape& s, const AttentionParams& p, const float* x,
                             const AttentionCache& c, const float* dy, const AttentionScratch& scratch, float* dx,
                             const AttentionGrads& gr);

}  // namespace dsgd
