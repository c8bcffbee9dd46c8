// oldsgd: overlapping local decentralized SGD (OLDSGD): D-PSGD's gossip (algorithms/dpsgd.cpp,
// the --topology's mixing matrix W, point-to-point exchange with the neighbours) once every H
// local steps, the exchange overlapped with the next H local steps:
//   after every H-th step:  wait for the exchange of the last round's snapshots s_j;
//                           x_i ← Σ_j W_ij s_j + (x_i − s_i);  s_i ← x_i;  launch the exchange
//   at the last step:       the exchange in flight is waited for and applied
// H = --period; --gossip-overlap false: the blocking adapt-then-combine mix x_i ← Σ_j W_ij x_j
// after every H-th step instead (local SGD with gossip averaging). With H = 1, blocking is dpsgd
// bit for bit and overlapped is dpsgd --dpsgd-delay 1 bit for bit (the same code paths).
// Bytes sent per step by rank i: d_i·4|x| / H (d_i its degree; recorded at the step that waits);
// bytes_sent_per_step reports the mean over ranks. Memory: dpsgd's plus the mixed copy.
#include <algorithm>

#include "algorithms/algorithm.hpp"
#include "algorithms/dpsgd.hpp"
#include "algorithms/timing_rules.hpp"
#include "algorithms/variant.hpp"
#include "cluster/backends.hpp"

namespace dsgd {

namespace {

std::unique_ptr<Algorithm> algorithm_create_oldsgd(const RunConfig& cfg) {
  return dpsgd_create(cfg, "oldsgd", cfg.gossip_overlap, cfg.period);
}

// Timing-only (--gossip-overlap false): dpsgd's gossip after every H-th step, local steps between.
void oldsgd_timing(const SimTimingPlan& plan, SimTimingState& state, int64_t step, std::vector<double>& clock,
                   SimStepTiming* rows) {
  if ((step + 1) % std::max<int64_t>(1, plan.period) == 0) {
    timing_step_gossip(plan, state, step, clock, rows);
  } else {
    timing_step_allreduce(plan, step, clock, rows, false, true);
  }
}

}  // namespace

const Variant& variant_oldsgd() {
  static const Variant v = [] {
    Variant v;
    v.name = "oldsgd";
    v.description = "OLDSGD: gossip with the topology's neighbours every H local steps, overlapped with the next H";
    v.knobs = "--period H, --topology, --gossip-overlap";
    v.flags = {{"gossip-overlap"}};
    v.takes_period = true;
    v.no_compress = "it exchanges models point-to-point with its neighbours (gossip), not by all-reduce";
    v.create = algorithm_create_oldsgd;
    v.needs = [](const RunConfig&) -> uint32_t { return cap_point_to_point; };
    v.timing = oldsgd_timing;
    v.timing_applies = [](const RunConfig& cfg) { return !cfg.gossip_overlap; };
    v.timing_text = "oldsgd (--gossip-overlap false, static topology)";
    v.timing_needs_neighbors = true;
    v.reads_topology = true;
    v.model_passes = true;
    return v;
  }();
  return v;
}

}  // namespace dsgd
