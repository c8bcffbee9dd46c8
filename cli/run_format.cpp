// See run_format.hpp. Units: seconds are shown as ms per step, bytes as MB (1e6). Stored
// text (tag, error, names) is printed with control characters escaped
// (text_escape_controls), so a tag holding a newline or an ANSI escape cannot break the
// table or the terminal.
#include "cli/run_format.hpp"

#include <fmt/format.h>

#include <cmath>

#include "algorithms/optimizer.hpp"
#include "algorithms/variant.hpp"
#include "core/output_file.hpp"
#include "core/run_config.hpp"

namespace dsgd {

std::string format_config(const RunConfig& cfg, const RunRecord& r) {
  std::string out = "dsgd-bench run: effective configuration\n";
  for (const auto& f : run_config_fields()) {
    std::string value;
    std::visit([&](auto member) { value = fmt::format("{}", cfg.*member); }, f.member);
    if (std::string(f.key) == "steps") value = fmt::format("{}", r.steps);
    if (std::string(f.key) == "warmup") value = fmt::format("{}", r.warmup);
    if (std::string(f.key) == "lr")
      value = cfg.lr > 0 ? fmt::format("{}", cfg.lr)
                         : fmt::format("{} (the default of {})", optimizer_base_lr(cfg), optimizer_resolve_name(cfg));
    out += fmt::format("  {:<13} {}\n", f.key, text_escape_controls(value));
  }
  const auto esc = text_escape_controls;
  out += fmt::format("  {:<13} {} on {} ({}), {}, {} build, commit {}\n", "context", esc(r.mpi_version), esc(r.host),
                     esc(r.cpu_model), esc(r.tool_version), esc(r.build_type), esc(r.git_commit));
  return out;
}

std::string format_eval_line(const EvalRow& e, int64_t total_steps) {
  // No minibatch has been seen before the first step: its train loss is not a number.
  const std::string train = std::isnan(e.train_loss) ? std::string("       -") : fmt::format("{:8.5f}", e.train_loss);
  std::string line =
      fmt::format("eval step {:>6}/{:<6} time {:8.3f} s  train_loss {}  test_loss {:8.5f}  test_acc {:6.4f}", e.step,
                  total_steps, e.time_s, train, e.test_loss, e.test_acc);
  if (e.consensus_distance) line += fmt::format("  consensus {:.3e}", *e.consensus_distance);
  return line;
}

namespace {

std::string opt_num(const std::optional<double>& v, const char* spec = "{:.4f}") {
  return v ? fmt::format(fmt::runtime(spec), *v) : std::string("-");
}

}  // namespace

std::string format_run_summary(const RunWithSummary& rs) {
  const RunRecord& r = rs.run;
  std::string out;
  // H only for the variants that take --period (ssgd's stored default 4 means nothing).
  const std::string period = variant_uses_period(r.algorithm) ? fmt::format(", H={}", r.period) : "";
  const auto esc = text_escape_controls;
  out += fmt::format("run {}  {}  {} on {}, {} x {} workers (batch {} per worker{}), {} steps, seed {}\n", r.id,
                     esc(r.status), esc(r.algorithm), esc(r.workload), esc(r.backend), r.workers, r.batch, period,
                     r.steps, r.seed);
  out += fmt::format("  dataset {}  tag '{}'  created {}  commit {}\n", esc(r.dataset), esc(r.tag), esc(r.created_at),
                     esc(r.git_commit));
  if (!r.error.empty()) out += fmt::format("  error: {}\n", esc(r.error));
  if (!rs.summary) return out;
  const Summary& s = *rs.summary;
  const double step = s.step_time_s;
  auto pct = [&](double v) { return step > 0 ? 100.0 * v / step : 0.0; };
  out += fmt::format("  {:<26} {:>12}  {:>7}\n", "per step (mean, timed)", "ms", "% step");
  auto line = [&](const char* name, double v) {
    out += fmt::format("  {:<26} {:>12.4f}  {:>6.1f}%\n", name, v * 1e3, pct(v));
  };
  line("step", s.step_time_s);
  line("  compute (fwd+bwd+opt)", s.compute_s);
  line("    forward", s.fwd_s);
  line("    backward", s.bwd_s);
  line("    optimizer", s.opt_s);
  line("  comm", s.comm_s);
  line("  wait", s.wait_s);
  line("  data", s.data_s);
  if (s.injected_s > 0) line("  injected (straggler)", s.injected_s);
  line("  overlap (hidden comm)", s.overlap_s);
  out += fmt::format("  {:<26} {:>12.1f} samples/s over {} timed steps\n", "throughput", s.throughput_samples_per_s,
                     s.timed_steps);
  out += fmt::format("  {:<26} {:>12.3f} MB per step per worker\n", "bytes sent", s.bytes_sent_per_step / 1e6);
  if (s.mfu)
    out += fmt::format("  {:<26} {:>12.1f} % ({:.2f} model GFLOP/s per worker of a {:.1f} GFLOP/s SGEMM peak)\n", "MFU",
                       100.0 * *s.mfu, s.model_gflops.value_or(0), s.peak_gflops.value_or(0));
  if (s.staleness_mean)
    out += fmt::format("  {:<26} mean {}  max {} updates per applied/read update\n", "staleness",
                       opt_num(s.staleness_mean, "{:.3f}"), opt_num(s.staleness_max, "{:.3f}"));
  out += fmt::format("  {:<26} train_loss {}  test_loss {}  test_acc {}\n", "final", opt_num(s.final_train_loss),
                     opt_num(s.final_test_loss), opt_num(s.final_test_acc));
  if (!r.target.empty()) {
    const std::string target = esc(r.target);
    if (s.time_to_target_s)
      out += fmt::format("  {:<26} {} reached at {:.3f} s, step {}\n", "target", target, *s.time_to_target_s,
                         s.steps_to_target.value_or(0));
    else
      out += fmt::format("  {:<26} {} not reached\n", "target", target);
  }
  return out;
}

std::string format_runs_table(const std::vector<RunWithSummary>& runs) {
  std::string out = fmt::format("{:>5}  {:<20}  {:<11}  {:<9}  {:<9}  {:>7}  {:>7}  {:<11}  {:>12}  {:>9}  {:>8}  {}\n",
                                "id", "created", "workload", "algorithm", "backend", "workers", "steps", "status",
                                "samples/s", "step ms", "test_acc", "tag");
  const auto esc = text_escape_controls;
  for (const auto& rs : runs) {
    const RunRecord& r = rs.run;
    std::string thr = "-", step = "-", acc = "-";
    if (rs.summary) {
      thr = fmt::format("{:.1f}", rs.summary->throughput_samples_per_s);
      step = fmt::format("{:.3f}", rs.summary->step_time_s * 1e3);
      acc = opt_num(rs.summary->final_test_acc);
    }
    out += fmt::format("{:>5}  {:<20}  {:<11}  {:<9}  {:<9}  {:>7}  {:>7}  {:<11}  {:>12}  {:>9}  {:>8}  {}\n", r.id,
                       esc(r.created_at), esc(r.workload), esc(r.algorithm), esc(r.backend), r.workers, r.steps,
                       esc(r.status), thr, step, acc, esc(r.tag));
  }
  if (runs.empty()) out += "(no runs yet: try `dsgd-bench run`)\n";
  return out;
}

}  // namespace dsgd
