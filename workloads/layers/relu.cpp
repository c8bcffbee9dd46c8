// See relu.hpp. Branch-free loops the compiler vectorises.
#include "workloads/layers/relu.hpp"

#include "workloads/layers/layer_threads.hpp"

namespace dsgd {

void relu_forward(const float* x, float* y, size_t n) {
  [[maybe_unused]] const int t = layer_threads();
#ifdef _OPENMP
#pragma omp parallel for num_threads(t) schedule(static) if (t > 1 && n >= kParallelMinFloats)
#endif
  for (size_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void relu_backward(const float* y, const float* dy, float* dx, size_t n, bool add) {
  [[maybe_unused]] const int t = layer_threads();
  if (add) {
#ifdef _OPENMP
#pragma omp parallel for num_threads(t) schedule(static) if (t > 1 && n >= kParallelMinFloats)
#endif
    for (size_t i = 0; i < n; ++i) dx[i] += y[i] > 0.0f ? dy[i] : 0.0f;
    return;
  }
#ifdef _OPENMP
#pragma omp parallel for num_threads(t) schedule(static) if (t > 1 && n >= kParallelMinFloats)
#endif
  for (size_t i = 0; i < n; ++i) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

void add_relu_forward(const float* a, const float* b, float* y, size_t n) {
  [[maybe_unused]] const int t = layer_threads();
#ifdef _OPENMP
#pragma omp parallel for num_threads(t) schedule(static) if (t > 1 && n >= kParallelMinFloats)
#endif
  for (size_t i = 0; i < n; ++i) {
    const float v = a[i] + b[i];
    y[i] = v > 0.0f ? v : 0.0f;
  }
}

namespace {
template <bool AddA, bool AddB>
void add_relu_backward_t(const float* y, const float* dy, float* da, float* db, size_t n) {
  [[maybe_unused]] const int t = layer_threads();
#ifdef _OPENMP
#pragma omp parallel for num_threads(t) schedule(static) if (t > 1 && n >= kParallelMinFloats)
#endif
  for (size_t i = 0; i < n; ++i) {
    const float g = y[i] > 0.0f ? dy[i] : 0.0f;
    da[i] = AddA ? da[i] + g : g;
    db[i] = AddB ? db[i] + g : g;
  }
}
}  // namespace

void add_relu_backward(const float* y, const float* dy, float* da, bool add_a, float* db, bool add_b, size_t n) {
  if (add_a)
    add_b ? add_relu_backward_t<true, true>(y, dy, da, db, n) : add_relu_backward_t<true, false>(y, dy, da, db, n);
  else
    add_b ? add_relu_backward_t<false, true>(y, dy, da, db, n) : add_relu_backward_t<false, false>(y, dy, da, db, n);
}

void relu_forward_naive(const float* x, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (x[i] > 0.0f)
      y[i] = x[i];
    else
      y[i] = 0.0f;
  }
}

void relu_backward_naive(const float* y, const float* dy, float* dx, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (y[i] > 0.0f)
      dx[i] = dy[i];
    else
      dx[i] = 0.0f;
  }
}

}  // namespace dsgd
