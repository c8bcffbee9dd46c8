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

// As batchnorm_forward_train (affine_out: [scale (c) | shift (c)]).
void batchnorm_blocked_forward_train(const BlockedBatchNormShape& s, const BatchNormOptions& o, const float* x,
                                     const float* gamma, const float* beta, float* y, float* mean, float* invstd,
                                     float* running_mean, float* running_var, bool relu = false,
                                     float* affine_out = nullptr);
// As batchnorm_forward_eval.
void batchnorm_blocked_forward_eval(const BlockedBatchNormShape& s, const BatchNormOptions& o, const float* x,
                                    const float* gamma, const float* beta, const float* running_mean,
                                    const float* running_var, float* y, bool relu = false);
// As batchnorm_backward with relu_affine (or no ReLU when null); dx may alias dy.
void batchnorm_blocked_backward(const BlockedBatchNormShape& s, const float* x, const float* gamma, const float* mean,
                                const float* invstd, const float* dy, float* dx, float* dgamma, float* dbeta,
                                const float* relu_affine = nullptr);

}  // namespace dsgd
