// The run statuses' text (see run_status.hpp).
#include "results/run_status.hpp"

#include "core/enum_text.hpp"
#include "core/errors.hpp"

namespace dsgd {

namespace {

constexpr EnumText<RunStatus> kRunStatuses[] = {
    {RunStatus::run_running, "running"},         {RunStatus::run_completed, "completed"},
    {RunStatus::run_diverged, "diverged"},       {RunStatus::run_failed, "failed"},
    {RunStatus::run_interrupted, "interrupted"}, {RunStatus::run_killed, "killed"},
    {RunStatus::run_stopped, "stopped"},         {RunStatus::run_stale, "stale?"},
};

}  // namespace

const char* run_status_text(RunStatus status) {
  return enum_text(kRunStatuses, status);
}

RunStatus run_status_parse(std::string_view text) {
  if (const auto status = enum_parse(kRunStatuses, text)) return *status;
  DSGD_THROW(Error, "the database may come from a newer dsgd-bench: read it with that version",
             "unknown run status '{}' (known: {})", text, enum_known(kRunStatuses));
}

bool run_status_finished(RunStatus status) {
  return status != RunStatus::run_running && status != RunStatus::run_stale;
}

}  // namespace dsgd
