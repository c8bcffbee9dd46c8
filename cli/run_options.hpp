// The command-line binding of RunConfig: one --KEY option per entry of run_config_fields(),
// shared by `dsgd-bench run` and `dsgd-tune recommend` so both accept the same workload and
// cluster flags with the same help, defaults and checks. A subcommand binds the table (minus
// the keys it owns itself), then resolves: the optional config file first, then every flag
// given explicitly (marked as given, for run_config_validate's knob-ownership check).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/run_config.hpp"

namespace dsgd {

struct RunOptionBinding {
  RunConfig flags;          // values given on the command line
  std::string config_file;  // JSON or TOML file of the same keys (empty: none)
  std::vector<std::pair<const RunConfigField*, CLI::Option*>> bound;
};

// Adds --KEY for every field of run_config_fields() whose key is not in `skip`, bound to
// b.flags, with the field's help and its default shown.
void run_options_bind(CLI::App* sub, RunOptionBinding& b, const std::vector<std::string>& skip = {});

// Adds --KEY for the fields of run_config_fields() named in `keys`, bound to target directly
// (a subcommand that takes a few of the run's flags: calibrate's model shape).
void run_options_bind_keys(CLI::App* sub, RunConfig& target, const std::vector<std::string>& keys);

// File first (b.config_file), then every flag that was given explicitly. Throws InputError for
// a non-positive --steps / --epochs given on the command line.
RunConfig run_options_resolve(const RunOptionBinding& b);

}  // namespace dsgd
