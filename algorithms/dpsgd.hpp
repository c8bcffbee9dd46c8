// dpsgd's check of a topology (algorithms/dpsgd.cpp), exposed for tests, and its gossip
// algorithm with rounds every H steps, shared with oldsgd (algorithms/oldsgd.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "cluster/topology.hpp"
#include "core/run_config.hpp"

namespace dsgd {

// Throws InputError naming --topology when gossip cannot mix on t (n ≥ 2): a rank of a
// static topology without neighbours, or spectral gap 0 (disconnected).
void dpsgd_check_topology(const Topology& t);

class Algorithm;
// The gossip algorithm on cfg's topology with a round every `period` steps, blocking
// (adapt-then-combine) or overlapped with the next round's local steps (dpsgd.cpp's comment);
// dpsgd is period 1 with overlap = --dpsgd-delay 1, oldsgd the general case. `name` is the
// registry name it reports.
std::unique_ptr<Algorithm> dpsgd_create(const RunConfig& cfg, const std::string& name, bool overlap, int64_t period);

}  // namespace dsgd
