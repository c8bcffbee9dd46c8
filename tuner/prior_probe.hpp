// The probe of the tuner's theory prior (DESIGN §8, strategy step 2; the model is
// tuner/prior.hpp): short real runs that measure what the prior needs about the workload and
// the target and that does not depend on the network.
//
// Every probe run is a configuration of the search space trained through the engine's sim path
// (sim_run_unstored, the code of `dsgd-bench run --backend sim`) on the session's workers, but
// on an ideal link (10 Tbit/s, no latency, no stragglers): the algorithms the prior covers are
// synchronous and the simulation is deterministic, so their numerics, hence their steps to the
// target, are the same on any network; only the clock differs, and the step time is the
// timing-only model's business (tuner/prior.hpp prior_step_times). Each run stops at its first
// evaluation at or past the target (one every kProbeEvalEvery steps), or at max_steps (then
// censored: steps >= max_steps). The points (prior_probe_points):
//   - "sync":       ssgd at the smallest batch of the space, the first lr rule;
//   - "sync-batch": ssgd at the largest batch (when the space has two batches or more);
//   - "period":     per algorithm of the space with a sync period H, at the largest H of the
//                   space (> 1), the smallest batch;
//   - "gossip":     per gossip algorithm of the space (dpsgd, adpsgd), on the topology of the
//                   space with the smallest spectral gap, the smallest batch.
// And the gradient noise scale (McCandlish et al. 2018, tuner/noise_scale.hpp) along the
// "sync" run's trajectory: at its initial model and at its models after S/2 and S steps (S its
// steps to the target; two more runs of that length give those models), with the workload's own
// forward and backward: per draw, `workers` disjoint batches of the per-worker batch b give
// |G_b|² (the mean over workers of their gradients' squared norms) and |G_Nb|² (the squared norm
// of their average) — the per-worker and the averaged gradient of one data-parallel step — and
// NoiseScaleAccumulator averages both estimators over every draw and point before the ratio.
// The gradient is the one of the mean data loss (the workload's backward; the L2 term of
// --weight-decay is deterministic, so it changes |G|² only, and is left out).
//
// Cost: the probe's simulated seconds (every run, compute only on the ideal link) count in the
// session's budget; its real seconds are reported. Stored with the session (tuner/prior_store.hpp),
// so --resume does not run it again.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "results/store.hpp"
#include "tuner/noise_scale.hpp"
#include "tuner/search_space.hpp"
#include "workloads/datasets/dataset.hpp"
#include "workloads/workload.hpp"

namespace dsgd {

struct TunePlan;

constexpr int64_t kProbeMaxSteps = 600;  // a probe run stops here when the target is not reached
constexpr int64_t kProbeEvalEvery = 2;   // steps between a probe run's evaluations
constexpr int kProbeNoiseDraws = 8;      // data-parallel steps measured per trajectory point

struct ProbePoint {
  std::string role;  // sync | sync-batch | period | gossip
  Candidate candidate;
  bool reached = false;
  int64_t steps = 0;        // steps to the target (the first evaluation at or past it); max_steps when not reached
  double lr = 0;            // the per-worker learning rate (the lr rule applied)
  double spectral_gap = 1;  // of the run's topology (1: complete, or not a gossip algorithm)
  double virtual_s = 0;     // simulated seconds of the run
  double wall_s = 0;        // real seconds
};

struct PriorProbe {
  int64_t workers = 0;
  uint64_t seed = 0;
  int64_t max_steps = 0;
  std::vector<ProbePoint> points;
  // The noise scale along the "sync" run's trajectory.
  int64_t noise_batch = 0;                   // B_small: the per-worker batch; B_big = workers × it
  std::vector<int64_t> noise_at_steps;       // the trajectory points measured (0 = the initial model)
  std::vector<NoiseScaleEstimate> noise_at;  // the estimate at each of them
  int64_t noise_draws = 0;                   // data-parallel steps measured in all
  NoiseScaleEstimate noise;                  // averaged over every point: |G|², tr(Σ), B_simple
  double cost_s = 0;                         // simulated seconds of every probe run (counts in the budget)
  double wall_s = 0;                         // real seconds of the probe
};

// The probe's link on cfg: 10 Tbit/s, no latency, link efficiency 1 (collectives cost next to
// nothing); stragglers kept.
void prior_probe_ideal_link(RunConfig& cfg);

// The reference configurations the probe runs for this plan's space (see above).
std::vector<ProbePoint> prior_probe_points(const TunePlan& plan);

// Runs the probe (reads profiles and calibrations from `read`; stores nothing). `seed`: of every
// probe run and of the noise draws. Throws dsgd::Error when the "sync" run fails.
PriorProbe prior_probe_run(const TunePlan& plan, const Store& read, uint64_t seed, int64_t max_steps = kProbeMaxSteps);

// The noise measurement at one model: `draws` times, `workers` disjoint batches of `batch`
// samples drawn without replacement from `train` (seeded), each's mean gradient by the
// workload; adds (batch, mean_i |g_i|², workers·batch, |mean_i g_i|²) to `acc` per draw.
// Needs workers·batch <= train.rows.
void prior_noise_measure(Workload& w, const Dataset& train, const std::vector<float>& params, int64_t workers,
                         int64_t batch, int draws, uint64_t seed, NoiseScaleAccumulator& acc);

nlohmann::json prior_probe_to_json(const PriorProbe& p);
PriorProbe prior_probe_from_json(const nlohmann::json& j);

// One line per point and one for the noise scale, for the session's notes.
std::vector<std::string> prior_probe_describe(const PriorProbe& p);

}  // namespace dsgd
