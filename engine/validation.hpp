// The validation protocol of `dsgd-bench validate` (docs/sim.md): the simulator's predictions
// against a real run of one configuration, each run a child `dsgd-bench run`
// (engine/child_run.hpp):
//   0. fabric:    only when the database has no calibrated all-reduce of this host, a quick
//                 `dsgd-bench calibrate --workers 2` (the prediction's collectives need it);
//   1. profile:   N MPI ranks computing side by side without communication, no stragglers,
//                 no emulated network: the compute profile of this machine as N ranks share
//                 it (their measured data/fwd/bwd/opt per step, and its spread);
//   2. measured:  N MPI ranks with the configuration's emulated network and stragglers;
//   3. predicted: N simulated workers (--backend sim --profile-from <profile run>
//                 --native-floor: emulation only adds time to a real collective, so each
//                 simulated communication lasts at least this host's calibrated native time);
//   4. own compute: the same prediction with --profile-from <measured run>: its compute is
//                 the measured ranks' own, so its error is the simulator's (communication,
//                 wait, passes) without the host's change of speed between the runs.
//   5. seeds:     for a variant on one-sided windows (adpsgd, ps), whose timing is a race for
//                 the windows' locks, the prediction (3) again at seeds +1 and +2 (other
//                 compute draws and data): how far the prediction itself moves
//                 (kValidationSeedSpread).
// Then, per metric (step time, compute, comm, wait, injected delay, throughput), the measured
// value, the prediction and |predicted − measured| / measured, stored in the tables
// validations / validation_metrics (results/validation_store.hpp), the step of 4 as the
// metric kValidationOwnComputeStep, and the ranks' compute spread (kValidationRankSpread). The profile run is
// independent of the measured one, so the prediction (3) is not fitted to what it predicts; 4 is a diagnosis, not a
// prediction.
#pragma once

#include <string>
#include <vector>

#include "core/run_config.hpp"
#include "results/store.hpp"
#include "results/validation_store.hpp"

namespace dsgd {

// What the protocol reports as it goes (the CLI prints it).
class ValidationObserver {
 public:
  virtual ~ValidationObserver() = default;
  // Child run `index` of `total` starts; `what` describes it.
  virtual void child_begin(const std::string& role, const std::string& what, int index, int total) {}
  // One output line of the running child.
  virtual void child_line(const std::string& line) {}
  virtual void note(const std::string& text) {}
};

// Checks and normalises the real run's configuration (backend mpi, 2 workers, no saved
// parameters). Throws InputError when it asks for the simulator itself (`source` names the file).
RunConfig validation_config(RunConfig cfg, const std::string& source, ValidationObserver& observer);

// The profile run's configuration (step 1 above): cfg.workers MPI ranks of cfg's workload,
// data, batch, steps, seed, threads and optimizer side by side with no communication (Local
// SGD with a period beyond the run), so that the compute is measured sharing the machine as
// the measured run's ranks share it; for the variants with threads of their own per worker
// (local-threads), one worker of the variant alone. Validated (config_validate).
bool validation_profile_colocated(const RunConfig& cfg);
RunConfig validation_profile_config(const RunConfig& cfg);

// Runs the four children of validation_config(...)'s result and stores the validation in
// `store` (cfg.db, opened and migrated by the caller). Returns it, with its id.
ValidationRecord validation_run(const RunConfig& cfg, Store& store, ValidationObserver& observer);

// The stored metric of step 4: the measured step against the prediction from the measured
// run's own compute.
inline constexpr const char* kValidationOwnComputeStep = "step_time_s.own_compute";
// The stored metric of the ranks' compute spread: the slowest rank's mean compute (forward +
// backward) per timed step over the fastest rank's, measured and simulated.
inline constexpr const char* kValidationRankSpread = "compute_rank_spread";
double validation_compute_rank_spread(const std::vector<StepRow>& steps);
// The stored metric of the runs' own sampling noise: the standard error of each run's mean
// step (summaries.step_time_s), measured and simulated (no relative error: not a prediction).
inline constexpr const char* kValidationStepStandardError = "step_time_s.standard_error";
// The stored metric of step 5: the lowest (as `measured`) and highest (as `predicted`) of the
// predicted step over the prediction's three seeds; no relative error (not a prediction).
inline constexpr const char* kValidationSeedSpread = "step_time_s.seed_spread";
// The stored metric of the step outside every phase (step − compute − data − comm − wait −
// injected, per rank and step, averaged: a variant's passes over the model, its bookkeeping),
// measured and predicted.
inline constexpr const char* kValidationOutsidePhases = "outside_phases_s";
double validation_outside_phases_s(const Summary& s);
// The stored metric of the fabric's check: an all-reduce of the model's size timed right after
// the measured run (`dsgd-bench calibrate --quick` at that one size: `measured`) against the
// newest calibration's curve the prediction read (`predicted`), back to back or after compute
// as the prediction read it. Only where the prediction reads the host's fabric
// (validation_checks_fabric: no --bandwidth, no --fabric).
inline constexpr const char* kValidationFabricAllreduce = "fabric_allreduce_s";
bool validation_checks_fabric(const RunConfig& cfg);
// Whether cfg's prediction is a race that step 5 measures (its variant needs one-sided windows).
bool validation_prediction_races(const RunConfig& cfg);

// What a reader of a validation should know before trusting its errors, one sentence each:
//   - the step predicted from the measured run's own compute, and its error (when stored);
//   - the two runs' sampling noise (kValidationStepStandardError, when stored): that the step's
//     error is within two of their combined standard errors, or, for an error above
//     kValidationStepTarget, that it is beyond them;
//   - the measured ranks' compute spread above 1 + kValidationComputeNoise: one rank computed
//     slower for the whole run (the prediction gives every worker the same compute);
//   - compute off by more than kValidationComputeNoise: the prediction computes what the
//     profile run measured, so the measured run's ranks computed at another speed (the host's
//     load changed between the runs, or the configuration slows compute); the step's error
//     includes that, and it is not the simulator's;
//   - comm or wait under kValidationSmallShare of the measured step with an error above
//     kValidationSplitTarget that moves the step by less than kValidationSmallShare: how little;
//   - the fabric's check (kValidationFabricAllreduce) off by more than kValidationSplitTarget:
//     the host's fabric moved since its calibration;
//   - the step outside every phase (kValidationOutsidePhases) predicted kValidationSmallShare
//     of the measured step or more away from the measured: both figures (a variant's passes
//     over the model cost more, or less, than the profile's model pass).
// Empty when neither applies.
inline constexpr double kValidationComputeNoise = 0.10;  // the compute target of docs/sim.md
inline constexpr double kValidationStepTarget = 0.10;    // the step target of docs/sim.md
inline constexpr double kValidationSmallShare = 0.02;
inline constexpr double kValidationSplitTarget = 0.20;  // the comm and wait target of docs/sim.md
std::vector<std::string> validation_notes(const ValidationRecord& v);

}  // namespace dsgd
