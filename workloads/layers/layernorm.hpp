// Layer normalisation over the last dimension: for each of n rows of d features,
// y = (x − mean) · rstd · γ + β with rstd = 1/√(var + eps), var the biased variance (as
// PyTorch's nn.LayerNorm, eps 1e-5). Forward saves mean and rstd per row for the backward.
// A double-precision naive reference is beside each pass.
#pragma once

#include <cstddef>

namespace dsgd {

constexpr float kLayerNormEps = 1e-5f;

struct LayerNormShape {
  size_t n = 0;  // rows
  size_t d = 0;  // features per row
};

// mean, rstd: n floats each (saved for backward).
void layernorm_forward(const LayerNormShape& s, const float* x, const float* gamma, const float* beta, float* y,
                       float* mean, float* rstd);
// From dy: dγ, dβ (overwritten) and dx (overwritten, or added to when accumulate_dx: the
// residual stream's gradient is already there).
void layernorm_backward(const LayerNormShape& s, const float* x, const float* gamma, const float* mean,
                        const float* rstd, const float* dy, float* dx, float* dgamma, float* dbeta,
                        bool accumulate_dx = false);

void layernorm_forward_naive(const LayerNormShape& s, const float* x, const float* gamma, const float* beta, float* y,
                             float* mean, float* rstd);
void layernorm_backward_naive(const LayerNormShape& s, const float* x, const float* gamma, const float* dy, float* dx,
                              float* dgamma, float* dbeta, bool accumulate_dx = false);

}  // namespace dsgd
