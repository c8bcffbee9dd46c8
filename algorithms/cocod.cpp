// cocod: CoCoD-SGD (Shen et al. 2019, "Faster Distributed Deep Net Training: Computation
// and Communication Decoupled Stochastic Gradient Descent", IJCAI; Algorithm 1).
// Every k = --period steps each worker snapshots its model, s_i ← x_i, and launches a
// non-blocking all-reduce of s_i that runs during the next k local steps; at the next sync
// point (k steps later) it waits, applies x_i ← avg_j s_j + (x_i − s_i), and snapshots and
// launches again, so communication of round r overlaps computation of round r+1.
// This is delayed averaging with delay d = k (algorithms/delayed_average.hpp); dasgd exposes
// d separately, and with d = 0 it is localsgd. Bytes per step per worker (ring):
// 2(n−1)/n·|x|·4 / k.
// --compress KIND: the snapshot's difference to the last applied average is compressed
// with error feedback and aggregated in the background (delayed_average.hpp); bytes per
// step are the compressor's bytes per call / k.
#include "algorithms/config_check.hpp"
#include "algorithms/delayed_average.hpp"
#include "algorithms/timing_rules.hpp"
#include "algorithms/variant.hpp"

namespace dsgd {

std::unique_ptr<Algorithm> algorithm_create_cocod(const RunConfig& cfg) {
  return std::make_unique<DelayedAveraging>("cocod", cfg.period, cfg.period, cfg.compress, cfg.seed);
}

const Variant& variant_cocod() {
  static const Variant v = [] {
    Variant v;
    v.name = "cocod";
    v.description = "CoCoD-SGD: snapshot all-reduce overlapping the next k local steps";
    v.knobs = "--period k";
    v.takes_period = true;
    v.create = algorithm_create_cocod;
    // Timing-only: the average launched every k steps and waited for k steps later.
    v.timing = [](const SimTimingPlan& plan, SimTimingState& state, int64_t step, std::vector<double>& clock,
                  SimStepTiming* rows) { timing_step_background(plan, state, step, clock, rows, plan.period, true); };
    return v;
  }();
  return v;
}

}  // namespace dsgd
