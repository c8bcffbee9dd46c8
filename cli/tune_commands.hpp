// The dsgd-tune subcommands (one file each, as for dsgd-bench: setup_X binds the options,
// the callback does the work and leaves its exit code in tune_exit_code()).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <exception>

#include "engine/interrupt.hpp"
#include "results/tune_store.hpp"

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

// Runs a session's work (`body`: the search of recommend, the trials of grid) and returns its
// result; on an error ends the progress line on a terminal (`tty`), marks the session failed with
// the message and rethrows, so `sessions` never shows a dead session as running. An error after a
// signal (its cleanup removed the private databases under a running copy) is the signal's: the
// watcher marks the session interrupted and exits (engine/interrupt.hpp).
template <class Body>
auto tune_session_run(Store& store, int64_t session_id, bool tty, Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const std::exception& e) {
    interrupt_yield_to_watcher();
    if (tty) std::fputs("\n", stderr);
    tune_session_finish(store, session_id, TuneSessionStatus::session_failed, "", e.what());
    throw;
  }
}

}  // namespace dsgd
