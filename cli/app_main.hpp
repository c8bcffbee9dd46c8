// The shared end of both programs' main (dsgd-bench, dsgd-tune): parses the command line and
// runs the chosen subcommand, checks standard output (flushed and closed with its errors
// checked, so output lost to a full disk or a closed pipe is an error, not exit 0), and turns
// any escaped exception into one clear message and an exit code: 2 for bad input, 1 for
// failures, else the subcommand's own code. After a signal (engine/interrupt.hpp) the watcher
// thread's exit code and record win: neither an error its cleanup caused here nor the normal
// return races it.
#pragma once

#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "core/errors.hpp"
#include "core/output_file.hpp"
#include "engine/interrupt.hpp"

namespace dsgd {

inline int app_main_run(CLI::App& app, int argc, char** argv, const char* program, const int& exit_code) {
  try {
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      const int code = app.exit(e);  // --help / --version print here
      if (code != 0) return 2;
    }
    stdout_close_checked();
  } catch (const InputError& e) {
    interrupt_yield_to_watcher();
    fmt::print(stderr, "{}: error: {}\n", program, e.what());
    if (!e.hint().empty()) fmt::print(stderr, "  hint: {}\n", e.hint());
    return 2;
  } catch (const Error& e) {
    interrupt_yield_to_watcher();
    fmt::print(stderr, "{}: error: {}\n", program, e.what());
    if (!e.hint().empty()) fmt::print(stderr, "  hint: {}\n", e.hint());
    return 1;
  } catch (const std::exception& e) {
    interrupt_yield_to_watcher();
    fmt::print(stderr, "{}: error: {}\n", program, e.what());
    return 1;
  }
  interrupt_yield_to_watcher();
  return exit_code;
}

}  // namespace dsgd
