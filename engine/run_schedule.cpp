// See run_schedule.hpp.
#include "engine/run_schedule.hpp"

#include <algorithm>
#include <cmath>

namespace dsgd {

RunSchedule run_schedule_make(const RunConfig& cfg, size_t batches_per_epoch) {
  RunSchedule s;
  if (cfg.steps > 0) {
    s.steps = cfg.steps;
  } else {
    const double epochs = cfg.epochs > 0 ? cfg.epochs : 1.0;
    s.steps = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(epochs * static_cast<double>(batches_per_epoch))));
  }
  s.warmup = std::min<int64_t>(cfg.warmup, s.steps - 1);
  s.eval_every = cfg.eval_every > 0 ? cfg.eval_every : std::max<int64_t>(1, s.steps / 10);
  s.flush_every = std::min<int64_t>(s.eval_every, 1000);
  return s;
}

}  // namespace dsgd
