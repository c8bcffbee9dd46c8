// Central finite differences for layer gradient tests: perturbs each input of a scalar
// function f (computed by the layer's float forward, accumulated in double) by ±h and
// compares (f(x+h) − f(x−h)) / 2h with the analytic gradient. Tolerance: float32 forward
// passes carry relative rounding ~1e-7 × |terms|, so with h = 1e-2 on O(1) inputs the
// difference quotient is accurate to ~1e-4 (truncation error O(h²) ~1e-4 for smooth
// layers); tests use |fd − analytic| ≤ atol + rtol·|analytic| with atol 2e-3, rtol 2e-2
// unless they say why otherwise.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/rng.hpp"

namespace dsgd::testing {

struct GradCheckTolerance {
  double atol = 2e-3;
  double rtol = 2e-2;
  double h = 1e-2;
};

// f: evaluates the scalar objective at the current contents of `x`.
// analytic: the gradient of f with respect to x (same size). `what` names the input.
inline void expect_gradient_matches(const std::function<double()>& f, std::vector<float>& x,
                                    const std::vector<float>& analytic, const std::string& what,
                                    GradCheckTolerance tol = {}) {
  ASSERT_EQ(x.size(), analytic.size()) << what;
  int reported = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float saved = x[i];
    x[i] = static_cast<float>(saved + tol.h);
    const double plus = f();
    x[i] = static_cast<float>(saved - tol.h);
    const double minus = f();
    x[i] = saved;
    const double fd = (plus - minus) / (2 * tol.h);
    const double err = std::fabs(fd - analytic[i]);
    if (err > tol.atol + tol.rtol * std::fabs(analytic[i]) && reported < 5) {
      ADD_FAILURE() << what << "[" << i << "]: finite difference " << fd << " vs analytic " << analytic[i];
      ++reported;
    }
  }
}

// A projection objective Σ_k r_k·y_k with fixed pseudo-random weights r, so that every
// output of a layer contributes to the checked gradient (dy = r).
inline std::vector<float> projection_weights(size_t n, unsigned seed = 7) {
  std::vector<float> r(n);
  unsigned s = seed;
  for (auto& v : r) {
    s = s * 1664525u + 1013904223u;
    v = static_cast<float>((s >> 8) & 0xFFFF) / 65536.0f - 0.5f;
  }
  return r;
}

// n standard-normal floats from Rng(seed): test inputs shaped like gradients.
inline std::vector<float> normal_vector(size_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(rng.normal());
  return v;
}

inline double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double acc = 0;
  for (size_t i = 0; i < a.size(); ++i) acc += double(a[i]) * b[i];
  return acc;
}

}  // namespace dsgd::testing
