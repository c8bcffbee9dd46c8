// The stored probe of a tuning session's theory prior (table tune_probes, schema v13; the probe:
// tuner/prior_probe.hpp): written once when the probe has run, read by `--resume`, which then
// does not run it again, and by `dsgd-tune show`.
#pragma once

#include <cstdint>
#include <optional>

#include "results/store.hpp"
#include "tuner/prior_probe.hpp"

namespace dsgd {

void prior_probe_store(Store& store, int64_t session_id, const PriorProbe& probe);
// The session's probe, or none (none stored, or a database older than v13).
std::optional<PriorProbe> prior_probe_load(const Store& store, int64_t session_id);

}  // namespace dsgd
