// Test helper: the options of a SimWorld of n workers on one α-β link with the ring
// algorithm (the collective times the virtual-time tests check against the formulas).
#pragma once

#include <optional>

#include "cluster/sim_world.hpp"

namespace dsgd {

inline SimWorldOptions sim_ring_options(int n, double alpha, double bytes_per_s) {
  SimWorldOptions o;
  o.workers = n;
  o.network = NetworkModel{LinkModel{alpha, bytes_per_s}, std::nullopt, 1};
  o.algo = CollAlgo::algo_ring;
  return o;
}

}  // namespace dsgd
