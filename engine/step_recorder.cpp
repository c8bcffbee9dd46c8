// See step_recorder.hpp. Wire format of one rank's flush (doubles):
//   [n_steps, n_events, steps × step_record_size(), events × kEventFields], padded to the
//   largest rank's size for one MPI_Gather. A step is its row's gathered fields in table order
//   (step_wire_pack, results/row_fields.hpp), then its start and its number of events.
// A step's overlap_s is the length of the union of its requests' in-flight intervals
// (time during which at least one collective was in flight while the rank computed), so it
// never exceeds the step however many requests overlap each other.
#include "engine/step_recorder.hpp"

#include <algorithm>
#include <cmath>

#include "core/errors.hpp"
#include "results/row_fields.hpp"

namespace dsgd {

namespace {
constexpr size_t kEventFields = 6;
// Doubles per step on the wire: the gathered row fields, start, events.
size_t step_record_size() {
  return step_wire_fields() + 2;
}
}  // namespace

void StepRecorder::reserve(size_t max_steps, size_t max_events_per_step) {
  steps_.assign(max_steps, StepTiming{});
  events_.reserve(max_steps * std::max<size_t>(1, max_events_per_step));
  pack_.reserve(2 + max_steps * step_record_size() + max_steps * max_events_per_step * kEventFields);
  used_ = 0;
  events_before_ = 0;
}

double union_length(std::vector<Interval>& intervals) {
  std::sort(intervals.begin(), intervals.end(), [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
  double total = 0;
  double cur_begin = 0, cur_end = 0;
  bool open = false;
  for (const Interval& iv : intervals) {
    if (!(iv.end > iv.begin)) continue;
    if (open && iv.begin <= cur_end) {
      cur_end = std::max(cur_end, iv.end);
      continue;
    }
    if (open) total += cur_end - cur_begin;
    cur_begin = iv.begin;
    cur_end = iv.end;
    open = true;
  }
  if (open) total += cur_end - cur_begin;
  return total;
}

void wait_comm_split(const CollSpan* spans, size_t ranks, WaitComm* out) {
  double last_arrival = spans[0].arrive;
  for (size_t r = 1; r < ranks; ++r) last_arrival = std::max(last_arrival, spans[r].arrive);
  for (size_t r = 0; r < ranks; ++r) {
    const double total = std::max(0.0, spans[r].depart - spans[r].arrive);
    if (spans[r].depart <= last_arrival) {
      out[r] = WaitComm{total, 0.0};
    } else {
      const double wait = std::max(0.0, last_arrival - spans[r].arrive);
      out[r] = WaitComm{wait, total - wait};
    }
  }
}

namespace {

// One rank's part of the gathered buffer: its step records and its collective events.
struct RankView {
  const double* steps = nullptr;
  const double* events = nullptr;
  size_t n_steps = 0, n_events = 0;
};

// A step record of the wire format (step_record_size() values) as a row, on rank 0's clock.
void step_row_unpack(const double* f, int rank, const ClockOffsets& prev, const ClockOffsets& now, double time_origin,
                     int64_t warmup, StepRow& row) {
  step_wire_unpack(f, row);
  const double start = f[step_wire_fields()];
  row.rank = rank;
  row.timed = row.step >= warmup;
  row.start_s = start - clock_sync_offset_at(prev, now, rank, start) - time_origin;
}

// The number of collective events of a step record.
size_t step_record_events(const double* f) {
  return static_cast<size_t>(f[step_wire_fields() + 1]);
}

// A rank's events of one step: its collectives (every rank runs the same ones, in the same
// order: matched by index for the wait/comm split, returned in `collectives`) and its
// one-sided epochs (one origin and one target, not every rank, and ranks of an asynchronous
// algorithm are not in step: any number per rank, no cross-rank wait, all of it is comm).
void step_events_account(const double* events, size_t count, StepRow& row, std::vector<Interval>& in_flight,
                         std::vector<const double*>& collectives) {
  collectives.clear();
  in_flight.clear();
  for (size_t e = 0; e < count; ++e) {
    const double* ef = events + e * kEventFields;
    if (ef[5] > ef[4]) in_flight.push_back(Interval{ef[4], ef[5]});
    row.bytes_sent += ef[2];
    if (static_cast<int32_t>(ef[3]) == static_cast<int32_t>(CollKind::coll_onesided))
      row.comm_s += std::max(0.0, ef[1] - ef[0]);
    else
      collectives.push_back(ef);
  }
  row.overlap_s = union_length(in_flight);
}

}  // namespace

// Packs this rank's steps and events into pack_ (wire format: [n_steps, n_events, steps
// (step_record_size() each), events (kEventFields each)]), padded to the widest rank.
void StepRecorder::pack(Communicator& comm) {
  const size_t n_events = events_.size();
  pack_.clear();
  pack_.push_back(static_cast<double>(used_));
  pack_.push_back(static_cast<double>(n_events));
  for (size_t i = 0; i < used_; ++i) {
    const StepTiming& t = steps_[i];
    const size_t at = pack_.size();
    pack_.resize(at + step_wire_fields());
    step_wire_pack(t.row, pack_.data() + at);
    pack_.insert(pack_.end(), {t.start, static_cast<double>(t.events)});
  }
  const CollEvent* ev = events_.data();
  for (size_t i = 0; i < n_events; ++i)
    pack_.insert(pack_.end(), {ev[i].arrive, ev[i].depart, ev[i].bytes_sent, static_cast<double>(ev[i].kind),
                               ev[i].launch, ev[i].in_flight_until});
  double width = static_cast<double>(pack_.size());
  comm.untimed_allreduce_max(&width, 1);
  pack_.resize(static_cast<size_t>(width), 0.0);
}

std::vector<StepRow> StepRecorder::flush(Communicator& comm, const ClockOffsets& prev, const ClockOffsets& now,
                                         double time_origin, int64_t warmup) {
  const int n = comm.size();
  comm.flush_device_timing();  // device backends: the events' device times, before they are read
  pack(comm);
  const size_t w = pack_.size();
  if (comm.rank() == 0) gathered_.resize(w * static_cast<size_t>(n));
  comm.untimed_gather(pack_.data(), w, gathered_.data(), 0);
  used_ = 0;
  events_before_ = 0;
  events_.clear();
  std::vector<StepRow> rows;
  if (comm.rank() != 0) return rows;

  std::vector<RankView> views(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    const double* base = gathered_.data() + w * static_cast<size_t>(r);
    RankView v{base + 2, nullptr, static_cast<size_t>(base[0]), static_cast<size_t>(base[1])};
    v.events = v.steps + v.n_steps * step_record_size();
    views[static_cast<size_t>(r)] = v;
    if (v.n_steps != views[0].n_steps)
      DSGD_THROW(Error, "this is a bug in the algorithm: every rank must run the same steps",
                 "rank {} recorded {} steps, rank 0 {}", r, v.n_steps, views[0].n_steps);
  }
  const size_t n_steps = views[0].n_steps;
  rows.resize(n_steps * static_cast<size_t>(n));
  std::vector<CollSpan> spans(static_cast<size_t>(n));
  std::vector<WaitComm> split(static_cast<size_t>(n));
  std::vector<size_t> event_cursor(static_cast<size_t>(n), 0);
  std::vector<Interval> in_flight;
  std::vector<std::vector<const double*>> collectives(static_cast<size_t>(n));
  for (size_t s = 0; s < n_steps; ++s) {
    StepRow* step_rows = &rows[s * static_cast<size_t>(n)];
    for (int r = 0; r < n; ++r) {
      const double* f = views[r].steps + s * step_record_size();
      step_row_unpack(f, r, prev, now, time_origin, warmup, step_rows[r]);
      const size_t mine = step_record_events(f);
      step_events_account(views[r].events + event_cursor[r] * kEventFields, mine, step_rows[r], in_flight,
                          collectives[r]);
      if (collectives[r].size() != collectives[0].size())
        DSGD_THROW(Error, "this is a bug in the algorithm: every rank must run the same collectives",
                   "step {}: rank {} recorded {} collectives, rank 0 {}", step_rows[r].step, r, collectives[r].size(),
                   collectives[0].size());
      event_cursor[r] += mine;
    }
    for (size_t e = 0; e < collectives[0].size(); ++e) {
      for (int r = 0; r < n; ++r) {
        const double* ef = collectives[r][e];
        const double off = clock_sync_offset_at(prev, now, r, ef[0]);
        spans[r] = CollSpan{ef[0] - off, ef[1] - off};
      }
      wait_comm_split(spans.data(), spans.size(), split.data());
      for (int r = 0; r < n; ++r) {
        step_rows[r].wait_s += split[r].wait;
        step_rows[r].comm_s += split[r].comm;
      }
    }
  }
  return rows;
}

}  // namespace dsgd
