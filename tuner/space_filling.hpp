// Space-filling designs over [0,1]^d for the space-filling third of the tuner's initial design
// (DESIGN §8, strategy step 2). A scrambled Latin hypercube: each of the d coordinates of the n
// points hits each of the n strata [i/n, (i+1)/n) exactly once, the stratum order per
// coordinate a seeded random permutation and the position inside the stratum uniform. Of
// `candidates` such designs drawn from the seed the one with the largest minimum pairwise
// distance is kept (maximin), which avoids the diagonal-like hypercubes that plain LHS can give.
// Deterministic for a seed (dsgd::Rng: the same points on every platform).
#pragma once

#include <Eigen/Dense>
#include <cstdint>

namespace dsgd {

// n x d points, one per row. n >= 1, d >= 1, candidates >= 1; else dsgd::Error.
Eigen::MatrixXd space_filling_latin_hypercube(int n, int d, uint64_t seed, int candidates = 16);

// Smallest Euclidean distance between two rows (infinity for fewer than two rows).
double space_filling_min_distance(const Eigen::MatrixXd& points);

}  // namespace dsgd
