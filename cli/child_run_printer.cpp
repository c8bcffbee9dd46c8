// See child_run_printer.hpp.
#include "cli/child_run_printer.hpp"

#include <fmt/format.h>

#include <cstdio>

namespace dsgd {

void ChildRunPrinter::child_begin(const std::string& role, const std::string& what, int index, int total) {
  progress_.clear();
  // The child is a `dsgd-bench run` unless `what` names its command (validate's fabric calibration).
  fmt::print("# {} ({}){}\n", role, what, what.rfind("calibrate", 0) == 0 ? "" : ": dsgd-bench run");
  std::fflush(stdout);
  role_ = role;
  index_ = index;
  total_ = total;
  redraw(true);
}

void ChildRunPrinter::child_line(const std::string& line) {
  const bool eval = line.rfind("eval step", 0) == 0;
  if ((eval && echo_evals_) || line.rfind("dsgd-bench:", 0) == 0 || line.rfind("  hint", 0) == 0) {
    progress_.clear();
    fmt::print("    {}\n", line);
    std::fflush(stdout);
    redraw(true);
    return;
  }
  redraw(false);
}

void ChildRunPrinter::note(const std::string& text) {
  progress_.clear();
  fmt::print("# note: {}\n", text);
  std::fflush(stdout);
}

void ChildRunPrinter::redraw(bool force) {
  progress_.draw(fmt::format("  {}: {} ({}/{})  elapsed {}", command_, role_, index_, total_,
                             ProgressLine::duration_text(progress_.elapsed_s())),
                 force);
}

}  // namespace dsgd
