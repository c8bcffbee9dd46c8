// Global average pooling from a CNHW activation to the rows of the classifier head:
// x is (C, N, H·W), y is (N, C) row-major (the linear layer's input layout).
//   forward  y[n, c] = mean over H·W of x[c, n, :]
//   backward dx[c, n, :] = dy[n, c] / (H·W)
// The _blocked forms take an nChw8c x / dx (blocked_layout.hpp; C a multiple of 8).
// No max pooling: the CIFAR-form ResNets here do not use it.
#pragma once

#include <cstddef>

namespace dsgd {

struct PoolShape {
  size_t c = 0;   // channels
  size_t n = 0;   // batch
  size_t hw = 0;  // H·W
};

void global_avg_pool_forward(const PoolShape& s, const float* x, float* y);
void global_avg_pool_backward(const PoolShape& s, const float* dy, float* dx);

void global_avg_pool_blocked_forward(const PoolShape& s, const float* x, float* y);
void global_avg_pool_blocked_backward(const PoolShape& s, const float* dy, float* dx);

void global_avg_pool_forward_naive(const PoolShape& s, const float* x, float* y);

}  // namespace dsgd
