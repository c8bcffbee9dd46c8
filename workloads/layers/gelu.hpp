// GELU activation, the tanh approximation used by GPT-2 (and PyTorch's
// nn.GELU(approximate="tanh")): y = ½x(1 + tanh(√(2/π)(x + 0.044715x³))). Elementwise on n
// floats; forward and backward with a double-precision naive reference beside each.
#pragma once

#include <cstddef>

namespace dsgd {

void gelu_forward(const float* x, float* y, size_t n);
// dx = dy · gelu'(x); dx may alias dy.
void gelu_backward(const float* x, const float* dy, float* dx, size_t n);

void gelu_forward_naive(const float* x, float* y, size_t n);
void gelu_backward_naive(const float* x, const float* dy, float* dx, size_t n);

}  // namespace dsgd
