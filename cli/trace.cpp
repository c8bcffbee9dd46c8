// `dsgd-bench trace RUN_ID -o FILE [--db PATH] [--steps A:B] [--max-events N]`: writes a
// stored run's per-rank timeline as Chrome trace-event JSON for Perfetto
// (ui.perfetto.dev) or chrome://tracing; layout and size bound in results/trace.hpp.
// The file is written beside its destination and renamed into place, so a failure never
// leaves half a trace; `-o -` writes to stdout.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "core/errors.hpp"
#include "results/store.hpp"
#include "results/trace.hpp"

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
  std::string sampling = s.sample_every > 1 ? fmt::format(", every {}th step (bounded by --max-events)", s.sample_every)
                                            : std::string();
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

  if (o.output == "-") {
    const TraceStats stats = trace_write_run(store, o.run_id, options, std::cout);
    fmt::print(stderr, "{}\n", stats_line(stats, "stdout"));
    return;
  }
  const std::string path = o.output.empty() ? fmt::format("run-{}.trace.json", o.run_id) : o.output;
  namespace fs = std::filesystem;
  const fs::path parent = fs::absolute(path).parent_path();
  if (!fs::is_directory(parent)) {
    DSGD_THROW(InputError, "create the directory first or pass another -o",
               "-o '{}': directory '{}' does not exist", path, parent.string());
  }
  const std::string partial = path + ".partial";
  TraceStats stats;
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    if (!out) {
      DSGD_THROW(InputError, "pass a writable path to -o", "cannot write the trace to '{}'", partial);
    }
    try {
      stats = trace_write_run(store, o.run_id, options, out);
    } catch (...) {
      out.close();
      std::error_code ec;
      fs::remove(partial, ec);
      throw;
    }
  }
  std::error_code ec;
  fs::rename(partial, path, ec);
  if (ec) {
    fs::remove(partial, ec);
    DSGD_THROW(Error, "pass another -o", "cannot move the trace into place at '{}': {}", path, ec.message());
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
