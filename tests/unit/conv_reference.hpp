// The naive convolution (workloads/layers/conv2d.hpp, double accumulation) of every pass,
// with what float_compare.hpp needs to judge a fast kernel against it: per output, Σ|t_i|
// (the same naive pass on |x|, |w|, |dy|: a convolution is bilinear, so that is exactly the
// sum of the absolute products), and per pass the reduction length k. All in CNHW.
#pragma once

#include <string>
#include <vector>

#include "float_compare.hpp"
#include "workloads/layers/conv2d.hpp"

namespace dsgd::testing {

struct ConvReference {
  std::vector<float> y, dx, dw;              // the naive results
  std::vector<float> y_abs, dx_abs, dw_abs;  // Σ|t_i| of each output
  size_t k_y = 0, k_dx = 0, k_dw = 0;        // terms per output (an upper bound)
};

inline ConvReference conv_reference(const Conv2dShape& s, const std::vector<float>& x, const std::vector<float>& w,
                                    const std::vector<float>& dy) {
  ConvReference r;
  const size_t ny = s.c_out * s.cols(), nx = x.size();
  r.y.resize(ny);
  r.y_abs.resize(ny);
  r.dx.resize(nx);
  r.dx_abs.resize(nx);
  r.dw.resize(w.size());
  r.dw_abs.resize(w.size());
  conv2d_forward_naive(s, x.data(), w.data(), r.y.data());
  conv2d_backward_naive(s, x.data(), w.data(), dy.data(), r.dx.data(), r.dw.data());
  const auto ax = abs_of(x), aw = abs_of(w), ady = abs_of(dy);
  conv2d_forward_naive(s, ax.data(), aw.data(), r.y_abs.data());
  conv2d_backward_naive(s, ax.data(), aw.data(), ady.data(), r.dx_abs.data(), r.dw_abs.data());
  r.k_y = s.c_in * s.k * s.k;            // y: over input channels and taps
  r.k_dx = s.c_out * s.k * s.k;          // dx: over output channels and the taps that reach it
  r.k_dw = s.n * s.h_out() * s.w_out();  // dW: over images and output pixels
  return r;
}

// ref + v elementwise (the expected value of a pass that accumulates onto v); the matching
// Σ|t_i| is abs_sum + |v|, with one more term.
inline std::vector<float> plus(const std::vector<float>& ref, const std::vector<float>& v) {
  std::vector<float> out(ref.size());
  for (size_t i = 0; i < ref.size(); ++i) out[i] = ref[i] + v[i];
  return out;
}
inline std::vector<float> abs_plus(const std::vector<float>& abs_sum, const std::vector<float>& v) {
  std::vector<float> out(abs_sum.size());
  for (size_t i = 0; i < abs_sum.size(); ++i) out[i] = abs_sum[i] + std::fabs(v[i]);
  return out;
}

}  // namespace dsgd::testing
