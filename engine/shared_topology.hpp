// One topology per process for each (spec, workers, seed), shared read-only by every worker
// that asks for it: the sim backend's N workers would otherwise each compute the N×N mixing
// matrix and its spectral gap (an eigenvalue problem, ~40 ms for N = 256) and hold N copies
// of the matrix (8 MB each for N = 1024). An MPI rank loads it once as before.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "cluster/topology.hpp"

namespace dsgd {

// topology_make(spec, workers, seed), made at most once at a time per key; thread-safe.
std::shared_ptr<const Topology> topology_make_shared(const std::string& spec, int workers, uint64_t seed);

}  // namespace dsgd
