// Validation of a tuner session on the real backend (`dsgd-tune validate SESSION --top K`
// and `dsgd-tune recommend --validate K`): the top K configurations of the session's ranking are
// run again with `dsgd-bench run --backend mpi` on the session's workers, emulated link and
// stragglers (a child run of the dsgd-bench binary, which launches itself through mpiexec:
// engine/child_run.hpp), with the seed of the configuration's representative (median-seed) sim
// trial, for that trial's steps (rounded up to an evaluation): the same window, so both step
// times average the same steps (a longer run averages in other syncs of a long period H); the
// numerics being the same on both backends, the MPI run reaches the target at the same step.
// Per configuration: predicted (the sim trial's) and measured time-to-target and step time; and
// whether the measured order of the top two agrees with the ranking (both reached: the faster
// one first; one reached: that one first; neither, or a predicted tie: undecided). Stored in
// tune_validations / tune_validation_configs (schema v10).
// Limits: every run goes through mpiexec on this host (or the session's hostfile);
// time-to-target is measured at the run's evaluations, so its resolution is --eval-every steps.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/run_config.hpp"
#include "engine/validation.hpp"
#include "results/store.hpp"
#include "results/tune_store.hpp"

namespace dsgd {

// What will run: one MPI configuration per validated rank, with its predicted row filled in.
struct TopValidationPlan {
  int64_t session_id = 0;
  int64_t top_k = 0;
  std::vector<RunConfig> runs;
  std::vector<TopValidationRow> rows;
  std::string warning;  // more local ranks than cores (allowed up to 4 per core), else empty
};

// Reads the session's ranking (it must be completed) and checks K (1..ranked configurations) and
// the workers this machine allows (the run path's oversubscription check). Throws InputError
// naming the flag (`flag`: --top or --validate) and what to do.
TopValidationPlan tune_validate_plan(const Store& store, int64_t session_id, int64_t top_k, const char* flag);

// The run path's oversubscription check for `workers` MPI ranks on this machine (none with a
// hostfile): returns a warning (empty when they fit the cores); throws InputError naming `flag`
// above what the machine allows, with `hint` (default: validate elsewhere or with a hostfile).
std::string tune_validate_check_workers(int64_t workers, const std::string& hostfile, const char* flag,
                                        const std::string& hint = {});

// Runs the plan's MPI runs one after the other and stores the validation.
TopValidation tune_validate_run(const TopValidationPlan& plan, Store& store, ValidationObserver& observer);

// Whether the simulator predicted the top two to reach the target at the same time (their order
// is then a tie-break, and no measurement can agree or disagree with it).
bool tune_validate_predicted_tie(const std::vector<TopValidationRow>& rows);
// The measured order of the top two against the ranking (see the file comment); empty when
// fewer than 2 rows, a predicted tie, or neither reached the target on MPI.
std::optional<bool> tune_validate_ranking_agrees(const std::vector<TopValidationRow>& rows);

}  // namespace dsgd
