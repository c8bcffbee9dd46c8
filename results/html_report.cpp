// The self-contained HTML report (see html_report.hpp). Everything is written into one
// string buffer: CSS (light/dark via prefers-color-scheme), inline SVG charts, a short
// inline script. Geometry: each line chart is a 640 x 340 viewBox scaled to its grid
// cell (two per row at 1280 px); coordinates are printed with one decimal.
#include "results/html_report.hpp"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>

#include "core/stats.hpp"
#include "results/html_downsample.hpp"
#include "results/html_group_charts.hpp"
#include "results/html_svg.hpp"
#include "results/sqlite.hpp"

namespace dsgd {

using namespace html_detail;

namespace {

std::string value_html(const ReportValue& value) {
  if (const double* d = std::get_if<double>(&value)) return number_text(*d);
  return html_escape(report_value_text(value));
}

std::string scaling_key(const RunRecord& r) {
  nlohmann::json config = nlohmann::json::parse(r.config_json, nullptr, false);
  if (!config.is_object()) config = nlohmann::json::object();
  for (const char* key : {"workers", "tag", "seed", "db", "save-params", "hostfile", "eval-every", "target"})
    config.erase(key);
  for (const char* key : kRunMeasuredConfigKeys) config.erase(key);
  config["__workload"] = r.workload;
  config["__algorithm"] = r.algorithm;
  config["__dataset"] = r.dataset;
  config["__batch"] = r.batch;
  config["__period"] = r.period;
  config["__cpu"] = r.cpu_model;
  return config.dump();
}

void scaling_section(Buffer& out, const std::vector<HtmlRunData>& runs, const HtmlReportOptions& options) {
  std::map<std::string, std::map<int, std::vector<double>>> groups;  // key -> workers -> throughputs
  std::map<std::string, const RunRecord*> first_run;
  for (const HtmlRunData& r : runs) {
    if (!r.run.summary || r.run.run.status != RunStatus::run_completed) continue;
    const double t = r.run.summary->throughput_samples_per_s;
    if (!(t > 0)) continue;
    const std::string key = scaling_key(r.run.run);
    groups[key][r.run.run.workers].push_back(t);
    if (!first_run.count(key)) first_run[key] = &r.run.run;
  }
  LineChart throughput{"scaling-throughput",
                       "Throughput against workers (median over repetitions)",
                       "workers",
                       "throughput (samples/s)",
                       {},
                       true,
                       true};
  LineChart efficiency{"scaling-efficiency",
                       "Scaling efficiency: T(n) / (n T(1)); without a 1-worker run, relative to the fewest workers",
                       "workers",
                       "efficiency (1 = linear)",
                       {},
                       true,
                       true};
  throughput.x_integer = efficiency.x_integer = true;
  size_t index = 0;
  for (auto& [key, by_workers] : groups) {
    if (by_workers.size() < 2) continue;
    const RunRecord& r = *first_run[key];
    Series t_series, e_series;
    t_series.id = e_series.id = fmt::format("g{}", index);
    t_series.label = e_series.label =
        fmt::format("{} {} b{}{}", r.workload, r.algorithm, r.batch,
                    r.period > 0 && r.algorithm != "ssgd" ? fmt::format(" H{}", r.period) : "");
    t_series.color = e_series.color = color_of(index);
    const double base_workers = by_workers.begin()->first;
    double base = 0;
    for (auto& [workers, values] : by_workers) {
      const double median = stats_median(values);
      if (base == 0) base = median / base_workers;
      t_series.x.push_back(workers);
      t_series.y.push_back(median);
      e_series.x.push_back(workers);
      e_series.y.push_back(median / (workers * base));
    }
    throughput.series.push_back(std::move(t_series));
    efficiency.series.push_back(std::move(e_series));
    ++index;
  }
  put(out, "<section><h2>Scaling</h2>");
  if (throughput.series.empty()) {
    put(out,
        "<p class=\"note\">No runs that differ only in their number of workers (scaling needs at least two "
        "worker counts of otherwise identical completed runs).</p></section>");
    return;
  }
  put(out, "<div class=\"grid\">");
  line_chart(out, std::move(throughput), options);
  line_chart(out, std::move(efficiency), options);
  put(out, "</div></section>");
}

// ---- tables --------------------------------------------------------------------------------

const std::vector<std::string>& run_table_columns() {
  static const std::vector<std::string> names = {"run_id",
                                                 "status",
                                                 "tag",
                                                 "workload",
                                                 "dataset",
                                                 "algorithm",
                                                 "workers",
                                                 "batch",
                                                 "period",
                                                 "steps",
                                                 "throughput_samples_per_s",
                                                 "step_time_s",
                                                 "compute_s",
                                                 "comm_s",
                                                 "wait_s",
                                                 "overlap_s",
                                                 "injected_s",
                                                 "final_test_loss",
                                                 "final_test_acc",
                                                 "time_to_target_s",
                                                 "straggler",
                                                 "bandwidth",
                                                 "created_at"};
  return names;
}

// `color_group[i]`: the palette index of run i's configuration (its color in every chart).
void run_table(Buffer& out, const HtmlReportInput& input, const std::vector<size_t>& color_group) {
  const std::vector<HtmlRunData>& runs = input.runs;
  ReportTable built;
  if (!input.runs_table) {
    std::vector<RunWithSummary> rows;
    rows.reserve(runs.size());
    for (const HtmlRunData& r : runs) rows.push_back(r.run);
    built = report_runs_table(rows);
  }
  const ReportTable& table = input.runs_table ? *input.runs_table : built;
  std::vector<size_t> columns;
  for (const std::string& name : run_table_columns()) {
    for (size_t i = 0; i < table.columns.size(); ++i)
      if (table.columns[i].name == name) columns.push_back(i);
  }
  put(out, "<section><h2>Runs ({})</h2><div class=\"scroll\"><table class=\"runs\"><thead><tr>", table.rows.size());
  for (size_t c : columns) {
    const ReportColumn& column = table.columns[c];
    put(out, "<th title=\"{}\">{}</th>", html_escape(column.help), html_escape(column.name));
  }
  put(out, "</tr></thead><tbody>");
  auto column_of = [&](const char* name) {
    for (size_t i = 0; i < table.columns.size(); ++i)
      if (table.columns[i].name == name) return i;
    return table.columns.size();
  };
  const size_t algorithm_column = column_of("algorithm"), error_column = column_of("error");
  for (size_t r = 0; r < table.rows.size(); ++r) {
    put(out, "<tr>");
    const std::string algorithm =
        algorithm_column < table.columns.size() ? report_value_text(table.rows[r][algorithm_column]) : "";
    for (size_t c : columns) {
      const bool numeric = table.columns[c].type != ReportType::report_text;
      const std::string& name = table.columns[c].name;
      if (name == "period" && input.knob_applies && !algorithm.empty() && !input.knob_applies(algorithm, "period")) {
        put(out, "<td class=\"na\" title=\"{} does not read --period\">·</td>", html_escape(algorithm));
        continue;
      }
      if (name == "status" && error_column < table.columns.size() &&
          !report_value_text(table.rows[r][error_column]).empty()) {
        put(out, "<td title=\"{}\">{}</td>", html_escape(report_value_text(table.rows[r][error_column])),
            value_html(table.rows[r][c]));
        continue;
      }
      if (name == "run_id") {
        put(out, "<td class=\"num\"><i class=\"sw\" style=\"background:{}\"></i>{}</td>",
            color_of(table.rows.size() == color_group.size() ? color_group[r] : r), value_html(table.rows[r][c]));
      } else {
        put(out, "<td{}>{}</td>", numeric ? " class=\"num\"" : "", value_html(table.rows[r][c]));
      }
    }
    put(out, "</tr>");
  }
  put(out,
      "</tbody></table></div><p class=\"note\">Times in seconds, throughput in samples/s, accuracy as a "
      "fraction (definitions: docs/metrics.md). <code>dsgd-bench report --format csv</code> exports every "
      "column at full precision.</p></section>");
}

void context_section(Buffer& out, const HtmlReportInput& input) {
  const ReportContext& c = input.context;
  put(out, "<section><h2>Context</h2><table class=\"kv\">");
  auto kv = [&](const char* key, const std::string& value) {
    put(out, "<tr><th>{}</th><td>{}</td></tr>", key, html_escape(value));
  };
  kv("generated", c.generated_at);
  kv("by",
     fmt::format("dsgd-bench {} (commit {}, {} build) on {}", c.tool_version, c.git_commit, c.build_type, c.host));
  kv("database", fmt::format("{} (schema v{})", c.db_path, c.db_schema_version));
  kv("selection", c.selection);
  kv("report schema", fmt::format("v{}", c.schema_version));
  put(out, "</table>");
  if (!c.warnings.empty()) {
    put(out, "<ul class=\"warn\">");
    for (const std::string& w : c.warnings) put(out, "<li>warning: {}</li>", html_escape(w));
    put(out, "</ul>");
  }
  // Where the runs were measured: one line per distinct machine and build.
  std::map<std::vector<std::string>, std::vector<int64_t>> machines;
  for (const HtmlRunData& r : input.runs) {
    const RunRecord& run = r.run.run;
    machines[{run.host, run.cpu_model, run.mpi_version, run.tool_version, run.git_commit, run.build_type}].push_back(
        run.id);
  }
  put(out,
      "<h3>Machines and builds</h3><div class=\"scroll\"><table><thead><tr><th>host</th><th>CPU</th><th>MPI</th>"
      "<th>version</th><th>commit</th><th>build</th><th>runs</th></tr></thead><tbody>");
  for (const auto& [key, ids] : machines) {
    put(out, "<tr>");
    for (const std::string& v : key) put(out, "<td>{}</td>", html_escape(v));
    std::string list;
    for (size_t i = 0; i < ids.size() && i < 20; ++i) list += (i ? ", " : "") + std::to_string(ids[i]);
    if (ids.size() > 20) list += fmt::format(" (+{} more)", ids.size() - 20);
    put(out, "<td>{}</td></tr>", list);
  }
  put(out, "</tbody></table></div></section>");
}

bool is_numeric(const ReportValue& v) {
  return std::holds_alternative<double>(v) || std::holds_alternative<int64_t>(v);
}

double as_double(const ReportValue& v) {
  if (const double* d = std::get_if<double>(&v)) return *d;
  if (const int64_t* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  return std::numeric_limits<double>::quiet_NaN();
}

void validations_section(Buffer& out, const HtmlGenericTable& table, const HtmlReportOptions& options) {
  if (table.rows.empty()) return;
  put(out, "<section><h2>Validations: predicted vs measured</h2>");
  // Scatter of each (predicted_X, measured_X) column pair (or predicted / measured).
  std::vector<std::pair<size_t, size_t>> pairs;
  for (size_t p = 0; p < table.columns.size(); ++p) {
    const std::string& name = table.columns[p];
    if (name.rfind("predicted", 0) != 0) continue;
    const std::string measured = "measured" + name.substr(9);
    for (size_t m = 0; m < table.columns.size(); ++m)
      if (table.columns[m] == measured) pairs.emplace_back(p, m);
  }
  if (!pairs.empty()) put(out, "<div class=\"grid\">");
  for (size_t k = 0; k < pairs.size(); ++k) {
    const auto [p, m] = pairs[k];
    LineChart chart{fmt::format("validation-{}", k),
                    fmt::format("{} vs {}", table.columns[m], table.columns[p]),
                    table.columns[p],
                    table.columns[m],
                    {},
                    false,
                    true,
                    true};
    Series s;
    s.id = "v";
    s.label = "validation rows";
    s.color = color_of(k);
    for (const auto& row : table.rows) {
      if (!is_numeric(row[p]) || !is_numeric(row[m])) continue;
      s.x.push_back(as_double(row[p]));
      s.y.push_back(as_double(row[m]));
    }
    // Sorted by x for the downsampler; the scatter draws no line.
    std::vector<size_t> order(s.x.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return s.x[a] < s.x[b]; });
    Series sorted = s;
    for (size_t i = 0; i < order.size(); ++i) {
      sorted.x[i] = s.x[order[i]];
      sorted.y[i] = s.y[order[i]];
    }
    chart.series.push_back(std::move(sorted));
    line_chart(out, std::move(chart), options);
  }
  if (!pairs.empty()) put(out, "</div>");
  put(out, "<div class=\"scroll\"><table><thead><tr>");
  for (const std::string& c : table.columns) put(out, "<th>{}</th>", html_escape(c));
  put(out, "</tr></thead><tbody>");
  for (const auto& row : table.rows) {
    put(out, "<tr>");
    for (const ReportValue& v : row) put(out, "<td{}>{}</td>", is_numeric(v) ? " class=\"num\"" : "", value_html(v));
    put(out, "</tr>");
  }
  put(out, "</tbody></table></div></section>");
}

// A table given to the printer, as it is: its name, columns (help as the title) and rows.
void table_section(Buffer& out, const ReportTable& table) {
  put(out, "<section><h2>{} ({})</h2><div class=\"scroll\"><table><thead><tr>", html_escape(table.name),
      table.rows.size());
  for (const ReportColumn& c : table.columns)
    put(out, "<th title=\"{}\">{}</th>", html_escape(c.help), html_escape(c.name));
  put(out, "</tr></thead><tbody>");
  for (const auto& row : table.rows) {
    put(out, "<tr>");
    for (size_t c = 0; c < row.size(); ++c)
      put(out, "<td{}>{}</td>", table.columns[c].type != ReportType::report_text ? " class=\"num\"" : "",
          value_html(row[c]));
    put(out, "</tr>");
  }
  put(out, "</tbody></table></div></section>");
}

class HtmlPrinter final : public ReportPrinter {
 public:
  HtmlPrinter(std::ostream& out, HtmlReportInput input, const HtmlReportOptions& options)
      : out_(out), input_(std::move(input)), options_(options) {}
  void begin(const ReportContext& context) override { input_.context = context; }
  void rows(const ReportTable& table) override {
    if (table.name == "runs" && !input_.runs_table)
      input_.runs_table = table;
    else
      input_.sections.push_back(table);
  }
  void end() override { html_report_write(out_, input_, options_); }

 private:
  std::ostream& out_;
  HtmlReportInput input_;
  HtmlReportOptions options_;
};

constexpr const char* style = R"css(
:root{--bg:#ffffff;--fg:#1d2330;--muted:#5b6475;--grid:#e3e6ec;--frame:#9aa3b2;--head:#f3f5f8;--warn:#9a4d00;color-scheme:light dark}
@media (prefers-color-scheme: dark){:root{--bg:#14171c;--fg:#e6e9ef;--muted:#a3acbb;--grid:#2b313b;--frame:#5b6475;--head:#1d2229;--warn:#ffb366}}
*{box-sizing:border-box}
body{margin:0 auto;max-width:1280px;padding:16px 20px;background:var(--bg);color:var(--fg);font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
h1{font-size:22px;margin:4px 0 2px}h2{font-size:18px;margin:26px 0 8px;border-bottom:1px solid var(--grid);padding-bottom:4px}h3{font-size:15px}
.note{color:var(--muted);font-size:13px}.warn{color:var(--warn)}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(560px,1fr));gap:14px}
figure{margin:0}figure.chart:not(.wide){max-width:720px}figcaption{font-weight:600;margin:4px 0}
svg{width:100%;height:auto;display:block}
svg text{fill:var(--fg);font-size:12px}svg .tick{fill:var(--muted);font-size:11px}
svg .grid{stroke:var(--grid);stroke-width:1}svg .frame{fill:none;stroke:var(--frame)}
svg .ln{fill:none;stroke-width:1.6;stroke-linejoin:round}svg .ln:hover{stroke-width:3.5}
svg .diag{stroke:var(--frame);stroke-dasharray:4 4}
svg .off,.legend .off{opacity:.15}
.legend{display:flex;flex-wrap:wrap;gap:4px 12px;font-size:12px;color:var(--muted);margin-top:4px}
.legend span{cursor:pointer;user-select:none}.legend span.more{cursor:default}
.legend i,.sw{display:inline-block;width:11px;height:11px;border-radius:2px;margin-right:4px;vertical-align:-1px}
.scroll{overflow-x:auto;max-height:640px;overflow-y:auto}
table{border-collapse:collapse;font-size:12.5px}
th,td{padding:3px 8px;border-bottom:1px solid var(--grid);text-align:left;white-space:nowrap}
thead th{position:sticky;top:0;background:var(--head)}
td.num{text-align:right;font-variant-numeric:tabular-nums}
table.kv th{background:none;color:var(--muted);font-weight:500}
code{font-size:12px}td.na{color:var(--muted);text-align:center}
svg .whisk{fill:none;stroke:var(--fg);stroke-width:1.2}
table.heatmap td{min-width:64px}table.heatmap th{background:var(--head)}figure.heat{overflow-x:auto}
svg .band{fill:#4e79a7;opacity:.13}svg .level{fill:none;stroke:#4e79a7;stroke-width:1.8}
svg .rep circle{fill:var(--muted);opacity:.35}svg .iqr{stroke:var(--fg);stroke-width:1.4}svg .med{fill:var(--fg)}
svg .cp line{stroke-width:1.6}svg .cp.bad line{stroke:#e15759}svg .cp.good line{stroke:#59a14f}
svg .cp.bad text{fill:#e15759;font-weight:600}svg .cp.good text{fill:#3b8a35;font-weight:600}
svg .cp.unconfirmed line{stroke-dasharray:4 3}
svg .ann line{stroke:var(--muted);stroke-dasharray:2 3}svg .ann text{fill:var(--muted);font-size:10px}
svg .ann-expected line{stroke:#b07aa1}svg .ann-invalid line,svg .ann-outlier line{stroke:#9c755f}
svg .params{fill:var(--muted);font-size:8.5px}
.badge{background:#e15759;color:#fff;border-radius:3px;padding:0 5px;font-size:11px;font-weight:600}
#regressions-only:checked~.cases .case:not([data-regressed]){display:none}
.case{min-width:0}
)css";

constexpr const char* error_trap =
    "<script>window.addEventListener('error',function(e){var b=document.body||document.documentElement;"
    "b.setAttribute('data-errors',(b.getAttribute('data-errors')||'')+String(e.message)+';');});</script>";

constexpr const char* script = R"js(<script>
(function(){
  document.querySelectorAll('.legend[data-chart] .lg').forEach(function(item){
    item.addEventListener('click',function(){
      var chart=document.getElementById(item.parentNode.getAttribute('data-chart'));
      var off=item.classList.toggle('off');
      chart.querySelectorAll('svg [data-s]').forEach(function(el){
        if(el.getAttribute('data-s')===item.getAttribute('data-s'))el.classList.toggle('off',off);
      });
    });
  });
  document.body.setAttribute('data-ready','1');
})();
</script>)js";

}  // namespace

std::string html_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

HtmlReportInput html_report_load(const Store& store, const std::vector<RunWithSummary>& runs,
                                 const ReportContext& context) {
  HtmlReportInput input;
  input.context = context;
  sqlite3* db = store.handle();
  const bool have_steps = store.user_version() >= 1;
  for (const RunWithSummary& r : runs) {
    HtmlRunData data;
    data.run = r;
    data.evals = store.evals_get(r.run.id);
    if (have_steps) {
      SqlStatement stmt(db, "SELECT step, avg(train_loss) FROM steps WHERE run_id = ? GROUP BY step ORDER BY step");
      stmt.bind(1, r.run.id);
      while (stmt.step()) {
        data.loss_steps.push_back(static_cast<double>(stmt.column_int64(0)));
        data.loss_values.push_back(stmt.column_real(1));
      }
    }
    input.runs.push_back(std::move(data));
  }
  // The validations (written by `dsgd-bench validate`, schema v5: validations +
  // validation_metrics) when the tables exist and have rows: one row per validation with a
  // predicted_X / measured_X column pair per metric X, which the section draws as scatters.
  SqlStatement exists(db,
                      "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('validations', "
                      "'validation_metrics')");
  if (exists.step() && exists.column_int64(0) == 2) {
    const char* sql =
        "SELECT v.id AS validation, v.created_at, v.measured_run_id, v.simulated_run_id, "
        "max(CASE WHEN m.metric = 'step_time_s' THEN m.predicted END) AS predicted_step_time_s, "
        "max(CASE WHEN m.metric = 'step_time_s' THEN m.measured END) AS measured_step_time_s, "
        "max(CASE WHEN m.metric = 'step_time_s' THEN m.rel_error END) AS rel_error_step_time_s, "
        "max(CASE WHEN m.metric = 'compute_s' THEN m.predicted END) AS predicted_compute_s, "
        "max(CASE WHEN m.metric = 'compute_s' THEN m.measured END) AS measured_compute_s, "
        "max(CASE WHEN m.metric = 'comm_s' THEN m.predicted END) AS predicted_comm_s, "
        "max(CASE WHEN m.metric = 'comm_s' THEN m.measured END) AS measured_comm_s, "
        "max(CASE WHEN m.metric = 'wait_s' THEN m.predicted END) AS predicted_wait_s, "
        "max(CASE WHEN m.metric = 'wait_s' THEN m.measured END) AS measured_wait_s, "
        "max(CASE WHEN m.metric = 'throughput_samples_per_s' THEN m.predicted END) AS "
        "predicted_throughput_samples_per_s, "
        "max(CASE WHEN m.metric = 'throughput_samples_per_s' THEN m.measured END) AS "
        "measured_throughput_samples_per_s, "
        "max(CASE WHEN m.metric = 'throughput_samples_per_s' THEN m.rel_error END) AS rel_error_throughput "
        "FROM validations v JOIN validation_metrics m ON m.validation_id = v.id GROUP BY v.id ORDER BY v.id "
        "LIMIT 5000";
    sqlite3_stmt* raw = nullptr;
    int rc = sqlite3_prepare_v2(db, sql, -1, &raw, nullptr);
    std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> stmt(raw, sqlite3_finalize);
    if (rc != SQLITE_OK) sql_throw(db, rc, sql);
    const int columns = sqlite3_column_count(raw);
    for (int c = 0; c < columns; ++c) input.validations.columns.emplace_back(sqlite3_column_name(raw, c));
    while ((rc = sqlite3_step(raw)) == SQLITE_ROW) {
      std::vector<ReportValue> row;
      for (int c = 0; c < columns; ++c) {
        switch (sqlite3_column_type(raw, c)) {
          case SQLITE_INTEGER: row.emplace_back(static_cast<int64_t>(sqlite3_column_int64(raw, c))); break;
          case SQLITE_FLOAT: row.emplace_back(sqlite3_column_double(raw, c)); break;
          case SQLITE_NULL: row.emplace_back(); break;
          default: {
            const auto* text = sqlite3_column_text(raw, c);
            row.emplace_back(text ? std::string(reinterpret_cast<const char*>(text)) : std::string());
          }
        }
      }
      input.validations.rows.push_back(std::move(row));
    }
    if (rc != SQLITE_DONE) sql_throw(db, rc, sql);
  }
  std::vector<int64_t> ids;
  ids.reserve(runs.size());
  for (const RunWithSummary& r : runs) ids.push_back(r.run.id);
  input.tuning = report_tuning_load(store, ids);
  return input;
}

std::unique_ptr<ReportPrinter> html_report_printer(std::ostream& out, HtmlReportInput input,
                                                   const HtmlReportOptions& options) {
  return std::make_unique<HtmlPrinter>(out, std::move(input), options);
}

namespace {

// The page's head (style, error trap) and its title line.
void page_head(Buffer& out, const HtmlReportInput& input) {
  put(out,
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      "<meta name=\"color-scheme\" content=\"light dark\"><title>dsgd-bench report</title><style>");
  put_text(out, style);
  put(out, "</style>");
  put_text(out, error_trap);
  std::map<std::string, size_t> statuses;
  for (const HtmlRunData& r : input.runs) ++statuses[run_status_text(r.run.run.status)];
  std::string counts;
  for (const auto& [status, count] : statuses)
    counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", count, status);
  put(out,
      "</head><body><h1>dsgd-bench report</h1><p class=\"note\">{} run{} ({}) &middot; generated {} &middot; "
      "{}</p>",
      input.runs.size(), input.runs.size() == 1 ? "" : "s", html_escape(counts),
      html_escape(input.context.generated_at), html_escape(input.context.selection));
}

// A configuration's convergence curves: at each step, the median over its runs of the
// training loss; at each evaluation step, the medians of the training time, test loss and test
// accuracy (non-finite values left out).
struct ConfigurationCurves {
  std::pair<std::vector<double>, std::vector<double>> loss_steps, test_loss_time, test_acc_time, test_loss_steps,
      test_acc_steps;
};

ConfigurationCurves configuration_curves(const HtmlReportInput& input, const HtmlRunGroup& group) {
  std::map<double, std::vector<double>> loss;
  struct AtEval {
    std::vector<double> time, test_loss, test_acc;
  };
  std::map<int64_t, AtEval> evals;
  auto add = [](std::vector<double>& v, double x) {
    if (std::isfinite(x)) v.push_back(x);
  };
  for (size_t i : group.members) {
    const HtmlRunData& r = input.runs[i];
    for (size_t k = 0; k < r.loss_steps.size(); ++k) add(loss[r.loss_steps[k]], r.loss_values[k]);
    for (const EvalRow& e : r.evals) {
      AtEval& at = evals[e.step];
      add(at.time, e.time_s);
      add(at.test_loss, e.test_loss);
      add(at.test_acc, e.test_acc);
    }
  }
  ConfigurationCurves c;
  auto push = [](std::pair<std::vector<double>, std::vector<double>>& xy, double x, const std::vector<double>& y) {
    if (y.empty() || !std::isfinite(x)) return;
    xy.first.push_back(x);
    xy.second.push_back(stats_median(y));
  };
  for (const auto& [step, values] : loss) push(c.loss_steps, step, values);
  for (const auto& [step, at] : evals) {
    const double time = at.time.empty() ? std::numeric_limits<double>::quiet_NaN() : stats_median(at.time);
    push(c.test_loss_time, time, at.test_loss);
    push(c.test_acc_time, time, at.test_acc);
    push(c.test_loss_steps, static_cast<double>(step), at.test_loss);
    push(c.test_acc_steps, static_cast<double>(step), at.test_acc);
  }
  return c;
}

// Convergence: the training loss per step and the test metrics against time and steps, one
// line per run; the runs of one configuration share its color and a legend entry (`grouping`;
// `color_group[i]`: run i's configuration). With more runs than a legend holds, one line per
// configuration: its runs' pointwise median (configuration_curves).
void convergence_section(Buffer& out, const HtmlReportInput& input, const HtmlReportOptions& options,
                         const HtmlRunGrouping& grouping, const std::vector<size_t>& color_group) {
  LineChart loss_steps{"loss-steps", "Training loss per step (mean over ranks)", "step", "training loss", {}, false};
  LineChart test_loss_time{
      "test-loss-time", "Test loss against training time", "training time (s)", "test loss", {}, false};
  LineChart test_acc_time{"test-acc-time",
                          "Test accuracy against training time",
                          "training time (s)",
                          "test accuracy (fraction)",
                          {},
                          false};
  LineChart test_loss_steps{"test-loss-steps", "Test loss against steps", "step", "test loss", {}, false};
  LineChart test_acc_steps{
      "test-acc-steps", "Test accuracy against steps", "step", "test accuracy (fraction)", {}, false};
  bool few_evals = true;
  // Many runs: one line per configuration, the pointwise median of its runs.
  const bool medians = input.runs.size() > legend_max && grouping.groups.size() < input.runs.size();
  if (medians) {
    for (size_t g = 0; g < grouping.groups.size(); ++g) {
      const ConfigurationCurves c = configuration_curves(input, grouping.groups[g]);
      Series base;
      base.id = fmt::format("g{}", g);
      base.label = fmt::format("{} (median of {} runs)", grouping.groups[g].label, grouping.groups[g].members.size());
      base.legend = fmt::format("{} (n={})", html_group_short_label(grouping.groups[g], grouping),
                                grouping.groups[g].members.size());
      base.color = color_of(g);
      const std::pair<LineChart*, const std::pair<std::vector<double>, std::vector<double>>*> curves[] = {
          {&loss_steps, &c.loss_steps},
          {&test_loss_time, &c.test_loss_time},
          {&test_acc_time, &c.test_acc_time},
          {&test_loss_steps, &c.test_loss_steps},
          {&test_acc_steps, &c.test_acc_steps}};
      for (const auto& [chart, xy] : curves) {
        Series line = base;
        line.x = xy->first;
        line.y = xy->second;
        chart->series.push_back(std::move(line));
      }
      if (c.test_acc_steps.first.size() > 30) few_evals = false;
    }
  }
  for (size_t i = 0; i < input.runs.size() && !medians; ++i) {
    const HtmlRunData& r = input.runs[i];
    Series base;
    const size_t group = color_group[i];
    base.id = fmt::format("g{}", group);
    base.label = run_label(r.run.run);
    base.legend = fmt::format("{} (n={})", html_group_short_label(grouping.groups[group], grouping),
                              grouping.groups[group].members.size());
    base.color = color_of(group);
    Series s = base;
    s.x = r.loss_steps;
    s.y = r.loss_values;
    loss_steps.series.push_back(std::move(s));
    Series lt = base, at = base, ls = base, as = base;
    for (const EvalRow& e : r.evals) {
      lt.x.push_back(e.time_s);
      lt.y.push_back(e.test_loss);
      at.x.push_back(e.time_s);
      at.y.push_back(e.test_acc);
      ls.x.push_back(static_cast<double>(e.step));
      ls.y.push_back(e.test_loss);
      as.x.push_back(static_cast<double>(e.step));
      as.y.push_back(e.test_acc);
    }
    if (r.evals.size() > 30) few_evals = false;
    test_loss_time.series.push_back(std::move(lt));
    test_acc_time.series.push_back(std::move(at));
    test_loss_steps.series.push_back(std::move(ls));
    test_acc_steps.series.push_back(std::move(as));
  }
  const bool markers = few_evals && (medians ? grouping.groups.size() : input.runs.size()) <= 12;
  for (LineChart* c : {&test_loss_time, &test_acc_time, &test_loss_steps, &test_acc_steps}) c->markers = markers;
  put(out, "<section><h2>Convergence</h2><div class=\"grid\">");
  line_chart(out, std::move(test_acc_time), options);
  line_chart(out, std::move(test_loss_time), options);
  line_chart(out, std::move(test_acc_steps), options);
  line_chart(out, std::move(test_loss_steps), options);
  line_chart(out, std::move(loss_steps), options);
  put(out,
      "</div><p class=\"note\">Long curves are reduced to at most {} points per chart, shared among its lines, "
      "by Largest-Triangle-Three-Buckets (first and last points kept; peaks survive). Training time excludes "
      "evaluations. {}</p></section>",
      options.max_points_per_chart,
      medians ? fmt::format("With more than {} runs, each line is a configuration: at each step (evaluation), "
                            "the median of its runs' values (and of their training times). Click a legend entry "
                            "to hide or show it.",
                            legend_max)
              : std::string("The runs of one configuration share a color and a legend entry: click it to hide or "
                            "show them."));
}

}  // namespace

void html_report_write(std::ostream& os, const HtmlReportInput& input, const HtmlReportOptions& options) {
  Buffer out;
  page_head(out, input);

  std::vector<RunWithSummary> runs;
  runs.reserve(input.runs.size());
  for (const HtmlRunData& r : input.runs) runs.push_back(r.run);
  const HtmlRunGrouping grouping = html_group_runs(runs, input.knob_applies);
  std::vector<size_t> color_group(runs.size());
  for (size_t g = 0; g < grouping.groups.size(); ++g)
    for (size_t i : grouping.groups[g].members) color_group[i] = g;

  if (input.history) put_text(out, html_history_section(*input.history));  // what --history asked for, first
  run_table(out, input, color_group);
  put_text(out, html_configurations_section(grouping));

  put(out, "<section><h2>Where the time goes</h2>");
  put_text(out, html_group_breakdown_chart(grouping));
  put(out, "</section>");

  convergence_section(out, input, options, grouping, color_group);

  scaling_section(out, input.runs, options);
  validations_section(out, input.validations, options);
  put_text(out, report_tuning_html(input.tuning, options));
  for (const ReportTable& table : input.sections) table_section(out, table);
  context_section(out, input);
  put_text(out, script);
  put(out, "</body></html>\n");
  os.write(out.data(), static_cast<std::streamsize>(out.size()));
}

}  // namespace dsgd
