// The status of a stored run (the text of runs.status): a run row is inserted `running` and
// finished once as `completed`, `diverged`, `failed`, `interrupted`, `killed` or `stopped`.
// `stale?` is only ever read, never stored: a `running` run whose writer cannot be checked and
// that has been silent too long (results/store.hpp). The text is what the database stores and
// what users see (tables, JSON); run_status_text and run_status_parse are its only translations.
#pragma once

#include <string_view>

namespace dsgd {

enum class RunStatus {
  run_running,
  run_completed,
  run_diverged,     // a non-finite loss or model at an evaluation
  run_failed,       // an error ended it (runs.error says which)
  run_interrupted,  // a signal (SIGINT, SIGTERM) ended it
  run_killed,       // its process died without recording its end
  run_stopped,      // ended on purpose before its last step (dsgd-tune's trials)
  run_stale,        // read only: `running`, but silent for too long to tell
};

// The stored and printed text ("running", ..., "stale?").
const char* run_status_text(RunStatus status);
// The status whose text is `text`; throws Error naming the text and the known ones.
RunStatus run_status_parse(std::string_view text);
// Whether a run in this status has ended (all but running and stale?).
bool run_status_finished(RunStatus status);

}  // namespace dsgd
