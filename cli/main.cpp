// dsgd-bench: entry point. Builds the CLI from one setup_X per subcommand file, runs the
// chosen one, and turns any escaped exception into one clear message and an exit code
// (2 for bad input, 1 for failures). Standard output is flushed and closed here with its
// errors checked, so output lost to a full disk or a closed pipe is an error, not exit 0.
#include <fmt/core.h>

#include <cstdio>

#include "cli/commands.hpp"
#include "core/errors.hpp"
#include "core/output_file.hpp"
#include "core/system_info.hpp"

namespace dsgd {
int& cli_exit_code() {
  static int code = 0;
  return code;
}
}  // namespace dsgd

int main(int argc, char** argv) {
  CLI::App app{"dsgd-bench: benchmark distributed SGD variants on real MPI workers; results in SQLite"};
  const dsgd::SystemInfo sys = dsgd::system_info_read();
  app.set_version_flag("--version", fmt::format("dsgd-bench {} (commit {}, {} build)", sys.tool_version, sys.git_commit,
                                                sys.build_type));
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
  try {
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      const int code = app.exit(e);  // --help / --version print here
      if (code != 0) return 2;
    }
    dsgd::stdout_close_checked();
  } catch (const dsgd::InputError& e) {
    fmt::print(stderr, "dsgd-bench: error: {}\n", e.what());
    if (!e.hint().empty()) fmt::print(stderr, "  hint: {}\n", e.hint());
    return 2;
  } catch (const dsgd::Error& e) {
    fmt::print(stderr, "dsgd-bench: error: {}\n", e.what());
    if (!e.hint().empty()) fmt::print(stderr, "  hint: {}\n", e.hint());
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "dsgd-bench: error: {}\n", e.what());
    return 1;
  }
  return dsgd::cli_exit_code();
}
