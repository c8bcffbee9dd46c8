// See trial_mpi.hpp.
#include "tuner/trial_mpi.hpp"

#include <fmt/format.h>

#include <optional>
#include <string>

#include "core/clock.hpp"
#include "engine/child_run.hpp"

namespace dsgd {

TrialOutcome trial_run_mpi(const RunConfig& base, double budget_s, const Target& target, Store& store) {
  TrialOutcome out;
  const double started = clock_now_s();
  RunConfig cfg = base;
  cfg.backend = "mpi";
  cfg.db = store.path();
  cfg.stop_at_target = true;
  cfg.time_limit = budget_s;
  int64_t run_id = 0, seen_id = 0;
  std::string error_line;  // the child's own message, for a failure
  auto fail = [&](const std::string& why) {
    out.status = TrialStatus::trial_failed;
    out.stop_kind = StopKind::stop_error;
    out.stop_reason = fmt::format("error: {}", why);
    out.run_id = run_id;
    out.wall_s = clock_now_s() - started;
    return out;
  };
  try {
    run_id = child_run_config(cfg, "trial", "", [&](const std::string& line) {
      if (line.rfind("run_id=", 0) == 0) seen_id = std::stoll(line.substr(7));
      if (line.find("error:") != std::string::npos) error_line = line;
    });
  } catch (const std::exception& e) {
    if (seen_id <= 0)  // nothing stored: the child refused the configuration or failed in setup
      return fail(error_line.empty() ? std::string(e.what()) : fmt::format("{} ({})", error_line, e.what()));
    run_id = seen_id;  // stored, then a non-zero exit (a diverged run exits 3): its status says what happened
  }
  const RunWithSummary run = store.run_get(run_id);
  if (run.run.status != RunStatus::run_completed && run.run.status != RunStatus::run_diverged)
    return fail(fmt::format("the MPI run ended as '{}'{}", run_status_text(run.run.status),
                            run.run.error.empty() ? "" : ": " + run.run.error));
  TrialWatch watch{target, budget_s, out};
  std::optional<TrialStopReason> stopped;
  for (const EvalRow& row : store.evals_get(run_id))
    if ((stopped = watch.see(row))) break;
  watch.finish(stopped, cfg.steps, run_id, store);
  out.wall_s = clock_now_s() - started;
  return out;
}

}  // namespace dsgd
