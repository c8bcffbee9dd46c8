// The one row schema behind every report printer: a table is a list
// of typed, unit-carrying columns and rows of values; CSV, JSON and HTML print the same
// tables. Three tables exist: `runs` (one row per run: identity, configuration, every
// summary metric of docs/metrics.md, context), `steps` (one row per rank and step) and
// `evals` (one row per evaluation). Column names and units are pinned by golden tests
// (tests/unit/test_report_rows.cpp); docs/reports.md lists them.
// Missing values are null (CSV: empty field), never invented. A NaN (a diverged loss,
// which SQLite stores as NULL) is printed as null as well.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

#include "results/store.hpp"

namespace dsgd {

enum class ReportType { report_integer, report_real, report_text };

struct ReportColumn {
  std::string name;  // snake_case; the unit is also in the name's suffix where it has one
  std::string unit;  // "s", "samples/s", "bytes", "1" (a fraction), "" (identifier / text)
  ReportType type = ReportType::report_text;
  std::string help;  // one line, for docs and the JSON schema
};

// std::monostate is null.
using ReportValue = std::variant<std::monostate, int64_t, double, std::string>;

struct ReportTable {
  std::string name;  // runs | steps | evals
  std::vector<ReportColumn> columns;
  std::vector<std::vector<ReportValue>> rows;
  // Index of a column by name; throws Error when absent.
  size_t column_index(const std::string& name) const;
};

// The context header every printer writes first.
struct ReportContext {
  int schema_version = 0;     // the report schema (report_schema_version())
  int db_schema_version = 0;  // PRAGMA user_version of the database read
  std::string tool_version, git_commit, build_type, host;
  std::string generated_at;  // ISO 8601 UTC
  std::string db_path;
  std::string selection;              // how the runs were chosen, e.g. "--tag suite=smoke"
  std::vector<std::string> warnings;  // Debug build, scaling governor, ...
};

// Version of the report row schema; bump when a column is renamed or removed.
int report_schema_version();

// The context of a report generated now by this build from `db_path`.
ReportContext report_context_make(const std::string& db_path, int db_schema_version, const std::string& selection);

// The summary metrics of docs/metrics.md, in order (name, unit, help): the report columns of
// summary_fields() (results/row_fields.hpp).
const std::vector<ReportColumn>& report_summary_columns();
// The configuration keys (from the run-config field table) that become columns of the
// runs table besides the identity columns: "lr", "weight_decay", "straggler", ...
std::vector<std::string> report_config_keys();

// One list of a simulated run's warnings, as stored with the run in its backend details:
// "profile-warnings" (the compute profile: its spread, an unknown spread, batch order) or
// "network-warnings" (a measured fabric whose repetitions spread widely, or that moved between
// the host's calibrations); empty when absent.
std::vector<std::string> report_details_warnings(const nlohmann::json& config, const std::string& key);
// What a simulated run warned its prediction may not be trusted for: both lists, the
// profile's first; empty for other runs.
std::vector<std::string> report_prediction_warnings(const nlohmann::json& config);

ReportTable report_runs_table(const std::vector<RunWithSummary>& runs);
// One row per (rank, step) of each run, in run order.
ReportTable report_steps_table(const std::vector<std::pair<int64_t, std::vector<StepRow>>>& steps);
// all_fields: also the fields kept out of reports (consensus_distance), for `show`.
ReportTable report_evals_table(const std::vector<std::pair<int64_t, std::vector<EvalRow>>>& evals,
                               bool all_fields = false);

// A value as JSON (null for monostate / NaN / infinity).
nlohmann::json report_value_json(const ReportValue& value);
// Numbers as CSV/HTML text: integers in decimal, reals in the shortest form that reads
// back to the same double ("0.1", "1e-07", "12345.678"); null and NaN as "".
std::string report_value_text(const ReportValue& value);

}  // namespace dsgd
