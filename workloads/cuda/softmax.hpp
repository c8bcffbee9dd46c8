// Softmax kernels on device memory. Causal attention softmax: p holds `blocks` row-major S×S
// score squares (one per sample and head, as workloads/layers/attention.hpp); row t of each
// becomes softmax over its first t+1 entries, the rest 0 (the causal mask). Fused
// softmax cross-entropy (workloads/layers/softmax_cross_entropy.hpp): logits n rows × c
// classes, integer targets. One warp per row. Asynchronous on `stream` except where a
// function returns a host value. Only built with CUDA.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace dsgd {

// In place on blocks·S rows of S floats.
void causal_softmax_forward_cuda(float* p, size_t blocks, size_t seq, cudaStream_t stream);
// dp ← p ⊙ (dp − Σ_j p_j dp_j) · scale on the causal part, 0 elsewhere (in place on dp):
// the gradient of the scores when the softmax input was scale · q kᵀ.
void causal_softmax_backward_cuda(const float* p, float* dp, size_t blocks, size_t seq, float scale,
                                  cudaStream_t stream);

// Per-row loss (−log softmax(logits)[target], max-subtracted) and hit (arg-max == target)
// into row_loss / row_hit (n floats each, device), then their sums in double (sums: 2 doubles,
// device). Asynchronous.
void softmax_cross_entropy_rows_cuda(const float* logits, const int32_t* targets, size_t n, size_t c, float* row_loss,
                                     float* row_hit, double* sums, cudaStream_t stream);
// The mean loss over the n rows (synchronises the stream); correct (optional) receives the hits.
double softmax_cross_entropy_forward_cuda(const float* logits, const int32_t* targets, size_t n, size_t c,
                                          float* row_loss, float* row_hit, double* sums, cudaStream_t stream,
                                          double* correct = nullptr);
// dlogits = (softmax(logits) − onehot(target)) · scale; may alias logits.
void softmax_cross_entropy_backward_cuda(const float* logits, const int32_t* targets, size_t n, size_t c, float scale,
                                         float* dlogits, cudaStream_t stream);
// sums[0] = Σ a (n floats), sums[1] = Σ b (may be null: 0), in double, one block in a fixed order.
void sum_pair_cuda(const float* a, const float* b, size_t n, double* sums, cudaStream_t stream);

}  // namespace dsgd
