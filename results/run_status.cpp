// The run statuses' text (see run_status.hpp).
#include "results/run_status.hpp"

#include <iterator>

#include "core/errors.hpp"

namespace dsgd {

namespace {

struct RunStatusName {
  RunStatus status;
  const char* text;
};

constexpr RunStatusName kRunStatuses[] = {
    {RunStatus::run_running, "running"},         {RunStatus::run_completed, "completed"},
    {RunStatus::run_diverged, "diverged"},       {RunStatus::run_failed, "failed"},
    {RunStatus::run_interrupted, "interrupted"}, {RunStatus::run_killed, "killed"},
    {RunStatus::run_stopped, "stopped"},         {RunStatus::run_stale, "stale?"},
};

}  // namespace

const char* run_status_text(RunStatus status) {
  for (const RunStatusName& n : kRunStatuses)
    if (n.status == status) return n.text;
  return "?";  // not reached: every enumerator has a row
}

RunStatus run_status_parse(std::string_view text) {
  for (const RunStatusName& n : kRunStatuses)
    if (text == n.text) return n.status;
  DSGD_THROW(Error, "the database may come from a newer dsgd-bench: read it with that version",
             "unknown run status '{}' (known: running, completed, diverged, failed, interrupted, killed, stopped, "
             "stale?)",
             text);
}

bool run_status_finished(RunStatus status) {
  return status != RunStatus::run_running && status != RunStatus::run_stale;
}

}  // namespace dsgd
