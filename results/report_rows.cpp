// The report row schema (see report_rows.hpp): column tables and row builders.
#include "results/report_rows.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <set>
#include <type_traits>
#include <utility>
#include <variant>

#include "core/errors.hpp"
#include "core/run_config.hpp"
#include "core/system_info.hpp"
#include "results/row_fields.hpp"

namespace dsgd {

namespace {

using T = ReportType;

ReportColumn col(const char* name, const char* unit, ReportType type, const char* help) {
  return ReportColumn{name, unit, type, help};
}

const std::vector<ReportColumn>& run_identity_columns() {
  static const std::vector<ReportColumn> columns = {
      col("run_id", "", T::report_integer, "run id (dsgd-bench runs)"),
      col("status", "", T::report_text,
          "completed | diverged | failed | interrupted | killed | stopped (at a target or budget) | running"),
      col("created_at", "", T::report_text, "start, ISO 8601 UTC"),
      col("finished_at", "", T::report_text, "end, ISO 8601 UTC; null while running"),
      col("workload", "", T::report_text, "workload (svm, ...)"),
      col("dataset", "", T::report_text, "dataset spec"),
      col("algorithm", "", T::report_text, "SGD variant"),
      col("backend", "", T::report_text, "execution backend"),
      col("workers", "", T::report_integer, "number of workers"),
      col("batch", "samples", T::report_integer, "batch size per worker"),
      col("period", "steps", T::report_integer, "H, local steps between averages"),
      col("steps", "steps", T::report_integer, "total steps including warm-up"),
      col("warmup", "steps", T::report_integer, "untimed warm-up steps"),
      col("seed", "", T::report_integer, "random seed"),
      col("tag", "", T::report_text, "free-text tag (suites: suite=NAME,rep=R)"),
      col("target", "", T::report_text, "time-to-target target, e.g. acc=0.8; null when none"),
  };
  return columns;
}

const std::vector<ReportColumn>& run_context_columns() {
  static const std::vector<ReportColumn> columns = {
      col("tool_version", "", T::report_text, "dsgd-bench version that ran it"),
      col("git_commit", "", T::report_text, "git commit of that build"),
      col("build_type", "", T::report_text, "CMake build type"),
      col("host", "", T::report_text, "host name of rank 0"),
      col("cpu_model", "", T::report_text, "CPU model of rank 0"),
      col("mpi_version", "", T::report_text, "MPI library version"),
      col("prediction", "", T::report_text,
          "a simulated run's figures are predicted: from which compute profile and network, with its warnings; "
          "null for a measured run"),
      col("error", "", T::report_text, "error message of a failed run; null otherwise"),
  };
  return columns;
}

// Configuration keys already covered by identity columns (or meaningless in a report).
const std::set<std::string>& config_keys_skipped() {
  static const std::set<std::string> keys = {"workload", "dataset", "algo",    "period",   "batch",
                                             "steps",    "workers", "backend", "seed",     "target",
                                             "tag",      "warmup",  "db",      "hostfile", "save-params"};
  return keys;
}

// What a simulated run's figures were predicted from (its backend details, stored with the
// run): "compute from <profile>; network <network>[; warning: ...]"; empty for a run on a real clock.
std::string prediction_of(const nlohmann::json& config) {
  if (!config.is_object()) return "";
  const auto d = config.find("backend-details");
  if (d == config.end() || !d->is_object() || d->value("clock", "") != "virtual") return "";
  std::string out = fmt::format("{}compute from {}; network {}", d->value("timing-only", false) ? "timing only; " : "",
                                d->value("profile", "?"), d->value("network", "?"));
  if (const auto j = d->find("compute-jitter-source"); j != d->end() && j->is_string())
    out += fmt::format("; compute jitter {}", j->get<std::string>());
  for (const std::string& w : report_prediction_warnings(config)) out += "; warning: " + w;
  return out;
}

std::string key_to_column(std::string key) {
  for (char& c : key)
    if (c == '-') c = '_';
  return key;
}

ReportValue text_or_null(const std::string& text) {
  return text.empty() ? ReportValue{} : ReportValue{text};
}

ReportValue real(double value) {
  return std::isfinite(value) ? ReportValue{value} : ReportValue{};
}

template <typename V>
ReportValue optional_value(const std::optional<V>& value) {
  if (!value) return {};
  if constexpr (std::is_same_v<V, double>) {
    return real(*value);
  } else {
    return ReportValue{static_cast<int64_t>(*value)};
  }
}

ReportValue json_to_value(const nlohmann::json* value) {
  if (!value || value->is_null()) return {};
  if (value->is_boolean()) return ReportValue{std::string(value->get<bool>() ? "true" : "false")};
  if (value->is_number_integer() || value->is_number_unsigned()) {
    if (value->is_number_unsigned() && value->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
      return ReportValue{std::to_string(value->get<uint64_t>())};
    return ReportValue{value->get<int64_t>()};
  }
  if (value->is_number_float()) return real(value->get<double>());
  if (value->is_string()) return text_or_null(value->get<std::string>());
  return ReportValue{value->dump()};
}

// The report columns of a row type's field table (entries with in_report).
template <class Row>
std::vector<ReportColumn> field_report_columns(const std::vector<RowField<Row>>& fields, bool all = false) {
  std::vector<ReportColumn> columns;
  for (const RowField<Row>& f : fields) {
    if (!f.in_report && !all) continue;
    const bool integer = !f.derived && std::visit(
                                           [](auto member) {
                                             using M = std::decay_t<decltype(std::declval<Row>().*member)>;
                                             return std::is_integral_v<M> || std::is_same_v<M, std::optional<int64_t>>;
                                           },
                                           f.member);
    columns.push_back(col(f.column, f.unit, integer ? T::report_integer : T::report_real, f.help));
  }
  return columns;
}

// Appends the report values of one stored row, in field_report_columns' order.
template <class Row>
void field_report_values(const std::vector<RowField<Row>>& fields, const Row& row, std::vector<ReportValue>& values,
                         bool all = false) {
  for (const RowField<Row>& f : fields) {
    if (!f.in_report && !all) continue;
    if (f.derived) {
      values.push_back(optional_value(f.derived(row)));
      continue;
    }
    values.push_back(std::visit(
        [&](auto member) -> ReportValue {
          const auto& v = row.*member;
          using M = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<M, std::optional<double>> || std::is_same_v<M, std::optional<int64_t>>)
            return optional_value(v);
          else if constexpr (std::is_same_v<M, double>)
            return real(v);
          else
            return ReportValue{static_cast<int64_t>(v)};
        },
        f.member));
  }
}

}  // namespace

std::vector<std::string> report_details_warnings(const nlohmann::json& config, const std::string& key) {
  std::vector<std::string> out;
  if (!config.is_object()) return out;
  const auto d = config.find("backend-details");
  if (d == config.end() || !d->is_object()) return out;
  if (const auto w = d->find(key); w != d->end() && w->is_array())
    for (const auto& line : *w)
      if (line.is_string()) out.push_back(line.get<std::string>());
  return out;
}

std::vector<std::string> report_prediction_warnings(const nlohmann::json& config) {
  std::vector<std::string> out = report_details_warnings(config, "profile-warnings");
  for (std::string& w : report_details_warnings(config, "network-warnings")) out.push_back(std::move(w));
  return out;
}

size_t ReportTable::column_index(const std::string& name) const {
  for (size_t i = 0; i < columns.size(); ++i)
    if (columns[i].name == name) return i;
  DSGD_THROW(Error, "", "report table '{}' has no column '{}'", this->name, name);
}

int report_schema_version() {
  return 1;
}

ReportContext report_context_make(const std::string& db_path, int db_schema_version, const std::string& selection) {
  const SystemInfo sys = system_info_read();
  ReportContext context;
  context.schema_version = report_schema_version();
  context.db_schema_version = db_schema_version;
  context.tool_version = sys.tool_version;
  context.git_commit = sys.git_commit;
  context.build_type = sys.build_type;
  context.host = sys.host;
  context.generated_at = system_time_iso8601();
  context.db_path = db_path;
  context.selection = selection;
  return context;
}

const std::vector<ReportColumn>& report_summary_columns() {
  static const std::vector<ReportColumn> columns = field_report_columns(summary_fields());
  return columns;
}

std::vector<std::string> report_config_keys() {
  std::vector<std::string> keys;
  for (const RunConfigField& field : run_config_fields())
    if (!config_keys_skipped().count(field.key)) keys.emplace_back(field.key);
  return keys;
}

ReportTable report_runs_table(const std::vector<RunWithSummary>& runs) {
  ReportTable table;
  table.name = "runs";
  table.columns = run_identity_columns();
  for (const ReportColumn& c : report_summary_columns()) table.columns.push_back(c);
  const std::vector<std::string> config_keys = report_config_keys();
  for (const std::string& key : config_keys) {
    ReportType type = T::report_text;
    for (const RunConfigField& field : run_config_fields()) {
      if (key != field.key) continue;
      std::visit(
          [&](auto member) {
            using V = std::decay_t<decltype(RunConfig{}.*member)>;
            if constexpr (std::is_same_v<V, double>) type = T::report_real;
            if constexpr (std::is_same_v<V, int64_t> || std::is_same_v<V, uint64_t>) type = T::report_integer;
          },
          field.member);
    }
    table.columns.push_back(ReportColumn{key_to_column(key), "", type, fmt::format("configuration key '{}'", key)});
  }
  for (const ReportColumn& c : run_context_columns()) table.columns.push_back(c);

  for (const RunWithSummary& rs : runs) {
    const RunRecord& r = rs.run;
    std::vector<ReportValue> row;
    row.reserve(table.columns.size());
    row.emplace_back(r.id);
    row.emplace_back(std::string(run_status_text(r.status)));
    row.push_back(text_or_null(r.created_at));
    row.push_back(text_or_null(r.finished_at));
    row.emplace_back(r.workload);
    row.emplace_back(r.dataset);
    row.emplace_back(r.algorithm);
    row.emplace_back(r.backend);
    row.emplace_back(int64_t{r.workers});
    row.emplace_back(r.batch);
    row.emplace_back(r.period);
    row.emplace_back(r.steps);
    row.emplace_back(r.warmup);
    if (r.seed > uint64_t(std::numeric_limits<int64_t>::max())) {
      row.emplace_back(std::to_string(r.seed));
    } else {
      row.emplace_back(static_cast<int64_t>(r.seed));
    }
    row.emplace_back(r.tag);
    row.push_back(text_or_null(r.target));
    if (rs.summary) {
      field_report_values(summary_fields(), *rs.summary, row);
    } else {
      row.resize(row.size() + report_summary_columns().size());
    }
    const nlohmann::json config =
        r.config_json.empty() ? nlohmann::json() : nlohmann::json::parse(r.config_json, nullptr, false);
    for (const std::string& key : config_keys) {
      const nlohmann::json* value = nullptr;
      if (config.is_object()) {
        auto it = config.find(key);
        if (it != config.end()) value = &*it;
      }
      row.push_back(json_to_value(value));
    }
    row.emplace_back(r.tool_version);
    row.emplace_back(r.git_commit);
    row.emplace_back(r.build_type);
    row.emplace_back(r.host);
    row.emplace_back(r.cpu_model);
    row.emplace_back(r.mpi_version);
    row.push_back(text_or_null(prediction_of(config)));
    row.push_back(text_or_null(r.error));
    table.rows.push_back(std::move(row));
  }
  return table;
}

namespace {

template <class Row>
ReportTable field_report_table(const char* name, const std::vector<RowField<Row>>& fields,
                               const std::vector<std::pair<int64_t, std::vector<Row>>>& runs, bool all = false) {
  ReportTable table;
  table.name = name;
  table.columns = {col("run_id", "", T::report_integer, "run id")};
  for (ReportColumn& c : field_report_columns(fields, all)) table.columns.push_back(std::move(c));
  size_t total = 0;
  for (const auto& [id, rows] : runs) total += rows.size();
  table.rows.reserve(total);
  for (const auto& [id, rows] : runs) {
    for (const Row& row : rows) {
      std::vector<ReportValue>& values = table.rows.emplace_back();
      values.reserve(table.columns.size());
      values.emplace_back(id);
      field_report_values(fields, row, values, all);
    }
  }
  return table;
}

}  // namespace

ReportTable report_steps_table(const std::vector<std::pair<int64_t, std::vector<StepRow>>>& steps) {
  return field_report_table("steps", step_fields(), steps);
}

ReportTable report_evals_table(const std::vector<std::pair<int64_t, std::vector<EvalRow>>>& evals, bool all_fields) {
  return field_report_table("evals", eval_fields(), evals, all_fields);
}

nlohmann::json report_value_json(const ReportValue& value) {
  return std::visit(
      [](const auto& v) -> nlohmann::json {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, std::monostate>) {
          return nullptr;
        } else if constexpr (std::is_same_v<V, double>) {
          return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
        } else {
          return v;
        }
      },
      value);
}

std::string report_value_text(const ReportValue& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, std::monostate>) {
          return {};
        } else if constexpr (std::is_same_v<V, double>) {
          return std::isfinite(v) ? fmt::format("{}", v) : std::string();
        } else if constexpr (std::is_same_v<V, int64_t>) {
          return fmt::format("{}", v);
        } else {
          return v;
        }
      },
      value);
}

}  // namespace dsgd
