// Seeded maximin scrambled Latin hypercube (see space_filling.hpp).
#include "tuner/space_filling.hpp"

#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "core/errors.hpp"
#include "core/rng.hpp"

namespace dsgd {

double space_filling_min_distance(const Eigen::MatrixXd& points) {
  double best = std::numeric_limits<double>::infinity();
  for (Eigen::Index i = 0; i < points.rows(); ++i)
    for (Eigen::Index j = i + 1; j < points.rows(); ++j)
      best = std::min(best, (points.row(i) - points.row(j)).squaredNorm());
  return std::sqrt(best);
}

Eigen::MatrixXd space_filling_latin_hypercube(int n, int d, uint64_t seed, int candidates) {
  if (n < 1 || d < 1 || candidates < 1)
    DSGD_THROW(Error, "", "space_filling_latin_hypercube: n {}, d {}, candidates {} must all be >= 1", n, d,
               candidates);
  Rng rng(rng_derive_seed(seed, 0x4c48u));
  std::vector<int> perm(static_cast<size_t>(n));
  Eigen::MatrixXd best, design(n, d);
  double best_dist = -1;
  for (int c = 0; c < candidates; ++c) {
    for (int k = 0; k < d; ++k) {
      std::iota(perm.begin(), perm.end(), 0);
      rng.shuffle(perm.data(), static_cast<uint64_t>(n));
      for (int i = 0; i < n; ++i) {
        double x = (perm[static_cast<size_t>(i)] + rng.uniform()) / n;
        // (p + u)/n with u < 1 can round up to (p+1)/n; keep it inside its stratum.
        if (x >= static_cast<double>(perm[static_cast<size_t>(i)] + 1) / n)
          x = std::nextafter(static_cast<double>(perm[static_cast<size_t>(i)] + 1) / n, 0.0);
        design(i, k) = x;
      }
    }
    const double dist = space_filling_min_distance(design);
    if (dist > best_dist) {  // strictly larger: the first of equals wins
      best_dist = dist;
      best = design;
    }
  }
  return best;
}

}  // namespace dsgd
