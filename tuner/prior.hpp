// The tuner's theory prior (DESIGN §8, strategy step 2): a predicted log time-to-target for
// every configuration of the space, with no trial run, from
//   - the step time of the configuration on the session's cluster: the simulator's timing-only
//     model of it (the calibrated compute profile and the network model; trial_step_time_estimate,
//     numerics for the few algorithms without a timing model), and
//   - its steps to the target from theory, with the constants fitted to the probe
//     (tuner/prior_probe.hpp): McCandlish et al.'s quadratic model of the loss decrease per step
//     with the gradient noise scale B_noise, generalised to a learning rate that is not the
//     optimal one, times a penalty for the sync period H ((H-1)·η², local SGD) and one for the
//     gossip topology's spectral gap p ((1/p - 1)·η², decentralised SGD).
// log T(c) = log(S(c) · step_s(c)), the periodic averages counted as those done before the
// target (prior_time). The formulas and the fit are in docs/tuner_math.md
// ("Theory prior"). Used by the search (tuner/recommend.cpp) for its initial design
// (prior_design) and as the mean of the GP (tuner/proposals.hpp), and alone by `dsgd-tune bench
// --strategies prior` (its argmin, zero evaluations).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "results/store.hpp"
#include "tuner/prior_probe.hpp"
#include "tuner/search_space.hpp"

namespace dsgd {

struct TunePlan;

// The fitted constants of the steps model.
struct PriorModel {
  int64_t workers = 1;
  std::string ref_rule = "none";  // the lr rule of the probe, taken as the optimal lr at every batch
  double b_noise = 0;             // the noise scale the model uses (global batch units)
  double b_noise_steps = -1;      // from the two synchronous probe points' steps (-1: not available)
  double b_noise_grad = -1;       // the gradient-norm estimate at the probe's last point (-1: not positive)
  double s_min = 0;               // steps at an infinite batch and the optimal lr
  std::map<std::string, double> kappa_period;  // per algorithm with H: the (H − 1) penalty's constant
  std::map<std::string, double> kappa_gap;     // per gossip algorithm: the (1/p − 1) penalty's constant
  std::vector<std::string> notes;              // how each constant was obtained
};

// The penalties are factors of the steps, never below this (a fitted constant < 0 — the probe
// point needed fewer steps than synchronous SGD — would otherwise reach 0 far from the point).
constexpr double kPriorPenaltyFloor = 0.25;

// Steps of fully synchronous SGD at global batch B with a learning rate u times the optimal one
// (McCandlish et al.'s quadratic model): S = S_min (1 + B_noise/B) / (u (2 − u)) for 0 < u < 2,
// +infinity otherwise (it diverges). u = 1: their S_min (1 + B_noise/B).
double prior_sync_steps(const PriorModel& m, double global_batch, double lr_ratio);
// max(floor, 1 + κ (H − 1))
double prior_period_penalty(double kappa, int64_t period);
// max(floor, 1 + κ (1/p − 1)), p the spectral gap in (0, 1]
double prior_gap_penalty(double kappa, double spectral_gap);

// Fits the model to the probe (formulas in docs/tuner_math.md). Deterministic.
PriorModel prior_fit(const PriorProbe& probe, const TuneSpec& spec);

// Steps to the target of c under the model (its algorithm's penalty, its topology's gap).
double prior_steps(const PriorModel& m, const TuneSpec& spec, const Candidate& c);

// The step time of a candidate on the session's cluster, and on an ideal link (the compute
// alone, prior_probe_ideal_link): virtual seconds per step (timing-only where the simulator
// models the algorithm; profiles and network calibration read from `read`). A configuration
// whose estimate fails gets +infinity.
struct PriorStepTime {
  double step_s = 0;     // mean over 20 steps or 4 periods
  double compute_s = 0;  // the same on an ideal link
};
std::vector<PriorStepTime> prior_step_times(const TunePlan& plan, Store& read);

// Virtual seconds to the target of S steps: S · step_s; with a sync period H > 1 the periodic
// averages are counted as the ⌊S/H⌋ done before step S, each costing H (step_s − compute_s):
// S · compute_s + ⌊S/H⌋ · H · (step_s − compute_s).
double prior_time(const PriorStepTime& t, double steps, int64_t period);

struct PriorPrediction {
  PriorStepTime step;
  double steps = 0;
  double time_s = 0;    // prior_time
  double log_time = 0;  // log(time_s); +infinity when the model says it diverges
};
std::vector<PriorPrediction> prior_predict(const PriorModel& m, const TunePlan& plan,
                                           const std::vector<PriorStepTime>& step_s);
// The log times of the predictions with +infinity replaced by the largest finite one + log 10
// (the GP's mean needs finite values); all 0 when none is finite.
std::vector<double> prior_log_times(const std::vector<PriorPrediction>& p);

// The period-schedule points of the algorithm of space[best] (a constant-period configuration):
// qsr at the same H, batch, rule and compressor (α = η·√H: its period is H at the peak rate and
// grows as the schedule decays it; candidate_config), and adacomm at the largest H_0 of the
// space up to 4 H with the same batch, rule and compressor; those the space holds, in that order.
std::vector<size_t> prior_schedule_points(const std::vector<Candidate>& space, size_t best);

// The initial design from the prior: the prior's best configuration of each algorithm first
// (the best algorithms' first when n is smaller), then the schedule points of each algorithm's
// best constant-period configuration (prior_schedule_points; when the space holds qsr or
// adacomm), then the next best by the prior up to n − ⌊n/3⌋,
// then ⌊n/3⌋ space-filling ones (greedy farthest-point from those already chosen,
// space_fill_sample). n >= the space: all of them. Deterministic for a seed.
std::vector<size_t> prior_design(const std::vector<Candidate>& space, const std::vector<double>& log_time, size_t n,
                                 uint64_t seed);

// Everything the search takes from the prior for one plan: the probe, the fitted model, the
// prediction per feasible candidate (in the plan's order) and its finite log times.
struct TunePrior {
  PriorProbe probe;
  PriorModel model;
  std::vector<PriorPrediction> predictions;
  std::vector<double> log_time;  // prior_log_times(predictions)
  size_t argmin = 0;             // the best predicted candidate
};
// Fits the probe and predicts every candidate (step times from `read`, prior_step_times).
TunePrior prior_build(const TunePlan& plan, Store& read, const PriorProbe& probe);
// Lines for the session's notes: the constants, the prior's best per algorithm.
std::vector<std::string> prior_describe(const TunePlan& plan, const TunePrior& prior);

}  // namespace dsgd
