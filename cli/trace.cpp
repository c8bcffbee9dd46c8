// `dsgd-bench trace RUN_ID -o FILE [--db PATH] [--steps A:B] [--max-events N]`: writes a
// stored run's per-rank timeline as Chrome trace-event JSON for Perfetto
// (ui.perfetto.dev) or chrome://tracing; layout and size bound in results/trace.hpp.
// The file is written beside its destination and renamed into place (core/output_file.hpp),
// so a failure (a full disk) never leaves half a trace; `-o -` writes to stdout.

#include "results/trace.hpp"

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "core/errors.hpp"
#include "core/output_file.hpp"
#include "results/store.hpp"

namespace dsgd {

namespace {

struct TraceCliOptions {
  int64_t run_id = 0;
  std::string db = "./dsgd.db";
  std::string output;  // default: run-<id>.trace.json
  std::string steps;   // A:B, empty: all
  int64_t max_events = 200000;
};

std::string stats_line(const TraceStats& s, const std::string& where) {
  std::string sampling =
      s.sample_every > 1 ? fmt::format(", every {}th step (bounded by --max-events)", s.sample_every) : std::string();
  return fmt::format("wrote {} events: {} ranks, steps {}..{} ({} of {} stored in the window){} to {}", s.events,
                     s.ranks, s.first_step, s.last_step, s.steps_written, s.steps_in_window, sampling, where);
}

void trace_run(const TraceCliOptions& o) {
  TraceOptions options;
  if (!o.steps.empty()) {
    options.window = trace_parse_steps(o.steps);
    options.window_given = true;
  }
  options.max_events = static_cast<size_t>(o.max_events);
  const Store store = Store::open_readonly(o.db);
  store.run_get(o.run_id);  // an unknown run is refused before any file is created

  const std::string path = o.output.empty() ? fmt::format("run-{}.trace.json", o.run_id) : o.output;
  OutputFile out(path, "trace");  // refuses an unwritable path before the work
  TraceStats stats;
  try {
    stats = trace_write_run(store, o.run_id, options, out.stream());
  } catch (const Error&) {
    out.throw_if_failed();  // the system's reason (a full disk) rather than the writer's
    throw;
  }
  out.commit();
  if (path == "-") {
    fmt::print(stderr, "{}\n", stats_line(stats, "stdout"));
    return;
  }
  fmt::print("{}\n", stats_line(stats, path));
  fmt::print("open it in https://ui.perfetto.dev (offline: chrome://tracing)\n");
}

}  // namespace

void setup_trace(CLI::App& app) {
  auto opts = std::make_shared<TraceCliOptions>();
  CLI::App* sub = app.add_subcommand(
      "trace", "Write a run's per-rank timeline as Chrome trace-event JSON (Perfetto, chrome://tracing)");
  sub->add_option("run_id", opts->run_id, "run id (see dsgd-bench runs)")->required()->check(CLI::PositiveNumber);
  sub->add_option("-o,--output", opts->output, "output file (default run-<id>.trace.json; - for stdout)");
  sub->add_option("--db", opts->db, "SQLite results database")->capture_default_str();
  sub->add_option("--steps", opts->steps, "only steps A <= step < B, e.g. 100:200 (A: or :B leave a side open)");
  sub->add_option("--max-events", opts->max_events,
                  "at most this many events; beyond it every k-th step is kept (stated in otherData)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->footer(
      "Each rank is a track; each step a slice holding data, fwd, bwd, injected, wait, comm, opt back to back\n"
      "(definitions in docs/metrics.md). Example:\n"
      "  dsgd-bench trace 3 -o run3.json --steps 100:200\n");
  sub->callback([opts]() { trace_run(*opts); });
}

}  // namespace dsgd
