// dsgd-bench: entry point. Builds the CLI from one setup_X per subcommand file; app_main_run
// (cli/app_main.hpp) runs the chosen one, checks stdout and maps errors to exit codes.
#include <fmt/core.h>

#include <cstdio>

#include "cli/app_main.hpp"
#include "cli/commands.hpp"
#include "core/copy_aliasing.hpp"
#include "core/system_info.hpp"
#include "workloads/blas_core.hpp"

namespace dsgd {
int& cli_exit_code() {
  static int code = 0;
  return code;
}
}  // namespace dsgd

int main(int argc, char** argv) {
  // Copies 10-20x slower by where their buffers sit (this CPU's rep movsb): restarts the
  // program with glibc's copy set to avoid it, before anything else runs (core/copy_aliasing.hpp).
  dsgd::copy_aliasing_start(argv);
  try {
    // OpenBLAS's fastest kernels for this CPU where its detection fell back to slower ones; a
    // BLAS core this CPU cannot run (a stray OPENBLAS_CORETYPE) is one clear error, not a SIGILL.
    const std::string blas = dsgd::blas_core_start();
    CLI::App app{"dsgd-bench: benchmark distributed SGD variants on real MPI workers; results in SQLite"};
    const dsgd::SystemInfo sys = dsgd::system_info_read();
    app.set_version_flag("--version", fmt::format("dsgd-bench {} (commit {}, {} build; {})", sys.tool_version,
                                                  sys.git_commit, sys.build_type, blas));
    app.require_subcommand(1);
    dsgd::setup_run(app, argc, argv);
    dsgd::setup_runs(app);
    dsgd::setup_show(app);
    dsgd::setup_list(app);
    dsgd::setup_topology(app);
    dsgd::setup_calibrate(app, argc, argv);
    dsgd::setup_trace(app);
    dsgd::setup_validate(app);
    dsgd::setup_report(app);
    dsgd::setup_compare(app);
    dsgd::setup_suite(app);
    dsgd::setup_history(app);
    dsgd::setup_track(app);
    return dsgd::app_main_run(app, argc, argv, "dsgd-bench", dsgd::cli_exit_code());
  } catch (...) {  // CLI setup: the same message and exit code as a subcommand's error
    return dsgd::app_main_fail("dsgd-bench");
  }
}
