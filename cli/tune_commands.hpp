// The dsgd-tune subcommands (one file each, as for dsgd-bench: setup_X binds the options,
// the callback does the work and leaves its exit code in tune_exit_code()).
#pragma once

#include <CLI/CLI.hpp>

namespace dsgd {

int& tune_exit_code();

void setup_tune_recommend(CLI::App& app);
void setup_tune_sessions(CLI::App& app);  // `sessions` and `show SESSION`
void setup_tune_grid(CLI::App& app);      // `grid`: a whole small space, for `bench`
void setup_tune_bench(CLI::App& app);     // `bench`: strategies replayed against a grid

}  // namespace dsgd
