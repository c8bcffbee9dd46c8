// Rectified linear unit, elementwise on any layout: y = max(x, 0); backward from the output,
// dx = dy where y > 0, else 0 (so the forward may run in place). Also the fused residual
// join of the ResNet blocks, y = max(a + b, 0). Naive references are the same loops written
// plainly (these kernels are simple enough that the tests check them against std::max).
#pragma once

#include <cstddef>

namespace dsgd {

void relu_forward(const float* x, float* y, size_t n);  // y may alias x
// dx = dy · [y > 0] (dx += that when add); dx may alias dy when !add.
void relu_backward(const float* y, const float* dy, float* dx, size_t n, bool add = false);
// y = max(a + b, 0); y may alias a or b.
void add_relu_forward(const float* a, const float* b, float* y, size_t n);
// The residual join's backward in one pass: g = dy · [y > 0] goes to both branches,
// da = g (or da += g when add_a), db likewise. da and db must not alias each other or dy.
void add_relu_backward(const float* y, const float* dy, float* da, bool add_a, float* db, bool add_b, size_t n);

void relu_forward_naive(const float* x, float* y, size_t n);
void relu_backward_naive(const float* y, const float* dy, float* dx, size_t n);

}  // namespace dsgd
