// The tuning session statuses' text (see tune_session_status.hpp).
#include "results/tune_session_status.hpp"

#include "core/errors.hpp"

namespace dsgd {

namespace {

struct TuneSessionStatusName {
  TuneSessionStatus status;
  const char* text;
};

constexpr TuneSessionStatusName kTuneSessionStatuses[] = {
    {TuneSessionStatus::session_running, "running"},
    {TuneSessionStatus::session_completed, "completed"},
    {TuneSessionStatus::session_failed, "failed"},
    {TuneSessionStatus::session_interrupted, "interrupted"},
};

}  // namespace

const char* tune_session_status_text(TuneSessionStatus status) {
  for (const TuneSessionStatusName& n : kTuneSessionStatuses)
    if (n.status == status) return n.text;
  return "?";  // not reached: every enumerator has a row
}

TuneSessionStatus tune_session_status_parse(std::string_view text) {
  for (const TuneSessionStatusName& n : kTuneSessionStatuses)
    if (text == n.text) return n.status;
  DSGD_THROW(Error, "the database may come from a newer dsgd-tune: read it with that version",
             "unknown tuning session status '{}' (known: running, completed, failed, interrupted)", text);
}

}  // namespace dsgd
