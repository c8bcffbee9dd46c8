// Why a tuning trial stopped, as a kind: the tuner sets it where it writes the stop reason
// (tuner/trial.cpp, tuner/trial_runner.hpp, tuner/replay.cpp), and the reason's text keeps the
// human account. Only the text is stored (trials.stop_reason, which starts with the kind's
// word: "budget: budget of 4 s reached at 4.1 s (step 80)"); trial_stop_kind_of_reason
// recovers the kind from a stored row, in one place (results/tune_store.cpp).
#pragma once

#include <string_view>

namespace dsgd {

enum class StopKind {
  stop_target,        // "target: ..." reached the target
  stop_budget,        // "budget: ..." at or past its budget (a longer budget could change it)
  stop_diverged,      // "diverged: ..." a non-finite loss or model
  stop_end_of_steps,  // "end-of-steps: ..." did all its planned steps
  stop_error,         // "error: ..." the configuration could not run
  stop_run_ended,     // "<run status>: the run ended as '<run status>'" its run ended otherwise
};

// The kind a stored stop reason starts with; a reason with none of the words above (a run
// status: "killed: the run ended as 'killed'") is stop_run_ended.
StopKind trial_stop_kind_of_reason(std::string_view reason);

}  // namespace dsgd
