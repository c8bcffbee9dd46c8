// The shared end of both programs' main (dsgd-bench, dsgd-tune): parses the command line and
// runs the chosen subcommand, checks standard output (flushed and closed with its errors
// checked, so output lost to a full disk or a closed pipe is an error, not exit 0), and turns
// any escaped exception into one clear message and an exit code: 2 for bad input, 1 for
// failures, else the subcommand's own code. main wraps its setup in the same handler
// (app_main_fail), so nothing escapes main as std::terminate.
// After a signal (engine/interrupt.hpp) the watcher thread's exit code and record win: neither
// an error its cleanup caused here nor the normal return races it.
#pragma once

#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "core/errors.hpp"
#include "core/output_file.hpp"
#include "engine/interrupt.hpp"

namespace dsgd {

// Called inside a catch block: prints the exception being handled as one message (with its
// hint) and returns its exit code: 2 for InputError, 1 for anything else. Never throws: when
// the message cannot be printed (stderr closed or full) the exit code still says what happened,
// so it can end main's outermost handler.
inline int app_main_fail(const char* program) noexcept {
  interrupt_yield_to_watcher();
  int code = 1;
  try {
    try {
      throw;
    } catch (const InputError& e) {
      code = 2;
      fmt::print(stderr, "{}: error: {}\n", program, e.what());
      if (!e.hint().empty()) fmt::print(stderr, "  hint: {}\n", e.hint());
    } catch (const Error& e) {
      fmt::print(stderr, "{}: error: {}\n", program, e.what());
      if (!e.hint().empty()) fmt::print(stderr, "  hint: {}\n", e.hint());
    } catch (const std::exception& e) {
      fmt::print(stderr, "{}: error: {}\n", program, e.what());
    } catch (...) {
      fmt::print(stderr, "{}: error: unknown exception\n", program);
    }
  } catch (...) {  // printing failed
  }
  return code;
}

inline int app_main_run(CLI::App& app, int argc, char** argv, const char* program, const int& exit_code) {
  try {
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      const int code = app.exit(e);  // --help / --version print here
      if (code != 0) return 2;
    }
    stdout_close_checked();
  } catch (...) {
    return app_main_fail(program);
  }
  interrupt_yield_to_watcher();
  return exit_code;
}

}  // namespace dsgd
