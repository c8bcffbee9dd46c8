// One live progress line on a terminal, redrawn in place ("\r" + erase), at most a few times a
// second: for `run`, step of total, samples/s, elapsed and remaining wall time, last loss; for
// other commands (calibrate, validate) any text they pass to draw(). Prints nothing at all
// when stdout is not a terminal (logs and pipes stay clean). Under a self-launch rank 0's
// stdout is the launcher's terminal (launcher_adopt_terminal), so `run` and `calibrate` with
// --workers N > 1 draw it too.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace dsgd {

class ProgressLine {
 public:
  // samples_per_step: the global batch (per-worker batch x computing workers).
  explicit ProgressLine(double samples_per_step = 0);
  bool enabled() const { return enabled_; }
  // Redraws when at least the redraw interval has passed since the last redraw.
  void update(int64_t done, int64_t total, double last_loss);
  // Redraws `text` (a line without newline) when the redraw interval has passed, or at once
  // when `force`.
  void draw(const std::string& text, bool force = false);
  // Seconds since construction (for a command's own "elapsed").
  double elapsed_s() const;
  // Erases the line (before printing something else, and at the end).
  void clear();

  // "m:ss" or "h:mm:ss" ("?" when not finite).
  static std::string duration_text(double s);
  // The line's text (without "\r" and erase), exposed for tests.
  static std::string format(int64_t done, int64_t total, double samples_per_s, double elapsed_s, double remaining_s,
                            double last_loss);

 private:
  using Clock = std::chrono::steady_clock;
  bool enabled_ = false;
  bool shown_ = false;
  double samples_per_step_ = 0;
  Clock::time_point start_, last_draw_, created_;
  int64_t start_step_ = -1;
};

}  // namespace dsgd
