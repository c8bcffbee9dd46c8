// dpsgd's check of a topology (algorithms/dpsgd.cpp), exposed for tests.
#pragma once

#include "cluster/topology.hpp"

namespace dsgd {

// Throws InputError naming --topology when gossip cannot mix on t (n ≥ 2): a rank of a
// static topology without neighbours, or spectral gap 0 (disconnected).
void dpsgd_check_topology(const Topology& t);

}  // namespace dsgd
