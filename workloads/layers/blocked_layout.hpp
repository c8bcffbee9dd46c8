// The channel-blocked activation layout nChw8c, and conversions to and from CNHW.
// nChw8c is (N, C/8, H·W, 8): channel c of image n at pixel p sits at
//   ((n·(C/8) + c/8)·H·W + p)·8 + c%8,
// so one 8-float vector holds 8 channels of one pixel. It is the format oneDNN's jit:avx2
// convolutions work in, and the ResNet keeps its activations in it end to end where every
// convolution can (resnet.hpp), so no conversion runs between layers. C must be a multiple
// of 8. The conversions are 8×8 AVX transposes (scalar where H·W is not a multiple of 8, or
// without AVX), split over layer_threads() threads by (image, channel block), each output
// written by one thread, so results do not depend on the thread count.
#pragma once

#include <cstddef>

namespace dsgd {

constexpr size_t kChannelBlock = 8;

// How a tensor of activations is stored.
enum class ActivationLayout { cnhw, nchw8c };

// CNHW (C, N, HW) → nChw8c.
void cnhw_to_nchw8c(const float* in, float* out, size_t n, size_t c, size_t hw);
// nChw8c → CNHW; with accumulate, out += the converted values (one rounding, as out + v).
void nchw8c_to_cnhw(const float* in, float* out, size_t n, size_t c, size_t hw, bool accumulate);
// y[i] += x[i] for i < count (any layout; threads as above).
void add_into(float* y, const float* x, size_t count);

}  // namespace dsgd
