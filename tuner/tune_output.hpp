// The winner as something to run: the exact `dsgd-bench run` command line and a TOML config
// file that `dsgd-bench run --config FILE` loads, both listing the fields of the trial's
// configuration that differ from RunConfig's defaults (the database and tag excluded), in the
// order of run_config_fields().
#pragma once

#include <string>

#include "core/run_config.hpp"

namespace dsgd {

std::string tune_run_command(const RunConfig& cfg);
std::string tune_config_toml(const RunConfig& cfg);

}  // namespace dsgd
