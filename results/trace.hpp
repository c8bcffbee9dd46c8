// Chrome trace-event JSON of a stored run's per-rank timeline (`dsgd-bench trace`), the
// format Perfetto (ui.perfetto.dev) and chrome://tracing open:
//   {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {run context, trace notes}}
// pid 0 is the run; tid = rank, named "rank R" by thread_name metadata. For each stored
// (rank, step) row: a "step" complete event (ph "X") spanning the step, and inside it one
// complete event per phase, laid out back to back from the step's start_s in the order
//   data -> fwd -> bwd -> injected (only when > 0) -> wait -> comm -> opt
// with the stored durations. Wait precedes comm because inside a collective a rank first
// waits for the last peer to arrive, then the data moves (docs/metrics.md). The rows keep
// per-phase totals, not each collective's position, so an algorithm's post-update
// communication (e.g. localsgd's model average) is drawn in the same place; the sum of
// the phases falls short of step_s by the harness's bookkeeping (epsilon). Evaluations are
// instant events ("ph":"i") between the steps they follow. ts / dur are microseconds since
// the run's time origin (rank 0's clock).
// Size is bounded: at most max_events events (default 200,000); beyond that every k-th
// step is kept (the smallest k that fits), within the --steps window when one is given,
// and otherData says so.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <limits>
#include <string>
#include <vector>

#include "results/store.hpp"

namespace dsgd {

// Steps begin <= step < end.
struct StepWindow {
  int64_t begin = 0;
  int64_t end = std::numeric_limits<int64_t>::max();
};

// Parses "A:B" (A <= step < B; either side may be empty: "100:" or ":50"). Throws
// InputError naming the text for anything else, or when A >= B.
StepWindow trace_parse_steps(const std::string& text);

struct TraceOptions {
  StepWindow window;
  bool window_given = false;  // for otherData only
  size_t max_events = 200000;
};

// What was written.
struct TraceStats {
  size_t events = 0;                      // entries of traceEvents, metadata included
  int64_t steps_written = 0;              // distinct steps in the trace
  int64_t steps_in_window = 0;            // distinct stored steps in the window
  int64_t sample_every = 1;               // k: every k-th step of the window kept
  int64_t first_step = 0, last_step = 0;  // of the written steps
  int ranks = 0;                          // tracks (thread_name events)
};

// Writes the trace of `run` from its rows to out. Throws InputError when the run has no
// step rows in the window, or max_events cannot hold even one step; Error when writing
// fails.
TraceStats trace_write(const RunRecord& run, const std::vector<StepRow>& steps, const std::vector<EvalRow>& evals,
                       const TraceOptions& options, std::ostream& out);

// Loads run_id from the store (InputError when unknown) and writes its trace.
TraceStats trace_write_run(const Store& store, int64_t run_id, const TraceOptions& options, std::ostream& out);

}  // namespace dsgd
