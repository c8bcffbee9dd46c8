// Per-step timings of this rank, kept in buffers allocated once, and their flush to
// rank 0 (an untimed gather at evaluation points), where each collective's `wait` and
// `comm` are separated by the arrival/departure method of docs/metrics.md:
//   A = max_j arrive_j (on rank 0's clock)
//   wait_i = A − arrive_i,   comm_i = depart_i − A
// (when depart_i < A, which a rooted collective allows, the whole span counts as wait).
#pragma once

#include <cstdint>
#include <vector>

#include "cluster/communicator.hpp"
#include "engine/clock_sync.hpp"
#include "results/store.hpp"

namespace dsgd {

// One step of this rank as the trainer records it: the step row's own fields (the gathered
// fields of step_fields(), results/row_fields.hpp: step, phase times, loss, injected delay,
// staleness, and any metric added there), the start on this rank's clock and the number of
// collectives. Rank 0 fills in the rest of the row when the steps are gathered.
struct StepTiming {
  StepRow row;
  double start = 0;    // clock_now_s() at step start (this rank's clock)
  int64_t events = 0;  // collectives recorded during this step
};

class StepRecorder {
 public:
  // Capacity: steps between flushes, collectives per step.
  void reserve(size_t max_steps, size_t max_events_per_step);
  CollEventLog& events() { return events_; }
  bool full() const { return used_ == steps_.size(); }
  size_t used() const { return used_; }
  // The next step's slot; the trainer fills it in. Never allocates.
  StepTiming& begin_step(int64_t step) {
    StepTiming& t = steps_[used_++];
    t = StepTiming{};
    t.row.step = step;
    return t;
  }
  void end_step(StepTiming& t) {
    t.events = static_cast<int64_t>(events_.size()) - events_before_;
    events_before_ = events_.size();
  }

  // Collective (untimed). Returns the rows of all ranks on rank 0 (empty elsewhere) and
  // clears the buffers. Timestamps are moved to rank 0's clock with offsets interpolated
  // between `prev` and `now`, then made relative to `time_origin`. Steps below `warmup`
  // are marked untimed.
  std::vector<StepRow> flush(Communicator& comm, const ClockOffsets& prev, const ClockOffsets& now, double time_origin,
                             int64_t warmup);

 private:
  void pack(Communicator& comm);  // this rank's steps and events into pack_, padded to the widest rank

  std::vector<StepTiming> steps_;
  size_t used_ = 0;
  size_t events_before_ = 0;
  CollEventLog events_;
  std::vector<double> pack_, gathered_;
};

// One collective as seen by every rank, on a common clock (for wait_comm_split).
struct CollSpan {
  double arrive = 0;
  double depart = 0;
};
struct WaitComm {
  double wait = 0;
  double comm = 0;
};
// Splits each rank's time in one collective into wait and comm (spans: one per rank).
void wait_comm_split(const CollSpan* spans, size_t ranks, WaitComm* out);

// A time interval [begin, end]; union_length sorts `intervals` and returns the length of
// their union (empty and inverted intervals count 0). Used for a step's overlap_s.
struct Interval {
  double begin = 0;
  double end = 0;
};
double union_length(std::vector<Interval>& intervals);

}  // namespace dsgd
