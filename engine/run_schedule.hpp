// A run's schedule: how many steps it trains, how many of them are untimed warm-up, how
// often it evaluates and how often per-step timings are flushed. One definition for the
// trainer (real and simulated workers) and the simulator's timing-only mode.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/run_config.hpp"

namespace dsgd {

struct RunSchedule {
  int64_t steps = 0;        // total steps, warm-up included (>= 1)
  int64_t warmup = 0;       // untimed steps at the start (< steps)
  int64_t eval_every = 0;   // evaluate after every eval_every steps, and after the last
  int64_t flush_every = 0;  // per-step timings flushed to rank 0 at least this often
};

// --steps when given, else ceil(--epochs × batches_per_epoch) (one epoch by default);
// --eval-every when given, else a tenth of the steps.
RunSchedule run_schedule_make(const RunConfig& cfg, size_t batches_per_epoch);

}  // namespace dsgd
