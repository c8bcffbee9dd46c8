// dsgd-tune: entry point of the tuner (docs/tuner.md). Builds the CLI from one setup_X per
// subcommand file; app_main_run (cli/app_main.hpp) runs the chosen one, checks stdout and maps
// errors to exit codes, as for dsgd-bench.
#include <fmt/core.h>

#include <cstdio>

#include "cli/app_main.hpp"
#include "cli/tune_commands.hpp"
#include "core/copy_aliasing.hpp"
#include "core/system_info.hpp"
#include "workloads/blas_core.hpp"

namespace dsgd {
int& tune_exit_code() {
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
    CLI::App app{
        "dsgd-tune: find the sync period, batch, topology and algorithm that reach a target accuracy "
        "soonest on a given cluster (simulated); sessions and trials in SQLite"};
    const dsgd::SystemInfo sys = dsgd::system_info_read();
    app.set_version_flag("--version", fmt::format("dsgd-tune {} (commit {}, {} build; {})", sys.tool_version,
                                                  sys.git_commit, sys.build_type, blas));
    app.require_subcommand(1);
    dsgd::setup_tune_recommend(app);
    dsgd::setup_tune_sessions(app);
    dsgd::setup_tune_validate(app);
    dsgd::setup_tune_grid(app);
    dsgd::setup_tune_bench(app);
    return dsgd::app_main_run(app, argc, argv, "dsgd-tune", dsgd::tune_exit_code());
  } catch (...) {  // CLI setup: the same message and exit code as a subcommand's error
    return dsgd::app_main_fail("dsgd-tune");
  }
}
