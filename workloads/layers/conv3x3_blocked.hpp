// Hand-written AVX2/FMA direct convolutions for one case: 3×3 kernels, stride 1, padding 1,
// input and output channel counts multiples of 8 (ResNet-20's 16→16 @28², 32→32 @14²,
// 64→64 @7²), on activations in oneDNN's nChw8c layout, faster than oneDNN 2.6's jit:avx2
// kernels on these shapes (bench/bench_conv3x3.cpp). Up to 12 ymm accumulators stay in
// registers for a whole output sum, and the forward kernel reuses each broadcast input value
// for all three kw taps (fewer loads per FMA: the loads, not the FMAs, limit these loops on
// Zen 3). Reference: conv2d.hpp's naive loops (the tests convert CNHW ↔ nChw8c).
// Measured (bench_conv3x3 --threads 1,2 --reps 15, n = 128, quiet machine, FMA peak ~92
// GFLOP/s per core): 78-96 GFLOP/s on 1 thread, 136-165 on 2; against oneDNN's raw primitive
// on the same nChw8c tensors, forward 1.18-1.66x, weight gradient 1.26-1.63x, input gradient
// 1.02-1.39x (oneDNN's backward-data kernel is strong on 16→16 @28²: parity there on 1 thread).
//
// Layouts. Activations nChw8c: (N, C/8, H, W, 8), channel c of image n at
// ((n·(C/8) + c/8)·H·W + pixel)·8 + c%8. Weights in the user layout OIHW (Cout, Cin, 3, 3) as
// in conv2d.hpp; each call repacks them (≤ 37k floats) into the kernels' blocked layout.
//
// Threads: OpenMP with OpenBLAS's thread count (layer_threads()). forward / backward_input
// split over (group of 1-3 images, block of 8 output channels), backward_weights over
// (output block, input block, kh, input-lane half); every output value is computed by one
// thread in a fixed summation order, so results are bitwise the same at any thread count.
//
// Needs a CPU with AVX2 and FMA, checked at run time (a portable -DDSGD_NATIVE=OFF build
// compiles the kernels for AVX2 + FMA alone and calls them only on such a CPU): elsewhere
// conv3x3_blocked_supported() is false for every shape and the constructor throws.
// Not thread-safe: one object per layer and batch size, used by one thread (scratch buffers
// are members, sized in the constructor; no call allocates).
#pragma once

#include <vector>

#include "workloads/layers/conv2d.hpp"

namespace dsgd {

// True when the kernels can run here: an x86-64 build on a CPU with AVX2 and FMA (asked of
// the CPU at run time, whatever the build's -march).
bool conv3x3_blocked_cpu_supported();
// True when s is a shape these kernels take: k == 3, stride == 1, pad == 1, c_in % 8 == 0,
// c_out % 8 == 0, n, h, w > 0, and conv3x3_blocked_cpu_supported().
bool conv3x3_blocked_supported(const Conv2dShape& s);

class BlockedConv3x3 {
 public:
  // Throws InputError (core/errors.hpp) when !conv3x3_blocked_supported(s).
  explicit BlockedConv3x3(const Conv2dShape& s);
  const Conv2dShape& shape() const { return s_; }

  // y (N, Cout/8, H, W, 8) = conv(x (N, Cin/8, H, W, 8), w (Cout, Cin, 3, 3)); y overwritten.
  void forward(const float* x, const float* w, float* y);
  // dw (Cout, Cin, 3, 3) = Σ over images and pixels of dy ⊗ shifted x; overwritten.
  void backward_weights(const float* x, const float* dy, float* dw);
  // dx (N, Cin/8, H, W, 8) = conv(dy, w flipped and transposed): overwritten, or, when
  // accumulate, summed onto what dx holds (the old value starts the sum).
  void backward_input(const float* w, const float* dy, float* dx, bool accumulate);

 private:
  Conv2dShape s_;
  std::vector<float> w_fwd_, w_bwd_;  // repacked weights (forward; flipped and transposed)
  std::vector<float> dw_acc_;         // backward_weights' blocked partial sums
};

}  // namespace dsgd
