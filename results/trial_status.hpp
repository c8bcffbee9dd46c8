// The status of a tuning trial (the text of trials.status): `completed` when the configuration
// ran (whatever it reached), `failed` when it could not run (its stop reason says why). The text
// is what the database stores and what users see; trial_status_text and trial_status_parse are
// its only translations.
#pragma once

#include <string_view>

namespace dsgd {

enum class TrialStatus { trial_completed, trial_failed };

// The stored and printed text ("completed", "failed").
const char* trial_status_text(TrialStatus status);
// The status whose text is `text`; throws Error naming the text and the known ones.
TrialStatus trial_status_parse(std::string_view text);

}  // namespace dsgd
