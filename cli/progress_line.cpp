// See progress_line.hpp.
#include "cli/progress_line.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>

namespace dsgd {

namespace {

constexpr double kRedrawS = 0.25;

std::string clock_text(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const auto t = static_cast<int64_t>(std::llround(s));
  return t >= 3600 ? fmt::format("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60)
                   : fmt::format("{}:{:02}", t / 60, t % 60);
}

}  // namespace

std::string ProgressLine::duration_text(double s) {
  return clock_text(s);
}

ProgressLine::ProgressLine(double samples_per_step)
    : enabled_(::isatty(STDOUT_FILENO) == 1),
      samples_per_step_(samples_per_step),
      start_(Clock::now()),
      last_draw_(start_),
      created_(start_) {}

std::string ProgressLine::format(int64_t done, int64_t total, double samples_per_s, double elapsed_s,
                                 double remaining_s, double last_loss) {
  return fmt::format("  step {}/{}  {:.0f} samples/s  elapsed {}  remaining {}  loss {}", done, total, samples_per_s,
                     clock_text(elapsed_s), clock_text(remaining_s),
                     std::isfinite(last_loss) ? fmt::format("{:.4f}", last_loss) : std::string("-"));
}

void ProgressLine::update(int64_t done, int64_t total, double last_loss) {
  if (!enabled_) return;
  const Clock::time_point now = Clock::now();
  if (start_step_ < 0) {  // the rate counts from the first step seen (setup excluded)
    start_step_ = done;
    start_ = now;
    last_draw_ = now;
    return;
  }
  if (std::chrono::duration<double>(now - last_draw_).count() < kRedrawS && done != total) return;
  last_draw_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const int64_t steps = done - start_step_;
  const double rate = elapsed > 0 ? static_cast<double>(steps) * samples_per_step_ / elapsed : 0.0;
  // Remaining from the rate since the first step seen.
  const double remaining = steps > 0 ? elapsed / static_cast<double>(steps) * static_cast<double>(total - done) : NAN;
  draw(format(done, total, rate, elapsed, remaining, last_loss), true);
}

void ProgressLine::draw(const std::string& text, bool force) {
  if (!enabled_) return;
  const Clock::time_point now = Clock::now();
  if (!force && shown_ && std::chrono::duration<double>(now - last_draw_).count() < kRedrawS) return;
  last_draw_ = now;
  std::fputs(fmt::format("\r\033[K{}", text).c_str(), stdout);
  std::fflush(stdout);
  shown_ = true;
}

double ProgressLine::elapsed_s() const {
  return std::chrono::duration<double>(Clock::now() - created_).count();
}

void ProgressLine::clear() {
  if (!enabled_ || !shown_) return;
  std::fputs("\r\033[K", stdout);
  std::fflush(stdout);
  shown_ = false;
}

}  // namespace dsgd
