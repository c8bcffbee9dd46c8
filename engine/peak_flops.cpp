// See peak_flops.hpp.
#include "engine/peak_flops.hpp"

#include <cblas.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "core/clock.hpp"

namespace dsgd {

double sgemm_flops_measure(int n, int reps) {
  const size_t size = static_cast<size_t>(n) * static_cast<size_t>(n);
  std::vector<float> a(size, 0.5f), b(size, 0.25f), c(size, 0.0f);
  double best = 0;
  for (int rep = 0; rep <= reps; ++rep) {
    const double t0 = clock_now_s();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    const double dt = clock_now_s() - t0;
    if (rep > 0 && dt > 0) best = std::max(best, 2.0 * double(n) * double(n) * double(n) / dt);
  }
  return best > 0 ? best : 1e9;
}

double peak_flops_measure(int threads) {
  return sgemm_flops_measure(threads <= 1 ? 256 : 512, 10);
}

}  // namespace dsgd
