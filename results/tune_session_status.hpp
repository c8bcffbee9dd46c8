// The status of a tuning session (the text of tune_sessions.status): a `dsgd-tune recommend` or
// `grid` session is `running` until it ends as `completed`, `failed` or `interrupted` (a signal).
// The text is what the database stores and what users see; tune_session_status_text and
// tune_session_status_parse are its only translations.
#pragma once

#include <string_view>

namespace dsgd {

enum class TuneSessionStatus { session_running, session_completed, session_failed, session_interrupted };

// The stored and printed text ("running", "completed", "failed", "interrupted").
const char* tune_session_status_text(TuneSessionStatus status);
// The status whose text is `text`; throws Error naming the text and the known ones.
TuneSessionStatus tune_session_status_parse(std::string_view text);

}  // namespace dsgd
