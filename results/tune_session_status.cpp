// The tuning session statuses' text (see tune_session_status.hpp).
#include "results/tune_session_status.hpp"

#include "core/enum_text.hpp"
#include "core/errors.hpp"

namespace dsgd {

namespace {

constexpr EnumText<TuneSessionStatus> kTuneSessionStatuses[] = {
    {TuneSessionStatus::session_running, "running"},
    {TuneSessionStatus::session_completed, "completed"},
    {TuneSessionStatus::session_failed, "failed"},
    {TuneSessionStatus::session_interrupted, "interrupted"},
};

}  // namespace

const char* tune_session_status_text(TuneSessionStatus status) {
  return enum_text(kTuneSessionStatuses, status);
}

TuneSessionStatus tune_session_status_parse(std::string_view text) {
  if (const auto status = enum_parse(kTuneSessionStatuses, text)) return *status;
  DSGD_THROW(Error, "the database may come from a newer dsgd-tune: read it with that version",
             "unknown tuning session status '{}' (known: {})", text, enum_known(kTuneSessionStatuses));
}

}  // namespace dsgd
