// Convolution on oneDNN (Debian libdnnl-dev 2.6): the second backend beside conv2d.hpp's
// im2col + SGEMM, used per layer where it measures faster (conv2d_pick_backend). Same
// semantics as conv2d.hpp: weights (Cout, Cin, k, k), no bias. The caller's activations are
// CNHW (as conv2d.hpp) or nChw8c (blocked_layout.hpp), chosen per object for the input and
// for the output (the gradients dx and dy take the layouts of x and y). The primitives choose
// their own memory formats; where one equals the caller's layout the primitive reads or
// writes the caller's memory directly, else the call converts (CNHW ↔ nChw8c by our own AVX
// transposes, anything else by oneDNN reorders), so a call costs what the step pays.
// Threads: oneDNN runs on OpenMP. Each call first sets OpenMP's thread count to OpenBLAS's
// (openblas_get_num_threads, which --threads sets), so one setting governs both, and the two
// pools never run at the same time (every call returns after its work is done). oneDNN fixes
// a primitive's thread count when it creates it: an object serves the thread count it was
// made under (threads()); make a new one when that changes.
// Built only where CMake found oneDNN (option DSGD_WITH_DNNL, define DSGD_HAVE_DNNL); without
// it conv2d_dnnl_available() is false and constructing a DnnlConv2d throws.
// Not thread-safe: one object per layer and batch size, used by one thread.
#pragma once

#include <memory>
#include <string>

#include "workloads/layers/blocked_layout.hpp"
#include "workloads/layers/conv2d.hpp"

namespace dsgd {

// im2col + SGEMM (conv2d.hpp), oneDNN (this file), or the direct 3×3 kernels on nChw8c
// (conv3x3_blocked.hpp; the ResNet uses them where its activations are nChw8c).
enum class ConvBackend { im2col, onednn, direct };

const char* conv_backend_name(ConvBackend b);
// Whether this build has the oneDNN backend.
bool conv2d_dnnl_available();
// The faster backend for shape s by the measured table in conv2d_dnnl.cpp (see there);
// im2col when oneDNN is absent.
ConvBackend conv2d_pick_backend(const Conv2dShape& s);

class DnnlConv2d {
 public:
  // The primitives for shape s (s.n is the batch; one object per batch size); x and dx in
  // layout `in`, y and dy in layout `out` (nchw8c needs a channel count divisible by 8).
  explicit DnnlConv2d(const Conv2dShape& s, ActivationLayout in = ActivationLayout::cnhw,
                      ActivationLayout out = ActivationLayout::cnhw);
  ~DnnlConv2d();
  DnnlConv2d(const DnnlConv2d&) = delete;
  DnnlConv2d& operator=(const DnnlConv2d&) = delete;

  const Conv2dShape& shape() const { return s_; }
  int threads() const { return threads_; }
  // The thread count an object made now would use (OpenBLAS's).
  static int current_threads();
  // The bytes an object for (s, in, out) made now allocates (its operand copies and weight
  // formats, as oneDNN picks them for this CPU; its scratchpads are oneDNN's, not counted).
  static double buffer_bytes(const Conv2dShape& s, ActivationLayout in = ActivationLayout::cnhw,
                             ActivationLayout out = ActivationLayout::cnhw);
  ActivationLayout in_layout() const { return in_; }
  ActivationLayout out_layout() const { return out_; }
  // y (N, Cout, Ho, Wo, in the output layout) = conv(x, w).
  void forward(const float* x, const float* w, float* y);
  // dw (Cout, Cin, k, k) overwritten. x must be unchanged since the latest forward() that
  // read the same pointer (its converted copy is reused); another pointer is converted anew.
  void backward_weights(const float* x, const float* dy, float* dw);
  // dx (input layout) = input gradient, added to dx when accumulate, else overwritten. When
  // called right after backward_weights with the same dy pointer, dy must be unchanged (its
  // converted copy is reused).
  void backward_input(const float* w, const float* dy, float* dx, bool accumulate);

 private:
  struct Impl;
  Conv2dShape s_;
  ActivationLayout in_ = ActivationLayout::cnhw, out_ = ActivationLayout::cnhw;
  int threads_ = 1;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dsgd
