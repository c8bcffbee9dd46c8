// Chrome trace-event JSON writer (see trace.hpp). The events are streamed (a 1 MiB
// buffer flushed to the output), never built as one JSON tree, so a 200,000-event trace
// costs a few MB of memory beyond the rows themselves. Numbers: ts / dur in microseconds
// with 3 decimals (nanoseconds); args keep full double precision; NaN / inf are written
// as null (JSON has neither). Rows whose start_s is not finite are left out, and a phase
// whose duration is not finite is left out of its step.
#include "results/trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>

#include "core/errors.hpp"

namespace dsgd {

namespace {

struct Phase {
  const char* name;
  const char* category;
  double StepRow::*field;
  bool only_when_positive;
};

// The layout order inside a step (trace.hpp explains why wait precedes comm).
constexpr Phase kPhases[] = {
    {"data", "data", &StepRow::data_s, false},  {"fwd", "compute", &StepRow::fwd_s, false},
    {"bwd", "compute", &StepRow::bwd_s, false}, {"injected", "straggler", &StepRow::injected_s, true},
    {"wait", "comm", &StepRow::wait_s, false},  {"comm", "comm", &StepRow::comm_s, false},
    {"opt", "compute", &StepRow::opt_s, false},
};

constexpr size_t flush_bytes = size_t(1) << 20;

bool phase_present(const StepRow& row, const Phase& phase) {
  const double value = row.*(phase.field);
  return std::isfinite(value) && (!phase.only_when_positive || value > 0);
}

// Events one row contributes: its step event and its phases.
size_t row_event_count(const StepRow& row) {
  if (!std::isfinite(row.start_s)) return 0;
  size_t count = 1;
  for (const Phase& phase : kPhases) count += phase_present(row, phase) ? 1 : 0;
  return count;
}

// The stored rows of one step: rows[begin, end) of the sorted rows.
struct StepGroup {
  int64_t step = 0;
  size_t begin = 0, end = 0;
  size_t events = 0;
};

// A number for an args value: shortest round-trip form, null when not finite.
void number_append(fmt::memory_buffer& buf, double value) {
  if (std::isfinite(value)) {
    fmt::format_to(std::back_inserter(buf), "{}", value);
  } else {
    fmt::format_to(std::back_inserter(buf), "null");
  }
}

void micros_append(fmt::memory_buffer& buf, double seconds) {
  fmt::format_to(std::back_inserter(buf), "{:.3f}", seconds * 1e6);
}

class EventWriter {
 public:
  explicit EventWriter(std::ostream& out) : out_(out) {}

  // Starts the next element of traceEvents.
  fmt::memory_buffer& next() {
    if (count_++ > 0) buf_.push_back(',');
    buf_.push_back('\n');
    return buf_;
  }
  void raw(std::string_view text) { buf_.append(text); }
  void maybe_flush() {
    if (buf_.size() >= flush_bytes) flush();
  }
  void flush() {
    out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    buf_.clear();
    if (!out_) DSGD_THROW(Error, "check the disk space and the output path", "writing the trace failed");
  }
  size_t count() const { return count_; }

 private:
  std::ostream& out_;
  fmt::memory_buffer buf_;
  size_t count_ = 0;
};

void complete_event(EventWriter& w, const char* name, const char* category, int tid, double ts_s, double dur_s) {
  fmt::memory_buffer& buf = w.next();
  fmt::format_to(std::back_inserter(buf), R"({{"name":"{}","cat":"{}","ph":"X","pid":0,"tid":{},"ts":)", name, category,
                 tid);
  micros_append(buf, ts_s);
  buf.append(std::string_view(R"(,"dur":)"));
  micros_append(buf, dur_s);
  buf.push_back('}');
}

// One row: the enclosing step event, then its phases back to back.
void row_events(EventWriter& w, const StepRow& row) {
  if (!std::isfinite(row.start_s)) return;
  double phases_total = 0;
  for (const Phase& phase : kPhases) {
    if (phase_present(row, phase)) phases_total += row.*(phase.field);
  }
  // The step event encloses its phases (Perfetto nests slices by containment); step_s
  // itself is in args.
  const double step_dur = std::isfinite(row.step_s) ? std::max(row.step_s, phases_total) : phases_total;
  fmt::memory_buffer& buf = w.next();
  fmt::format_to(std::back_inserter(buf), R"({{"name":"step","cat":"step","ph":"X","pid":0,"tid":{},"ts":)", row.rank);
  micros_append(buf, row.start_s);
  buf.append(std::string_view(R"(,"dur":)"));
  micros_append(buf, step_dur);
  fmt::format_to(std::back_inserter(buf), R"(,"args":{{"step":{},"timed":{},"step_s":)", row.step,
                 row.timed ? "true" : "false");
  number_append(buf, row.step_s);
  buf.append(std::string_view(R"(,"train_loss":)"));
  number_append(buf, row.train_loss);
  buf.append(std::string_view(R"(,"bytes_sent":)"));
  number_append(buf, row.bytes_sent);
  buf.append(std::string_view(R"(,"overlap_s":)"));
  number_append(buf, row.overlap_s);
  buf.append(std::string_view("}}"));

  double cursor = row.start_s;
  for (const Phase& phase : kPhases) {
    if (!phase_present(row, phase)) continue;
    const double dur = row.*(phase.field);
    complete_event(w, phase.name, phase.category, row.rank, cursor, dur);
    cursor += dur;
  }
  w.maybe_flush();
}

// Where an evaluation after `step` steps goes: the end of the lowest rank's step
// step-1, else the start of its step `step`; none when neither row is stored.
struct EvalPlacement {
  const EvalRow* eval = nullptr;
  double ts_s = 0;
};

std::string window_text(const TraceOptions& options) {
  if (!options.window_given) return "all";
  const StepWindow& w = options.window;
  return fmt::format("{}:{}", w.begin,
                     w.end == std::numeric_limits<int64_t>::max() ? std::string() : std::to_string(w.end));
}

nlohmann::json other_data(const RunRecord& run, const TraceOptions& options, const TraceStats& stats,
                          size_t max_events) {
  nlohmann::json config = nlohmann::json::parse(run.config_json, nullptr, false);
  if (config.is_discarded()) config = run.config_json;
  nlohmann::json trace = {
      {"generator", "dsgd-bench trace"},
      {"time_axis", "ts/dur in microseconds since the run's time origin (rank 0's clock)"},
      {"layout",
       "per step and rank: data, fwd, bwd, injected (when > 0), wait, comm, opt laid out back to back "
       "from start_s with the stored per-phase totals; wait precedes comm inside a collective; "
       "the step slice spans max(step_s, sum of phases)"},
      {"max_events", max_events},
      {"events", stats.events},
      {"steps_window", window_text(options)},
      {"steps_in_window", stats.steps_in_window},
      {"steps_written", stats.steps_written},
      {"first_step", stats.first_step},
      {"last_step", stats.last_step},
      {"sample_every", stats.sample_every},
      {"sampled", stats.sample_every > 1},
  };
  if (stats.sample_every > 1) {
    trace["sampling"] = fmt::format(
        "every {}th stored step of the window is kept so that the trace holds at most {} events; "
        "pass --steps A:B for a full-resolution window",
        stats.sample_every, max_events);
  }
  return {
      {"run_id", run.id},
      {"status", run_status_text(run.status)},
      {"workload", run.workload},
      {"dataset", run.dataset},
      {"algorithm", run.algorithm},
      {"backend", run.backend},
      {"workers", run.workers},
      {"batch", run.batch},
      {"period", run.period},
      {"steps", run.steps},
      {"warmup", run.warmup},
      {"seed", std::to_string(run.seed)},
      {"tag", run.tag},
      {"target", run.target},
      {"created_at", run.created_at},
      {"finished_at", run.finished_at},
      {"host", run.host},
      {"cpu_model", run.cpu_model},
      {"mpi_version", run.mpi_version},
      {"git_commit", run.git_commit},
      {"tool_version", run.tool_version},
      {"build_type", run.build_type},
      {"config", config},
      {"trace", trace},
  };
}

// Compact JSON; invalid UTF-8 in stored text (a tag) is replaced rather than thrown on.
std::string json_dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

int64_t parse_step_bound(const std::string& text, std::string_view part) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
  if (ec != std::errc() || end != part.data() + part.size() || value < 0) {
    DSGD_THROW(InputError, "pass --steps A:B with 0 <= A < B (steps A..B-1), e.g. --steps 100:200",
               "--steps '{}': '{}' is not a non-negative step number", text, part);
  }
  return value;
}

// The run's step rows in (step, rank) order.
std::vector<const StepRow*> rows_in_step_order(const std::vector<StepRow>& steps) {
  std::vector<const StepRow*> rows;
  rows.reserve(steps.size());
  for (const StepRow& row : steps) rows.push_back(&row);
  std::stable_sort(rows.begin(), rows.end(), [](const StepRow* a, const StepRow* b) {
    return a->step != b->step ? a->step < b->step : a->rank < b->rank;
  });
  return rows;
}

// The rows grouped by step, those inside --steps only; throws when none is.
std::vector<StepGroup> window_step_groups(const RunRecord& run, const std::vector<const StepRow*>& rows,
                                          const TraceOptions& options) {
  std::vector<StepGroup> window_steps;
  for (size_t i = 0; i < rows.size();) {
    StepGroup group;
    group.step = rows[i]->step;
    group.begin = i;
    while (i < rows.size() && rows[i]->step == group.step) group.events += row_event_count(*rows[i++]);
    group.end = i;
    if (group.step >= options.window.begin && group.step < options.window.end) window_steps.push_back(group);
  }
  if (window_steps.empty()) {
    DSGD_THROW(InputError, "pass a --steps window inside the stored steps",
               "run {} has no stored steps in --steps {} (stored: steps {}..{})", run.id, window_text(options),
               rows.front()->step, rows.back()->step);
  }
  return window_steps;
}

// Tracks: every rank of the run, and any rank found in the rows.
std::set<int> trace_ranks(const RunRecord& run, const std::vector<const StepRow*>& rows) {
  std::set<int> ranks;
  for (int r = 0; r < run.workers; ++r) ranks.insert(r);
  for (const StepRow* row : rows) ranks.insert(row->rank);
  return ranks;
}

// Evaluations inside the window (from just before its first step to just after its
// last), placed on the lowest rank's step boundaries.
std::vector<EvalPlacement> evals_place(const std::vector<EvalRow>& evals, const std::vector<const StepRow*>& rows,
                                       const std::vector<StepGroup>& window_steps) {
  std::vector<EvalPlacement> placed;
  const int64_t first_window = window_steps.front().step, last_window = window_steps.back().step;
  for (const EvalRow& eval : evals) {
    if (eval.step < first_window || eval.step > last_window + 1) continue;
    auto lowest_rank_row = [&](int64_t step) -> const StepRow* {
      auto it =
          std::lower_bound(rows.begin(), rows.end(), step, [](const StepRow* r, int64_t s) { return r->step < s; });
      return it != rows.end() && (*it)->step == step ? *it : nullptr;
    };
    if (const StepRow* before = lowest_rank_row(eval.step - 1);
        before && std::isfinite(before->start_s) && std::isfinite(before->step_s)) {
      placed.push_back({&eval, before->start_s + before->step_s});
    } else if (const StepRow* after = lowest_rank_row(eval.step); after && std::isfinite(after->start_s)) {
      placed.push_back({&eval, after->start_s});
    }
  }
  return placed;
}

// The events of every k-th step of the window.
size_t events_every(const std::vector<StepGroup>& window_steps, size_t k) {
  size_t total = 0;
  for (size_t i = 0; i < window_steps.size(); i += k) total += window_steps[i].events;
  return total;
}

// The smallest k whose every-k-th-step selection fits --max-events beside the fixed
// (metadata and evaluation) events; throws when not even one step fits.
size_t sample_every_choose(const RunRecord& run, const TraceOptions& options,
                           const std::vector<StepGroup>& window_steps, size_t fixed_events) {
  if (options.max_events < fixed_events + window_steps.front().events) {
    DSGD_THROW(InputError, fmt::format("pass --max-events {} or more", fixed_events + window_steps.front().events),
               "--max-events {} cannot hold one step of run {} ({} events) and its {} metadata and "
               "evaluation events",
               options.max_events, run.id, window_steps.front().events, fixed_events);
  }
  const size_t budget = options.max_events - fixed_events;
  size_t all_events = events_every(window_steps, 1);
  size_t k = all_events <= budget ? 1 : std::max<size_t>(2, (all_events + budget - 1) / budget);
  while (k < window_steps.size() && events_every(window_steps, k) > budget) ++k;
  k = std::min(k, std::max<size_t>(1, window_steps.size()));
  return k;
}

// The process name and, per rank, its thread name and sort index.
void metadata_events(EventWriter& w, const RunRecord& run, const std::set<int>& ranks) {
  {
    fmt::memory_buffer& buf = w.next();
    const std::string name =
        fmt::format("run {}: {} {} on {} workers", run.id, run.algorithm, run.workload, run.workers);
    fmt::format_to(std::back_inserter(buf),
                   R"({{"name":"process_name","ph":"M","pid":0,"tid":0,"args":{{"name":{}}}}})",
                   json_dump(nlohmann::json(name)));
  }
  for (int rank : ranks) {
    fmt::format_to(std::back_inserter(w.next()),
                   R"({{"name":"thread_name","ph":"M","pid":0,"tid":{},"args":{{"name":"rank {}"}}}})", rank, rank);
    fmt::format_to(std::back_inserter(w.next()),
                   R"({{"name":"thread_sort_index","ph":"M","pid":0,"tid":{},"args":{{"sort_index":{}}}}})", rank,
                   rank);
  }
}

// One evaluation as an instant event with its metrics.
void eval_event(EventWriter& w, const EvalPlacement& p) {
  fmt::memory_buffer& buf = w.next();
  fmt::format_to(std::back_inserter(buf), R"({{"name":"eval","cat":"eval","ph":"i","s":"p","pid":0,"tid":0,"ts":)");
  micros_append(buf, p.ts_s);
  fmt::format_to(std::back_inserter(buf), R"(,"args":{{"step":{},"time_s":)", p.eval->step);
  number_append(buf, p.eval->time_s);
  buf.append(std::string_view(R"(,"train_loss":)"));
  number_append(buf, p.eval->train_loss);
  buf.append(std::string_view(R"(,"test_loss":)"));
  number_append(buf, p.eval->test_loss);
  buf.append(std::string_view(R"(,"test_acc":)"));
  number_append(buf, p.eval->test_acc);
  buf.append(std::string_view("}}"));
}

}  // namespace

StepWindow trace_parse_steps(const std::string& text) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos || text.find(':', colon + 1) != std::string::npos || text == ":") {
    DSGD_THROW(InputError, "pass --steps A:B with 0 <= A < B (steps A..B-1), e.g. --steps 100:200",
               "--steps '{}' is not of the form A:B", text);
  }
  StepWindow window;
  const std::string_view view(text);
  if (colon > 0) window.begin = parse_step_bound(text, view.substr(0, colon));
  if (colon + 1 < text.size()) window.end = parse_step_bound(text, view.substr(colon + 1));
  if (window.begin >= window.end) {
    DSGD_THROW(InputError, "pass --steps A:B with 0 <= A < B (steps A..B-1), e.g. --steps 100:200",
               "--steps '{}' selects no steps (A must be below B)", text);
  }
  return window;
}

TraceStats trace_write(const RunRecord& run, const std::vector<StepRow>& steps, const std::vector<EvalRow>& evals,
                       const TraceOptions& options, std::ostream& out) {
  if (steps.empty()) {
    DSGD_THROW(InputError, "runs store step timings unless run with timers off; pick another run",
               "run {} has no stored step timings to trace", run.id);
  }
  const std::vector<const StepRow*> rows = rows_in_step_order(steps);
  const std::vector<StepGroup> window_steps = window_step_groups(run, rows, options);
  const std::set<int> ranks = trace_ranks(run, rows);
  const std::vector<EvalPlacement> placed = evals_place(evals, rows, window_steps);
  const size_t fixed_events = 1 + 2 * ranks.size() + placed.size();
  const size_t k = sample_every_choose(run, options, window_steps, fixed_events);

  TraceStats stats;
  stats.sample_every = static_cast<int64_t>(k);
  stats.steps_in_window = static_cast<int64_t>(window_steps.size());
  stats.ranks = static_cast<int>(ranks.size());
  stats.first_step = window_steps.front().step;
  for (size_t i = 0; i < window_steps.size(); i += k) {
    ++stats.steps_written;
    stats.last_step = window_steps[i].step;
  }
  stats.events = fixed_events + events_every(window_steps, k);

  EventWriter w(out);
  w.raw("{\"traceEvents\":[");
  metadata_events(w, run, ranks);
  for (size_t i = 0; i < window_steps.size(); i += k) {
    for (size_t r = window_steps[i].begin; r < window_steps[i].end; ++r) row_events(w, *rows[r]);
  }
  for (const EvalPlacement& p : placed) eval_event(w, p);
  if (w.count() != stats.events) {
    DSGD_THROW(Error, "this is a bug in the trace writer", "trace of run {}: counted {} events, wrote {}", run.id,
               stats.events, w.count());
  }
  w.raw(fmt::format("\n],\"displayTimeUnit\":\"ms\",\"otherData\":{}}}\n",
                    json_dump(other_data(run, options, stats, options.max_events))));
  w.flush();
  out.flush();
  if (!out) DSGD_THROW(Error, "check the disk space and the output path", "writing the trace failed");
  return stats;
}

TraceStats trace_write_run(const Store& store, int64_t run_id, const TraceOptions& options, std::ostream& out) {
  const RunWithSummary run = store.run_get(run_id);
  return trace_write(run.run, store.steps_get(run_id), store.evals_get(run_id), options, out);
}

}  // namespace dsgd
