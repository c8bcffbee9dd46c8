// The training loop: one worker's view of a run. Sets up the dataset, workload,
// optimizer, algorithm and buffers (all ranks agree on success before any collective),
// runs untimed warm-up steps then timed steps, evaluates the consensus model on the
// test set every K steps, flushes the per-step timings to rank 0 at each evaluation,
// and has rank 0 store everything. The timed loop allocates nothing and formats nothing.
// Divergence: the minibatch loss is checked every step and the evaluated model at every
// evaluation; a non-finite value stops the run at that evaluation with status "diverged".
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cluster/communicator.hpp"
#include "core/run_config.hpp"
#include "results/store.hpp"

namespace dsgd {

// Where the step loop is, for a live progress line.
struct TrainProgress {
  int64_t steps_done = 0;
  int64_t steps_total = 0;
  double last_loss = 0;  // this rank's last minibatch loss (NaN on a rank that only serves)
};

// What the trainer tells its caller (rank 0 prints these).
struct TrainerCallbacks {
  std::function<void(const RunRecord&)> on_start;  // after setup, before the first step
  std::function<void(const EvalRow&)> on_eval;
  // After every step when set (set it only where a terminal shows it: the callback must
  // return at once unless it redraws, e.g. a few times a second).
  std::function<void(const TrainProgress&)> on_progress;
};

struct TrainResult {
  int64_t run_id = 0;  // 0 when no store
  int64_t steps = 0;
  int64_t warmup = 0;
  double timed_wall_s = 0;  // wall time of the timed steps on rank 0 (evaluations excluded)
  // run_completed, or run_diverged when an evaluation found a non-finite training loss or model
  // (the run then stops at that evaluation, on every rank; `error` says where).
  RunStatus status = RunStatus::run_completed;
  int64_t diverged_step = -1;  // first step with a non-finite loss, or the evaluation's step
  std::string error;
  // Why a completed run ended before its last step (--stop-at-target, --time-limit: "target
  // acc=0.8 reached at 0.34 s (step 144)"); empty when it ran every step.
  std::string stopped;
  std::vector<float> final_params;  // the consensus model (rank 0)
};

// Collective: every rank calls it with the same cfg. `store` is rank 0's (nullptr on
// other ranks, or to run without storing). Throws InputError for bad input detected
// during setup (nothing stored then) and Error for failures during training (the run is
// then marked failed by the caller through trainer_active_run_id()).
TrainResult trainer_run(const RunConfig& cfg, Communicator& comm, Store* store, const TrainerCallbacks& callbacks);

// Id of the run in progress on this process (0 when none); for error and signal handling.
int64_t trainer_active_run_id();

}  // namespace dsgd

namespace dsgd {
// True once every rank has finished setup (errors after this point may leave peers
// inside a collective, so the job must be aborted).
bool trainer_past_setup();
}  // namespace dsgd
