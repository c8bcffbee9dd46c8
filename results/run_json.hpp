// The one JSON shape of a run (configuration columns + summary metrics), used by
// `dsgd-bench show --format json` and later by the JSON/CSV reports. Keys and units are
// documented in docs/metrics.md; missing values are null, never invented.
#pragma once

#include <nlohmann/json.hpp>

#include "results/store.hpp"

namespace dsgd {

nlohmann::json run_to_json(const RunWithSummary& run);

}  // namespace dsgd
