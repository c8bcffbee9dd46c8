// See run_format.hpp. Units: seconds are shown as ms per step, bytes as MB (1e6). Stored
// text (tag, error, names) is printed with control characters escaped
// (text_escape_controls), so a tag holding a newline or an ANSI escape cannot break the
// table or the terminal.
#include "cli/run_format.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <string_view>
#include <utility>

#include "algorithms/optimizer.hpp"
#include "algorithms/variant.hpp"
#include "cluster/backends.hpp"
#include "core/copy_aliasing.hpp"
#include "core/output_file.hpp"
#include "core/run_config.hpp"
#include "results/report_rows.hpp"
#include "results/row_fields.hpp"
#include "workloads/cost_file.hpp"
#include "workloads/datasets/subset.hpp"

namespace dsgd {

namespace {

// The keys every run prints, whatever their value.
bool config_key_always(std::string_view key) {
  static const std::vector<std::string_view> keys = {"workload", "dataset", "algo",    "batch",
                                                     "lr",       "steps",   "workers", "backend"};
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

// Whether a key is one of the run's variant's own knobs (its registry flags, --period).
bool config_key_of_variant(const RunConfig& cfg, std::string_view key) {
  if (key == "period") return variant_uses_period(cfg.algo);
  for (const Variant* v : variant_flag_owners(key))
    if (v->name == cfg.algo) return true;
  return false;
}

// Whether a key can matter to this run: a variant's own flag only with that variant (its
// registry entry), --period only with a variant that takes it, the model's shape only with
// the workload that reads it, a backend's own settings only on that backend.
bool config_key_applies(const RunConfig& cfg, std::string_view key) {
  if (key == "period" || !variant_flag_owners(key).empty()) return config_key_of_variant(cfg, key);
  static const std::vector<std::string_view> transformer = {"layers", "d-model", "heads", "seq", "vocab"};
  if (std::find(transformer.begin(), transformer.end(), key) != transformer.end()) return cfg.workload == "transformer";
  if (key == "augment") return cfg.workload == "resnet";
  if (key == "model") return cfg.workload != "svm";
  const Backend* backend = backend_find(cfg.backend);
  if (key == "hostfile") return backend && backend->has(cap_multi_process);
  if (key == "timing-only" || key == "compute-scale" || key == "profile-from" || key == "native-floor" ||
      key == "fabric")
    return backend && backend->has(cap_virtual_clock);
  return true;
}

}  // namespace

std::string format_config(const RunConfig& cfg, const RunRecord& r, bool full) {
  std::string out = full ? "dsgd-bench run: effective configuration (every setting)\n"
                         : "dsgd-bench run: effective configuration (the run, its variant's knobs, and what else "
                           "differs from the defaults; every setting: --print-config)\n";
  const RunConfig defaults;
  for (const auto& f : run_config_fields()) {
    std::string value, default_value;
    std::visit(
        [&](auto member) {
          value = fmt::format("{}", cfg.*member);
          default_value = fmt::format("{}", defaults.*member);
        },
        f.member);
    const std::string_view key = f.key;
    const bool shown = full || config_key_always(key) || config_key_of_variant(cfg, key) ||
                       (config_key_applies(cfg, key) && value != default_value);
    if (!shown) continue;
    if (key == "steps") value = fmt::format("{}", r.steps);
    if (key == "warmup") value = fmt::format("{}", r.warmup);
    if (key == "dataset" && cost_file_workload(cfg.workload)) value = "none (a cost file or a trace reads no data)";
    if (key == "lr")
      value = cfg.lr > 0 ? fmt::format("{}", cfg.lr)
                         : fmt::format("{} (the default of {})", optimizer_base_lr(cfg), optimizer_resolve_name(cfg));
    out += fmt::format("  {:<13} {}\n", f.key, text_escape_controls(value));
  }
  const auto esc = text_escape_controls;
  out += fmt::format("  {:<13} {} on {} ({}), {}, {} build, commit {}\n", "context", esc(r.mpi_version), esc(r.host),
                     esc(r.cpu_model), esc(r.tool_version), esc(r.build_type), esc(r.git_commit));
  return out;
}

std::string format_paging_warning(const nlohmann::json& pages) {
  if (!pages.is_object()) return {};
  const double bytes = pages.value("bytes", 0.0), fraction = pages.value("huge-fraction", 1.0);
  // Small sets fit the TLB's reach on any pages; unknown (-1) is not a finding.
  if (bytes < 64e6 || fraction < 0 || fraction >= 0.5) return {};
  return fmt::format(
      "  {:<13} training set {:.0f} MB on 4 KiB pages ({:.0f} % on 2 MiB pages; transparent huge pages '{}'): "
      "random batches miss the TLB, so steps can be several times slower and vary between runs\n",
      "warning", bytes / 1e6, 100 * fraction, pages.value("thp", std::string("?")));
}

std::string format_copy_aliasing_warning(const nlohmann::json& copies) {
  if (!copies.is_object() || copies.value("state", std::string()) != "slow") return {};
  return fmt::format(
      "  {:<13} a {} KiB memcpy took {:.3g} µs when its destination sat 16 bytes after its source (mod 4 KiB) "
      "against {:.3g} µs elsewhere (this CPU's rep movsb), and the program did not restart to avoid it: "
      "copies, and the steps they are part of, vary from process to process (unset DSGD_COPY_ALIASING)\n",
      "warning", kCopyAliasingBytes >> 10, 1e6 * copies.value("aliased-s", 0.0), 1e6 * copies.value("clean-s", 0.0));
}

std::string format_eval_set(const nlohmann::json& eval_set) {
  if (!eval_set.is_object()) return {};
  if (const int64_t windows = eval_set.value("windows", int64_t{0}); windows > 0)  // text
    return fmt::format(
        "  {:<13} {} of {} test windows of {} tokens, evenly spaced through the text (--eval-subset): the test "
        "loss is their mean\n",
        "eval-set", windows, eval_set.value("of", int64_t{0}), eval_set.value("tokens-per-window", int64_t{0}));
  const int64_t rows = eval_set.value("rows", int64_t{0}), of = eval_set.value("of", int64_t{0});
  if (rows <= 0) return {};
  // The widest 95 % interval of an accuracy on that many rows (at 50 %): it holds whatever
  // the accuracy turns out to be.
  return fmt::format(
      "  {:<13} {} of {} test rows, class-stratified (--eval-subset): a test accuracy is known to within "
      "+-{:.1f} points (95 %)\n",
      "eval-set", rows, of, 100 * dataset_accuracy_ci95(0.5, static_cast<size_t>(rows)));
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

namespace {

// A value of a report row as a number; empty for null and text.
std::optional<double> value_number(const ReportValue& v) {
  if (const double* d = std::get_if<double>(&v)) return *d;
  if (const int64_t* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  return std::nullopt;
}

// One row of a table read by column name.
struct RowView {
  const ReportTable& table;
  const std::vector<ReportValue>& row;
  const ReportValue* find(const char* name) const {
    for (size_t i = 0; i < table.columns.size(); ++i)
      if (table.columns[i].name == name) return &row[i];
    return nullptr;
  }
  std::string text(const char* name) const {
    const ReportValue* v = find(name);
    return v ? text_escape_controls(report_value_text(*v)) : std::string();
  }
  std::optional<double> number(const char* name) const {
    const ReportValue* v = find(name);
    return v ? value_number(*v) : std::nullopt;
  }
};

// The summary part of a run's block, from the summary field table: the per-step block (ms and
// % of the step), then one line per other label, its fields' values in table order, then the
// target.
std::string summary_text(const RowView& r) {
  std::string out;
  const double step = r.number("step_time_s").value_or(0);
  out += fmt::format("  {:<26} {:>12}  {:>7}\n", "per step (mean, timed)", "ms", "% step");
  std::vector<std::pair<std::string, std::string>> lines;  // label, items, in first-appearance order
  for (const RowField<Summary>& f : summary_fields()) {
    if (!f.label) continue;
    const std::optional<double> v = r.number(f.column);
    if (f.per_step) {
      if (!v || (f.nonzero_only && *v == 0)) continue;
      out += fmt::format("  {:<26} {:>12.4f}  {:>6.1f}%\n", f.label, *v * 1e3, step > 0 ? 100.0 * *v / step : 0.0);
      continue;
    }
    auto line = std::find_if(lines.begin(), lines.end(), [&](const auto& l) { return l.first == f.label; });
    if (line == lines.end()) line = lines.emplace(lines.end(), f.label, "");
    if (!v || (f.nonzero_only && *v == 0)) continue;
    line->second += (line->second.empty() ? "" : "  ") + fmt::format(fmt::runtime(f.format), *v * f.print_scale);
  }
  for (const auto& [label, items] : lines)
    if (!items.empty()) out += fmt::format("  {:<26} {}\n", label, items);
  const std::string target = r.text("target");
  if (!target.empty()) {
    const std::optional<double> time = r.number("time_to_target_s");
    if (time)
      out +=
          fmt::format("  {:<26} {} reached at {:.3f} s, step {}\n", "target", target, *time, r.text("steps_to_target"));
    else
      out += fmt::format("  {:<26} {} not reached\n", "target", target);
  }
  return out;
}

std::string run_text(const RowView& r) {
  const std::string algorithm = r.text("algorithm");
  // H only for the variants that take --period (ssgd's stored default 4 means nothing).
  const std::string period = variant_uses_period(algorithm) ? fmt::format(", H={}", r.text("period")) : "";
  std::string out = fmt::format("run {}  {}  {} on {}, {} x {} workers (batch {} per worker{}), {} steps, seed {}\n",
                                r.text("run_id"), r.text("status"), algorithm, r.text("workload"), r.text("backend"),
                                r.text("workers"), r.text("batch"), period, r.text("steps"), r.text("seed"));
  out += fmt::format("  dataset {}  tag '{}'  created {}  commit {}\n", r.text("dataset"), r.text("tag"),
                     r.text("created_at"), r.text("git_commit"));
  const std::string error = r.text("error");
  if (!error.empty()) out += fmt::format("  error: {}\n", error);
  const std::string prediction = r.text("prediction");
  if (!prediction.empty()) out += fmt::format("  predicted: {}\n", prediction);
  if (r.number("timed_steps")) out += summary_text(r);  // a run without a summary has none
  return out;
}

// Columns padded to their widest value, two spaces apart.
std::string aligned_text(const ReportTable& table) {
  std::vector<size_t> width(table.columns.size());
  std::vector<std::vector<std::string>> cells;
  for (size_t c = 0; c < table.columns.size(); ++c) width[c] = table.columns[c].name.size();
  for (const auto& row : table.rows) {
    std::vector<std::string>& line = cells.emplace_back();
    for (size_t c = 0; c < row.size(); ++c) {
      line.push_back(text_escape_controls(report_value_text(row[c])));
      width[c] = std::max(width[c], line.back().size());
    }
  }
  auto put = [&](std::string& out, size_t c, const std::string& text) {
    const bool right = table.columns[c].type != ReportType::report_text;
    out += fmt::format(fmt::runtime(right ? "{:>{}}" : "{:<{}}"), text, width[c]);
    out += c + 1 < table.columns.size() ? "  " : "\n";
  };
  std::string out = table.name + "\n";
  for (size_t c = 0; c < table.columns.size(); ++c) put(out, c, table.columns[c].name);
  for (const auto& line : cells)
    for (size_t c = 0; c < line.size(); ++c) put(out, c, line[c]);
  return out;
}

class TextPrinter final : public ReportPrinter {
 public:
  explicit TextPrinter(std::ostream& out) : out_(out) {}
  void begin(const ReportContext&) override {}
  void rows(const ReportTable& table) override {
    for (const auto& row : table.rows) {
      const RowView r{table, row};
      if (table.name == "runs") {
        steps_[r.text("run_id")] = static_cast<int64_t>(r.number("steps").value_or(0));
        out_ << run_text(r);
      } else if (table.name == "evals") {
        EvalRow e;
        e.step = static_cast<int64_t>(r.number("step").value_or(0));
        e.time_s = r.number("time_s").value_or(NAN);
        e.train_loss = r.number("train_loss").value_or(NAN);
        e.test_loss = r.number("test_loss").value_or(NAN);
        e.test_acc = r.number("test_acc").value_or(NAN);
        e.consensus_distance = r.number("consensus_distance");
        out_ << "  " << format_eval_line(e, steps_[r.text("run_id")]) << "\n";
      }
    }
    if (table.name != "runs" && table.name != "evals") out_ << aligned_text(table);
  }
  void end() override { out_.flush(); }

 private:
  std::ostream& out_;
  std::map<std::string, int64_t> steps_;  // total steps of each run printed, for its evaluation lines
};

}  // namespace

std::unique_ptr<ReportPrinter> text_printer_create(std::ostream& out) {
  return std::make_unique<TextPrinter>(out);
}

std::string format_run_summary(const RunWithSummary& run) {
  std::ostringstream out;
  TextPrinter printer(out);
  printer.rows(report_runs_table({run}));
  return out.str();
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
                       esc(run_status_text(r.status)), thr, step, acc, esc(r.tag));
  }
  if (runs.empty()) out += "(no runs yet: try `dsgd-bench run`)\n";
  return out;
}

}  // namespace dsgd
