// Batch normalisation over the channels of a CNHW activation: x is (C, M) row-major with
// M = N·H·W values per channel (contiguous, so each channel is one pass over one row).
//   training:   y = γ (x − μ_B) / sqrt(σ²_B + ε) + β with the batch mean μ_B and biased
//               variance σ²_B; running statistics move by r ← (1 − momentum) r + momentum b,
//               the running variance with the unbiased batch variance (PyTorch's convention).
//   evaluation: the same affine map with the running mean and variance; changes nothing.
// Backward (training mode): dβ = Σ dy, dγ = Σ dy·x̂, dx = γ/(M·sqrt(σ²+ε)) (M dy − dβ − x̂ dγ).
// Fused ReLU (the ResNet's conv → BN → ReLU): the forwards take relu (y = max(BN(x), 0)) and
// the backward takes relu_y, the ReLU's output, and uses dy·[relu_y > 0] in place of dy.
// Naive double-precision references beside each (without the fusion: the tests compose them
// with relu_*_naive). Channels run on layer_threads() threads (layer_threads.hpp).
// Limits: M ≥ 2 for the unbiased variance.
#pragma once

#include <cstddef>

namespace dsgd {

struct BatchNormShape {
  size_t c = 0;  // channels
  size_t m = 0;  // values per channel (N·H·W)
};

struct BatchNormOptions {
  float momentum = 0.1f;
  float eps = 1e-5f;
};

// Training forward. mean/invstd (c floats each) receive the batch statistics the backward
// needs; running_mean/running_var (c floats) are updated in place (skipped when null).
// affine_out (optional, 2c floats): the per-channel [scale (c) | shift (c)] of y = x·scale +
// shift (before the ReLU), for the backward's relu_affine.
void batchnorm_forward_train(const BatchNormShape& s, const BatchNormOptions& o, const float* x, const float* gamma,
                             const float* beta, float* y, float* mean, float* invstd, float* running_mean,
                             float* running_var, bool relu = false, float* affine_out = nullptr);
// Evaluation forward with the running statistics.
void batchnorm_forward_eval(const BatchNormShape& s, const BatchNormOptions& o, const float* x, const float* gamma,
                            const float* beta, const float* running_mean, const float* running_var, float* y,
                            bool relu = false);
// Training backward: dx (overwritten; may alias dy), dgamma and dbeta (overwritten). relu_y
// (optional): the output of a ReLU that followed this BN; dy is then the ReLU's output gradient.
// relu_affine (optional, instead of relu_y): the forward's affine_out; the ReLU mask is then
// recomputed from x (the same float expression as the forward's), which saves reading relu_y.
void batchnorm_backward(const BatchNormShape& s, const float* x, const float* gamma, const float* mean,
                        const float* invstd, const float* dy, float* dx, float* dgamma, float* dbeta,
                        const float* relu_y = nullptr, const float* relu_affine = nullptr);

void batchnorm_forward_train_naive(const BatchNormShape& s, const BatchNormOptions& o, const float* x,
                                   const float* gamma, const float* beta, float* y, float* mean, float* invstd,
                                   float* running_mean, float* running_var);
void batchnorm_backward_naive(const BatchNormShape& s, const float* x, const float* gamma, const float* dy, float* dx,
                              float* dgamma, float* dbeta, float eps = 1e-5f);

}  // namespace dsgd
