// The stop kind of a stored stop reason (see trial_stop.hpp).
#include "results/trial_stop.hpp"

namespace dsgd {

namespace {

struct StopKindWord {
  StopKind kind;
  std::string_view word;
};

constexpr StopKindWord kStopKindWords[] = {
    {StopKind::stop_target, "target"},     {StopKind::stop_budget, "budget"},
    {StopKind::stop_diverged, "diverged"}, {StopKind::stop_end_of_steps, "end-of-steps"},
    {StopKind::stop_error, "error"},
};

}  // namespace

StopKind trial_stop_kind_of_reason(std::string_view reason) {
  for (const StopKindWord& w : kStopKindWords)
    if (reason.substr(0, w.word.size()) == w.word) return w.kind;
  return StopKind::stop_run_ended;
}

}  // namespace dsgd
