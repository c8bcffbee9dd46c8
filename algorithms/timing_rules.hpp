// Timing-only step rules (cluster/sim_timing.hpp) shared by several variants' registry
// entries: the arithmetic of one blocking all-reduce of the model or gradient per step, and
// the neighbour exchange of gossip. Each rule reproduces what the threaded simulator's
// SimCommunicator does for the same calls (cluster/sim_world.hpp).
#pragma once

#include <cstdint>
#include <vector>

#include "cluster/sim_timing.hpp"

namespace dsgd {

// One blocking all-reduce of |x|·4 bytes per step, or none:
//   arrive_i = start_i + data + fwd + bwd + δ_i (+ opt when after_update);
//   communicating: A = max_j arrive_j, T = A + model(all-reduce, |x|·4, n), wait_i = A − arrive_i,
//                  comm_i = T − A, end_i = T (+ opt when the all-reduce precedes the update);
//   otherwise end_i = arrive_i (+ opt when not after_update).
void timing_step_allreduce(const SimTimingPlan& plan, int64_t step, std::vector<double>& clock, SimStepTiming* rows,
                           bool communicate, bool after_update);

// Gossip with the static topology's neighbours after the local update (dpsgd --dpsgd-delay 0):
// a_i = start_i + data + fwd + bwd + δ_i + opt; the message to the k-th neighbour j arrives at
// a_i + α_ij + Σ_{m≤k} S/B_m; end_i = max(a_i + Σ_k S/B_k, arrivals at i); wait/comm split as
// the recorder does (docs/metrics.md): wait_i = min(end_i, max_j a_j) − a_i, comm_i = end_i − a_i − wait_i.
void timing_step_gossip(const SimTimingPlan& plan, int64_t step, std::vector<double>& clock, SimStepTiming* rows);

}  // namespace dsgd
