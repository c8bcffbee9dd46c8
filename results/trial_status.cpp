// The tuning trial statuses' text (see trial_status.hpp).
#include "results/trial_status.hpp"

#include "core/errors.hpp"

namespace dsgd {

const char* trial_status_text(TrialStatus status) {
  return status == TrialStatus::trial_failed ? "failed" : "completed";
}

TrialStatus trial_status_parse(std::string_view text) {
  if (text == "completed") return TrialStatus::trial_completed;
  if (text == "failed") return TrialStatus::trial_failed;
  DSGD_THROW(Error, "the database may come from a newer dsgd-tune: read it with that version",
             "unknown trial status '{}' (known: completed, failed)", text);
}

}  // namespace dsgd
