// The full check of a run's configuration: core's variant-free checks (run_config_validate)
// plus what needs the variants' registry entries (algorithms/variant.hpp): optimizer and
// schedule knobs (what --optimizer auto means depends on the variant), knobs of one variant
// given to another, --period and --compress users, and each variant's own checks. Called
// wherever a configuration is accepted (run, validate, suites, the tuner); the numeric
// ranges of the field table are checked last, as before.
#pragma once

#include <fmt/format.h>

#include <string>

#include "core/run_config.hpp"

namespace dsgd {

// Throws InputError "--KEY: ..." for the first problem. Covers run_config_validate.
void config_validate(const RunConfig& cfg);

// --timing-only given to a variant (or variant options) without a timing rule: throws
// InputError listing the ones that have one. Part of config_validate.
void config_check_timing_only(const RunConfig& cfg);

// Throws InputError "--FLAG: WHAT" with HINT (for the variants' validate functions).
[[noreturn]] void config_fail(const char* flag, const std::string& what, const std::string& hint);
// Whether field `key` was given explicitly or differs from its default.
bool config_changed(const RunConfig& cfg, const char* key);

}  // namespace dsgd
