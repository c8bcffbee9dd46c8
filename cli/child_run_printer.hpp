// Prints the child runs of `dsgd-bench validate` and `dsgd-tune validate` as they go
// (engine/validation.hpp's observer): a header per run, its evaluation lines and errors indented,
// notes, and one live progress line on a terminal ("<command>: <role> (i/n)  elapsed m:ss").
#pragma once

#include <string>

#include "cli/progress_line.hpp"
#include "engine/validation.hpp"

namespace dsgd {

class ChildRunPrinter final : public ValidationObserver {
 public:
  // echo_evals: also print the children's evaluation lines (errors and hints always).
  ChildRunPrinter(std::string command, bool echo_evals) : command_(std::move(command)), echo_evals_(echo_evals) {}
  void child_begin(const std::string& role, const std::string& what, int index, int total) override;
  void child_line(const std::string& line) override;
  void note(const std::string& text) override;
  // Erases the progress line (before the final output).
  void done() { progress_.clear(); }

 private:
  void redraw(bool force);
  std::string command_;
  bool echo_evals_;
  ProgressLine progress_;
  std::string role_;
  int index_ = 0, total_ = 0;
};

}  // namespace dsgd
