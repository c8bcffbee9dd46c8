// dsgd-tune: entry point of the tuner (DESIGN §8, docs/tuner.md). Builds the CLI from one
// setup_X per subcommand file, runs the chosen one, and turns any escaped exception into one
// clear message and an exit code (2 for bad input, 1 for failures), as dsgd-bench does.
#include <fmt/core.h>

#include <cstdio>

#include "cli/tune_commands.hpp"
#include "core/errors.hpp"
#include "core/system_info.hpp"

namespace dsgd {
int& tune_exit_code() {
  static int code = 0;
  return code;
}
}  // namespace dsgd

int main(int argc, char** argv) {
  CLI::App app{
      "dsgd-tune: find the sync period, batch, topology and algorithm that reach a target accuracy "
      "soonest on a given cluster (simulated); sessions and trials in SQLite"};
  const dsgd::SystemInfo sys = dsgd::system_info_read();
  app.set_version_flag(
      "--version", fmt::format("dsgd-tune {} (commit {}, {} build)", sys.tool_version, sys.git_commit, sys.build_type));
  app.require_subcommand(1);
  dsgd::setup_tune_recommend(app);
  dsgd::setup_tune_sessions(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  } catch (const dsgd::InputError& e) {
    fmt::print(stderr, "dsgd-tune: error: {}\n", e.what());
    if (!e.hint().empty()) fmt::print(stderr, "  hint: {}\n", e.hint());
    return 2;
  } catch (const dsgd::Error& e) {
    fmt::print(stderr, "dsgd-tune: error: {}\n", e.what());
    if (!e.hint().empty()) fmt::print(stderr, "  hint: {}\n", e.hint());
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "dsgd-tune: error: {}\n", e.what());
    return 1;
  }
  return dsgd::tune_exit_code();
}
