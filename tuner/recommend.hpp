// `dsgd-tune recommend`: the search (DESIGN §8), first version.
//  1. plan (tune_plan): parse nothing, write nothing — validate the target, the budget and the
//     space, filter impossible configurations by formula (tuner/search_space.hpp), size the
//     trial budget R and the initial design, list the compute profiles that are missing;
//  2. run (tune_run): measure and store missing profiles (saying so); successive halving in
//     units of evaluation (virtual) seconds over the initial design — all configurations when
//     the space is small, else a seeded space-filling sample — with rungs R/eta^2, R/eta, R,
//     comparing trials at equal time by the censored objective; when the space is larger than
//     the design, a quarter of the first rung's places go to configurations proposed after it
//     by a GP on log time-to-target with EI weighted by P(reach) (tuner/proposals.hpp), which
//     then compete in that rung's promotion. Once a configuration has reached the target,
//     later rungs are capped at a margin over its time and configurations beyond it are not
//     promoted (adaptive capping); what that saves of the budget goes to further passes over
//     GP proposals. Then a final race of the leaders (at most race_top) over race_seeds seeds;
//     the recommendation is the best median, with a note when the top two's spreads overlap.
// Every trial goes through tuner/trial.hpp (the engine's sim path), or with --backend mpi
// tuner/trial_mpi.hpp (a child `dsgd-bench run` on real ranks, one at a time; budgets then in
// wall-clock seconds of training). Independent trials (one
// rung, the race) run up to plan.jobs at a time (tuner/trial_pool.hpp), each on a private
// database; this thread copies their runs into the session database and writes the trial rows
// in the order a sequential session would, so --jobs changes neither the trials nor their
// scores. A trial already stored in the session (resume) is not run again.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "results/store.hpp"
#include "results/target.hpp"
#include "results/trial_backend.hpp"
#include "results/tune_store.hpp"
#include "tuner/explain.hpp"
#include "tuner/objective.hpp"
#include "tuner/search_space.hpp"
#include "workloads/datasets/dataset.hpp"

namespace dsgd {

struct TunePlan {
  TuneSpec spec;
  Target target;
  SpaceEnumeration space;
  size_t param_count = 0;
  double trial_time_s = 0;                  // R: a trial's full budget
  std::vector<double> rungs;                // budgets of the successive-halving rungs (last = R)
  size_t initial_design = 0;                // configurations started at the first rung
  size_t proposals = 0;                     // added after the first rung by GP + weighted EI (tuner/proposals.hpp)
  int64_t planned_trials = 0;               // trial runs if nothing is cut short or reused
  int64_t max_trial_steps = 0;              // a trial stops at this many steps (a real-time guard)
  std::vector<int64_t> missing_profiles;    // batches without a compute profile on this host (tune_missing_profiles)
  std::vector<std::string> notes;           // how R and the design were chosen
  std::shared_ptr<const DatasetPair> data;  // the base seed's dataset, loaded once for the plan and the trials
  int jobs = 1;                             // trials at a time (--jobs; tuner/trial_pool.hpp)
  // The theory prior's log time-to-target per feasible candidate (tuner/prior.hpp); empty: none.
  // When set, the initial design is prior_design's and the GP's mean is the prior.
  std::vector<double> prior_log_time;
  double promote_margin = 0;  // successive halving's margin (tuner/successive_halving.hpp): 0 on sim, 0.1 on mpi
  TrialBackend backend = TrialBackend::trial_sim;  // spec.base.backend, parsed once (results/trial_backend.hpp)
  // Memory (engine/memory_estimate.hpp, sim: every worker of a trial in this process): the
  // dataset, loaded once and shared by the trials, and each feasible candidate's trial's own
  // bytes (its workers' replicas, state and step buffers).
  double dataset_memory_bytes = 0;
  std::vector<double> trial_memory_each;
};

// Validates and plans without a database (so bad input creates no file). Throws InputError
// with what to do for: no budget, an empty space, every configuration refused (listing why),
// a target the trials cannot measure, a backend other than sim or mpi, on mpi more workers than
// this machine runs as ranks.
// live: a session that runs trials here (recommend, grid), whose configurations that would
// not fit in this machine's memory are refused; false for a replay of a stored grid.
TunePlan tune_plan(const TuneSpec& spec, int64_t max_trial_steps, bool live = true);
// Trials at a time within this machine's memory: `jobs` when the dataset and `jobs` of the
// largest trial fit in 90 % of MemAvailable; else, when --jobs was not given (`given` false),
// as many as fit (at least 1), with a note saying so; a given --jobs is kept, with a warning
// note. On MPI (one trial at a time, in other processes), `jobs`.
int tune_jobs_for_memory(TunePlan& plan, int jobs, bool given);
// Batches of the feasible space without a compute profile of this host in `store` (none with
// --profile-from); tune_run measures and stores them first.
std::vector<int64_t> tune_missing_profiles(const TunePlan& plan, const Store& store);

// The censored order used for ranking (tuner/objective.hpp's contract).
bool tune_objective_better(const TrialScore& a, const TrialScore& b);

struct RankedConfig {
  Candidate candidate;
  std::string key;
  bool raced = false;                   // in the final race
  double fidelity_s = 0;                // the largest budget it was run at
  std::vector<TrialRow> trials;         // its trials at that budget (one per seed)
  TrialScore median;                    // median over those seeds in the censored order
  double spread_lo = 0, spread_hi = 0;  // min and max time over the seeds
  bool spread_censored = false;         // some seed did not reach the target (hi is a lower bound)
  TrialRow representative;              // the median seed's trial
  double bytes_per_step = 0;            // the algorithm's formula
};

struct TuneResult {
  int64_t session_id = 0;
  std::vector<RankedConfig> ranking;  // best first
  bool top_two_overlap = false;
  std::string verdict;          // one line: the recommendation and how sure
  double used_s = 0;            // evaluation seconds spent (virtual)
  int64_t trials_run = 0;       // run in this invocation
  int64_t trials_resumed = 0;   // found stored (resume)
  int64_t trials_reused = 0;    // answered by a lower-budget trial that had already stopped
  int64_t trials_dropped = 0;   // started ahead in parallel, then not used: the budget ran out first
  double trial_wall_s = 0;      // real seconds inside trial runs (this invocation)
  double profile_wall_s = 0;    // real seconds measuring missing profiles
  double busy_wall_s = 0;       // real seconds during which at least one trial was running
  double probe_s = 0;           // evaluation seconds of the prior's probe (in used_s)
  double probe_wall_s = 0;      // real seconds of the prior's probe run in this invocation (0: stored before)
  int jobs = 1;                 // trials at a time
  double trial_time_s = 0;      // R searched at (the plan's, or the pilot's: tune_run)
  std::vector<double> rungs_s;  // the rungs' budgets at that R
  std::vector<std::string> notes;
  // What is wrong with the compute profiles the simulated trials were timed from (spread too
  // wide, a larger batch measured faster): the ranking may be biased where they apply.
  std::vector<std::string> profile_warnings;
  // What the simulated trials warned of the measured fabric they were timed on (repetitions
  // that spread widely near the model's size, a fabric that moved between the host's
  // calibrations): the communication they predict is that uncertain.
  std::vector<std::string> network_warnings;
  Explanation explanation;  // the winner against the runner-up, and per knob around it (tuner/explain.hpp)
};

struct TuneProgress {
  int64_t trial = 0, planned = 0;
  double used_s = 0, budget_s = 0;
  std::string best;  // "localsgd H=16 b=64 lr=sqrt: 12.3 s" or "none reached yet"
  std::string current;
};

// Measures plan.missing_profiles (engine compute_profile_fill_missing) and stores them as a
// profile-only calibration; appends a note saying so; returns the real seconds it took.
double tune_profiles_measure(const TunePlan& plan, Store& store, int64_t session_id, std::vector<std::string>& notes);

// Runs the plan in session `session_id` (trials already stored there are reused): measures the
// missing compute profiles, then the search of tune_search with its trials run up to plan.jobs at
// a time (tuner/trial_pool.hpp), each copied into the session database in request order.
TuneResult tune_run(const TunePlan& plan, Store& store, int64_t session_id,
                    const std::function<void(const TuneProgress&)>& progress);

// Trials of the live runner outside a search (`dsgd-tune grid`): each request stored already in
// the session is kept, the others run up to plan.jobs at a time with recommend's schedule and are
// stored in request order; plan's budget and trial limit apply. Counts go to `result`.
struct TuneTrialRequest {
  Candidate candidate;
  uint64_t seed = 0;
  double budget_s = 0;
  std::string phase;
};
std::vector<TrialRow> tune_trials_run(const TunePlan& plan, Store& store, int64_t session_id,
                                      const std::vector<TuneTrialRequest>& requests,
                                      const std::function<void(const TuneProgress&)>& progress, TuneResult& result);

class TrialEvaluator;
// The search itself (successive halving, GP proposals, the final race, the ranking and the
// verdict) against any evaluator (tuner/evaluator.hpp): the live runner, or the replay of a
// stored grid (tuner/replay.hpp). `stored`: trials kept from before (resume), looked up by key
// before the evaluator is asked. Fills result (ranking, verdict, used_s, trial counts, notes).
void tune_search(const TunePlan& plan, TrialEvaluator& eval, const std::vector<TrialRow>& stored,
                 const std::function<void(const TuneProgress&)>& progress, TuneResult& result);

// The result as JSON (ranking, verdict, budget); `dsgd-tune recommend --format json`, and
// stored as the session's result_json.
nlohmann::json tune_result_json(const TunePlan& plan, const TuneResult& result);

}  // namespace dsgd
