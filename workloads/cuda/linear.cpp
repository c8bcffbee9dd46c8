// See linear.hpp.
#include "workloads/cuda/linear.hpp"

#include "workloads/cuda/elementwise.hpp"
#include "workloads/cuda/gemm.hpp"

namespace dsgd {

void linear_forward_cuda(const GpuContext& g, const LinearShape& s, const float* x, const float* w, const float* b,
                         float* y) {
  const int n = int(s.n), in = int(s.in), out = int(s.out);
  // y (n×out) = x (n×in) · Wᵀ (W stored out×in).
  gemm(g, GemmShape{false, true, n, out, in, in, in, out}, 1.0f, x, w, 0.0f, y);
  if (b) bias_add_rows_cuda(y, b, s.n, s.out, g.stream());
}

void linear_backward_cuda(const GpuContext& g, const LinearShape& s, const float* x, const float* w, const float* dy,
                          float* dx, float* dw, float* db, bool accumulate) {
  const int n = int(s.n), in = int(s.in), out = int(s.out);
  // dx (n×in) = dy (n×out) · W (out×in).
  if (dx) gemm(g, GemmShape{false, false, n, in, out, out, in, in}, 1.0f, dy, w, 0.0f, dx);
  // dW (out×in) = dyᵀ (dy stored n×out) · x (n×in).
  gemm(g, GemmShape{true, false, out, in, n, out, in, in}, 1.0f, dy, x, accumulate ? 1.0f : 0.0f, dw);
  if (db) column_sum_cuda(dy, s.n, s.out, db, accumulate, g.stream());
}

}  // namespace dsgd
