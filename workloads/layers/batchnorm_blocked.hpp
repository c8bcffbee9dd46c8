// Batch normalisation (with the fused ReLU) of an nChw8c activation (blocked_layout.hpp):
// the same maps, statistics and running-statistics rule as batchnorm.hpp, for a tensor whose
// 8 channels of a block share one vector per pixel. Each pass works on whole vectors: the
// lanes are 8 channels, so the per-channel sums need no horizontal reduction and every loop
// is one load, a few FMAs and one store per pixel.
//   forward:  one pass for both moments per channel block (shifted by the block's first
//             pixel; float lanes flushed to double every 1024 pixels), one for the affine map.
//   backward: one pass for Σg and Σg·(x − μ), with g = dy masked by the ReLU recomputed from
//             x (relu_affine, as batchnorm_backward), and one for dx = k1·g − k2·(x − μ) − k3.
// Rounding differs from batchnorm.hpp's CNHW kernels (other summation order); both are
// checked against the naive references. Work is split over layer_threads() threads by
// channel block (sums) or by (image, channel block) (maps); each output has one writer and
// one summation order, so results do not depend on the thread count.
// C must be a multiple of 8.
#pragma once

#include <cstddef>

#include "workloads/layers/batchnorm.hpp"

namespace dsgd {

struct BlockedBatchNormShape {
  size_t c = 0;   // channels (multiple of 8)
  size_t n = 0;   // images
  size_t hw = 0;  // pixels per image
};

// As batchnorm_forward_train (affine_out: [scale (c) | shift (c)]). y may be null: the
// statistics and affine_out only (the map then runs in batchnorm_blocked_affine_add_relu).
void batchnorm_blocked_forward_train(const BlockedBatchNormShape& s, const BatchNormOptions& o, const float* x,
                                     const float* gamma, const float* beta, float* y, float* mean, float* invstd,
                                     float* running_mean, float* running_var, bool relu = false,
                                     float* affine_out = nullptr);
// As batchnorm_forward_eval.
void batchnorm_blocked_forward_eval(const BlockedBatchNormShape& s, const BatchNormOptions& o, const float* x,
                                    const float* gamma, const float* beta, const float* running_mean,
                                    const float* running_var, float* y, bool relu = false);
// The residual join fused with the BN map before it: y = max(x·scale + shift + r, 0), with
// affine = [scale (c) | shift (c)] (affine_out of the training forward, or
// batchnorm_eval_affine's). y may alias r.
void batchnorm_blocked_affine_add_relu(const BlockedBatchNormShape& s, const float* x, const float* affine,
                                       const float* r, float* y);
// The evaluation map's [scale (c) | shift (c)] from the running statistics.
void batchnorm_eval_affine(size_t c, const BatchNormOptions& o, const float* gamma, const float* beta,
                           const float* running_mean, const float* running_var, float* affine_out);
// As batchnorm_backward: the ReLU mask recomputed from relu_affine (a ReLU right after this
// BN), or taken from relu_y (the output of a ReLU further on whose input is this BN's output
// plus something that does not depend on it: the residual join; dy is then that ReLU's
// output gradient), or none when both are null. dx may alias dy.
void batchnorm_blocked_backward(const BlockedBatchNormShape& s, const float* x, const float* gamma, const float* mean,
                                const float* invstd, const float* dy, float* dx, float* dgamma, float* dbeta,
                                const float* relu_affine = nullptr, const float* relu_y = nullptr);

}  // namespace dsgd
