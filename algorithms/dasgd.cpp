// dasgd: local SGD with delayed averaging (DaSGD, Zhou et al. 2020, "DaSGD: Squeezing SGD
// Parallelization Performance in Distributed Training Using Delayed Averaging").
// Local steps; after every H-th step (H = --period) each worker snapshots s_i ← x_i and
// launches a non-blocking all-reduce of it; d = --delay steps later (0 ≤ d ≤ H) it applies
//   x_i ← avg_j s_j + (x_i − s_i)
// so the average of the models at the sync point replaces them while the local progress
// of the d overlapped steps is kept (algorithms/delayed_average.hpp). d = 0 is localsgd
// (bit-identical); d = H is cocod. Bytes per step per worker (ring): 2(n−1)/n·|x|·4 / H.
// --compress KIND: the snapshot's difference to the last applied average is compressed
// with error feedback and aggregated in the background (delayed_average.hpp); d = 0 is
// localsgd --compress KIND (bit-identical).
#include "algorithms/config_check.hpp"
#include "algorithms/delayed_average.hpp"
#include "algorithms/timing_rules.hpp"
#include "algorithms/variant.hpp"

namespace dsgd {

std::unique_ptr<Algorithm> algorithm_create_dasgd(const RunConfig& cfg) {
  return std::make_unique<DelayedAveraging>("dasgd", cfg.period, cfg.delay, cfg.compress, cfg.seed);
}

namespace {

void dasgd_validate(const RunConfig& cfg) {
  if (cfg.delay < 0 || cfg.delay > cfg.period)
    config_fail("delay", fmt::format("must be in 0..H = 0..{} (got {})", cfg.period, cfg.delay),
                "an average must be applied before the next one starts: pass --delay at most --period");
}

}  // namespace

const Variant& variant_dasgd() {
  static const Variant v = [] {
    Variant v;
    v.name = "dasgd";
    v.description = "local SGD with delayed averaging: an average applied d steps after it started";
    v.knobs = "--period H, --delay d";
    v.flags = {{"delay"}};
    v.takes_period = true;
    v.validate = dasgd_validate;
    v.create = algorithm_create_dasgd;
    // Timing-only: the average launched every H steps and waited for d steps later.
    v.timing = [](const SimTimingPlan& plan, SimTimingState& state, int64_t step, std::vector<double>& clock,
                  SimStepTiming* rows) { timing_step_background(plan, state, step, clock, rows, plan.delay, true); };
    v.timing_plan = [](const RunConfig& cfg, SimTimingPlan& plan) { plan.delay = cfg.delay; };
    return v;
  }();
  return v;
}

}  // namespace dsgd
