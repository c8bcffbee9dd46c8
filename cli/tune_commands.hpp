// The dsgd-tune subcommands (one file each, as for dsgd-bench: setup_X binds the options,
// the callback does the work and leaves its exit code in tune_exit_code()).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>

namespace dsgd {

class Store;
struct TopValidation;

int& tune_exit_code();

void setup_tune_recommend(CLI::App& app);
void setup_tune_sessions(CLI::App& app);  // `sessions` and `show SESSION`
void setup_tune_grid(CLI::App& app);      // `grid`: a whole small space, for `bench`
void setup_tune_bench(CLI::App& app);     // `bench`: strategies replayed against a grid
void setup_tune_validate(CLI::App& app);  // `validate SESSION --top K`

// Validates the top K of a finished session on the real backend and prints it (cli/tune_validate.cpp;
// `flag` names the option that asked, in errors). Returns the exit code.
int tune_validate_print_run(Store& store, int64_t session, int64_t top_k, const char* flag);
// One stored validation as a table (`validate --list`, `show`).
void tune_validation_print(const TopValidation& v);

}  // namespace dsgd
