// The dsgd-bench subcommands: each file defines setup_X(app), which adds the subcommand
// and binds its options, and run_X(options), which does the work and returns the exit
// code (0 ok, 1 failure, 2 bad input, 3 a run that finished but diverged).
#pragma once

#include <CLI/CLI.hpp>
#include <exception>
#include <string>

#include "cluster/communicator.hpp"

namespace dsgd {

// `run`'s exit code when the run diverged (non-finite loss or parameters): the run is stored
// (status "diverged") but is not a success.
inline constexpr int kRunDivergedExit = 3;

// Where a subcommand's callback leaves its exit code for main.
int& cli_exit_code();

// Prints this rank's error (its rank when there are several, the hint, an optional extra
// line) and, when abort_job (peers may be inside a collective), aborts the whole job.
// Returns the exit code: 2 for an InputError, 1 otherwise (cli/rank_error.cpp).
int cli_report_rank_error(const std::exception& e, Communicator& comm, bool abort_job, const std::string& extra = "");

void setup_run(CLI::App& app, int argc, char** argv);
void setup_runs(CLI::App& app);
void setup_show(CLI::App& app);
void setup_list(CLI::App& app);
void setup_topology(CLI::App& app);
void setup_calibrate(CLI::App& app, int argc, char** argv);
void setup_trace(CLI::App& app);
void setup_validate(CLI::App& app);
void setup_report(CLI::App& app);
void setup_compare(CLI::App& app);
void setup_suite(CLI::App& app);
void setup_history(CLI::App& app);
void setup_track(CLI::App& app);

}  // namespace dsgd
