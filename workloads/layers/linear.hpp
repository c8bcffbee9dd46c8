// Fully connected layer y = x Wᵀ + b on a batch, forward and backward, on SGEMM (oneDNN's
// dnnl_sgemm where the build has oneDNN, on --threads OpenMP threads; else OpenBLAS's),
// with a naive double-precision reference beside each for the tests. Shapes: x is n×in
// (row-major), W is out×in (row-major, PyTorch's nn.Linear layout), b has out entries,
// y is n×out. Shared by the ResNet head and every projection of the transformer.
#pragma once

#include <cstddef>

namespace dsgd {

struct LinearShape {
  size_t n = 0;    // rows of the batch (samples, or samples × positions)
  size_t in = 0;   // input features
  size_t out = 0;  // output features
};

// y = x Wᵀ + b (b may be null: no bias).
void linear_forward(const LinearShape& s, const float* x, const float* w, const float* b, float* y);
// From dy (n×out): dx = dy W (n×in; skipped when dx is null), dW = dyᵀ x (out×in),
// db = Σ_rows dy (skipped when db is null). accumulate=false overwrites dW/db,
// true adds to them (weights shared across calls).
void linear_backward(const LinearShape& s, const float* x, const float* w, const float* dy, float* dx, float* dw,
                     float* db, bool accumulate = false);

// Naive references (double accumulation), same contracts.
void linear_forward_naive(const LinearShape& s, const float* x, const float* w, const float* b, float* y);
void linear_backward_naive(const LinearShape& s, const float* x, const float* w, const float* dy, float* dx, float* dw,
                           float* db, bool accumulate = false);

}  // namespace dsgd
