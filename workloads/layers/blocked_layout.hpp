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

#include "workloads/layers/layer_threads.hpp"

namespace dsgd {

constexpr size_t kChannelBlock = 8;

// How a tensor of activations is stored.
enum class ActivationLayout { cnhw, nchw8c };

// CNHW (C, N, HW) → nChw8c.
void cnhw_to_nchw8c(const float* in, float* out, size_t n, size_t c, size_t hw);
// nChw8c → CNHW; with accumulate, out += the converted values (one rounding, as out + v).
void nchw8c_to_cnhw(const float* in, float* out, size_t n, size_t c, size_t hw, bool accumulate);
// f(image i, channel block b) for every i < n, b < blocks: split over layer_threads() threads
// when the tensor (floats) is large enough (kParallelMinFloats), each pair on one thread.
template <class F>
void for_each_image_block(size_t n, size_t blocks, size_t floats, F f) {
  const long work = static_cast<long>(n * blocks);
  [[maybe_unused]] const int t = layer_threads();
#ifdef _OPENMP
#pragma omp parallel for num_threads(t) schedule(static) if (t > 1 && floats >= kParallelMinFloats)
#endif
  for (long it = 0; it < work; ++it) f(static_cast<size_t>(it) / blocks, static_cast<size_t>(it) % blocks);
}

// y[i] += x[i] for i < count (any layout; threads as above).
void add_into(float* y, const float* x, size_t count);

}  // namespace dsgd
