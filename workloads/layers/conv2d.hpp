// 2-D convolution without bias (a BatchNorm follows every convolution of the ResNets), on
// im2col + one SGEMM per pass, with a naive direct-loop reference beside it for the tests.
// Layout: activations are CNHW ("channels outermost": x is (C, N, H, W) row-major), so the
// whole batch is one GEMM: y (Cout, N·Ho·Wo) = W (Cout, Cin·k·k) · col (Cin·k·k, N·Ho·Wo),
// and a channel's values are contiguous for BatchNorm. Weights are (Cout, Cin, k, k), the
// PyTorch layout. Square kernels, symmetric zero padding, equal strides.
// A 1×1 convolution with stride 1 and no padding reads x directly (no im2col copy). Other
// convolutions go through im2col in chunks of whole images of about kConvChunkCols columns
// (one SGEMM per chunk, writing its column range of y), so the col buffer stays in cache
// instead of streaming N·Ho·Wo·Cin·k² floats through memory.
// Threads: the GEMMs use the BLAS threads; im2col (by col row) and col2im (by input channel and
// image) split over the same count (layer_threads()) with OpenMP, each output written by one
// thread in a fixed order, so results do not depend on the thread count.
#pragma once

#include <cstddef>

namespace dsgd {

// Target columns (output pixels) per im2col chunk.
constexpr size_t kConvChunkCols = 4096;

struct Conv2dShape {
  size_t n = 0;       // batch
  size_t c_in = 0;    // input channels
  size_t h = 0;       // input height
  size_t w = 0;       // input width
  size_t c_out = 0;   // output channels
  size_t k = 3;       // kernel size (k×k)
  size_t stride = 1;  // stride (both directions)
  size_t pad = 1;     // zero padding (every side)

  size_t h_out() const { return (h + 2 * pad - k) / stride + 1; }
  size_t w_out() const { return (w + 2 * pad - k) / stride + 1; }
  size_t patch() const { return c_in * k * k; }          // K of the GEMM
  size_t cols() const { return n * h_out() * w_out(); }  // N of the GEMM
  size_t weight_count() const { return c_out * c_in * k * k; }
  // Images per im2col chunk (at least 1).
  size_t chunk_images() const {
    const size_t per = h_out() * w_out();
    const size_t k = per >= kConvChunkCols ? 1 : kConvChunkCols / per;
    return k < n ? k : n;
  }
  // Floats of the im2col scratch buffer (0 when the convolution reads x directly).
  size_t col_size() const { return direct() ? 0 : patch() * chunk_images() * h_out() * w_out(); }
  bool direct() const { return k == 1 && stride == 1 && pad == 0; }
  // Multiply-adds × 2 of the forward pass.
  double forward_flops() const { return 2.0 * double(c_out) * double(patch()) * double(cols()); }
};

// col (Cin·k·k, (n1−n0)·Ho·Wo) from images [n0, n1) of x (Cin, N, H, W).
void conv2d_im2col(const Conv2dShape& s, const float* x, size_t n0, size_t n1, float* col);
// Images [n0, n1) of dx (Cin, N, H, W) += scatter of dcol (Cin·k·k, (n1−n0)·Ho·Wo): the
// adjoint of im2col.
void conv2d_col2im_add(const Conv2dShape& s, const float* dcol, size_t n0, size_t n1, float* dx);

// y (Cout, N, Ho, Wo) = conv(x, w). col: scratch of s.col_size() floats.
void conv2d_forward(const Conv2dShape& s, const float* x, const float* w, float* y, float* col);
// dw (Cout, Cin, k, k) = gradient of the weights (overwritten). Recomputes im2col into col.
void conv2d_backward_weights(const Conv2dShape& s, const float* x, const float* dy, float* dw, float* col);
// dx (Cin, N, H, W) = gradient of the input, added to dx when accumulate, else overwritten.
// dcol: scratch of s.col_size() floats (unused for direct convolutions).
void conv2d_backward_input(const Conv2dShape& s, const float* w, const float* dy, float* dx, float* dcol,
                           bool accumulate);

// Naive references (direct loops, double accumulation), same layouts; dx and dw overwritten.
void conv2d_forward_naive(const Conv2dShape& s, const float* x, const float* w, float* y);
void conv2d_backward_naive(const Conv2dShape& s, const float* x, const float* w, const float* dy, float* dx, float* dw);

}  // namespace dsgd
