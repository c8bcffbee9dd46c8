// One field table per stored row type (StepRow, EvalRow, Summary): each entry names a column,
// its unit and help line, the schema version that added it and the struct member that holds
// it. Derived from these tables: the store's SQL (INSERT and SELECT), the migration that adds a
// new column (results/migrations.cpp adds every stored field's column at its since_version),
// the report's runs / steps / evals columns, the JSON of `show`, the step wire format that
// gathers step rows to rank 0 (engine/step_recorder.cpp) and the summary's printout (`run`,
// `show`: cli/run_format.cpp). A new metric is one member and one entry here (recipe:
// docs/contributing.md, "Add a metric").
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "results/store.hpp"

namespace dsgd {

template <class Row>
struct RowField {
  using Member = std::variant<int Row::*, int64_t Row::*, bool Row::*, double Row::*, std::optional<double> Row::*,
                              std::optional<int64_t> Row::*>;
  const char* column;  // SQL column, report column and JSON key
  const char* unit;    // as ReportColumn::unit
  const char* help;    // one line, for the report's column help
  Member member;
  // The schema version whose migration added the column: on an older database the column is
  // not read and the member keeps its default (0, or empty when optional). A field newer than
  // every migration script gets its column from the field table (ALTER TABLE ... ADD COLUMN).
  int since_version = 1;
  // Whether the report's table has this column (false keeps a column out of reports
  // written before the table existed; the store and JSON still carry it).
  bool in_report = true;
  // A plain double column whose NULL reads as 0 instead of NaN (injected_s: rows migrated
  // from before the column had no injected delay). Elsewhere NULL is a stored NaN.
  bool null_is_zero = false;
  // Step rows: whether the rank that ran the step sets it and it travels to rank 0 as it is
  // (the step wire format); false for what rank 0 fills in (rank, timed, start_s on its
  // clock, and the comm / wait / overlap / bytes derived from the collective events).
  bool gathered = true;
  // A value computed from the row's other fields for the report (overlap_pct): no column in
  // the database, not in the row's JSON; `member` is unused.
  std::optional<double> (*derived)(const Row&) = nullptr;
  // The printout of a summary (`run`, `show`; cli/run_format.cpp): a per-step field (a mean
  // time per step) is a line of the per-step block, in ms and % of the step; any other
  // labelled field is printed on the line of its label, in table order, its value times
  // `print_scale` through `format` (a fmt string); a line whose values are all null is left
  // out. label nullptr: not printed. nonzero_only: left out when the value is 0 (injected_s).
  const char* label = nullptr;
  const char* format = "{}";
  double print_scale = 1;
  bool per_step = false;
  bool nonzero_only = false;

  // Chained settings, for readable tables: F{"x_s", "s", "help", &S::x_s}.since(12).print("x").
  RowField since(int version) const { return with(&RowField::since_version, version); }
  RowField report(bool shown) const { return with(&RowField::in_report, shown); }
  RowField null_zero() const { return with(&RowField::null_is_zero, true); }
  RowField on_rank_0() const { return with(&RowField::gathered, false); }
  RowField print(const char* line, const char* value_format = "{}", double scale = 1) const {
    RowField f = *this;
    f.label = line;
    f.format = value_format;
    f.print_scale = scale;
    return f;
  }
  RowField print_step(const char* line, bool only_nonzero = false) const {
    RowField f = print(line);
    f.per_step = true;
    f.nonzero_only = only_nonzero;
    return f;
  }
  RowField derive(std::optional<double> (*fn)(const Row&)) const { return with(&RowField::derived, fn); }
  // Whether the field has a column in the database.
  bool stored() const { return derived == nullptr; }

 private:
  template <class V>
  RowField with(V RowField::*setting, V value) const {
    RowField f = *this;
    f.*setting = value;
    return f;
  }
};

// In report column order. Readers rely on (run_id, rank, step) being stored as well;
// those are in the table (run_id is not: it is the key every row is stored under).
const std::vector<RowField<StepRow>>& step_fields();
const std::vector<RowField<EvalRow>>& eval_fields();
// The summary metrics of docs/metrics.md, in the runs table's column order (table summaries,
// one row per run, keyed by run_id).
const std::vector<RowField<Summary>>& summary_fields();

// A stored column of one of the tables, for the migrations (results/migrations.cpp).
struct StoredColumn {
  const char* table;  // steps | evals | summaries
  const char* column;
  const char* sql_type;  // INTEGER | REAL
  int since_version;
};
// Every stored field of the three tables, in table order.
std::vector<StoredColumn> row_fields_stored_columns();
// The newest since_version of any field (the schema version is at least this).
int row_fields_newest_version();

// The value of a field as a double (integers converted, bool as 0 / 1; derived fields
// computed); empty for an empty optional.
template <class Row>
std::optional<double> row_field_value(const RowField<Row>& f, const Row& row) {
  if (f.derived) return f.derived(row);
  return std::visit(
      [&](auto member) -> std::optional<double> {
        const auto& v = row.*member;
        using M = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<M, std::optional<double>> || std::is_same_v<M, std::optional<int64_t>>) {
          if (!v) return std::nullopt;
          return static_cast<double>(*v);
        } else {
          return static_cast<double>(v);
        }
      },
      f.member);
}

// The field whose column is `column`; nullptr when the table has none.
template <class Row>
const RowField<Row>* row_field_find(const std::vector<RowField<Row>>& fields, std::string_view column) {
  for (const RowField<Row>& f : fields)
    if (column == f.column) return &f;
  return nullptr;
}

// One row as a JSON object keyed by column (every stored field; an empty optional is null).
template <class Row>
nlohmann::json row_to_json(const std::vector<RowField<Row>>& fields, const Row& row) {
  nlohmann::json j = nlohmann::json::object();
  for (const RowField<Row>& f : fields) {
    if (!f.stored()) continue;
    std::visit(
        [&](auto member) {
          const auto& v = row.*member;
          using M = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<M, std::optional<double>> || std::is_same_v<M, std::optional<int64_t>>)
            j[f.column] = v ? nlohmann::json(*v) : nlohmann::json(nullptr);
          else
            j[f.column] = v;
        },
        f.member);
  }
  return j;
}

// The step wire format (engine/step_recorder.cpp): the gathered fields of a step row as
// doubles, in table order; an empty optional travels as NaN (and a NaN arrives as empty).
size_t step_wire_fields();
void step_wire_pack(const StepRow& row, double* out);
void step_wire_unpack(const double* in, StepRow& row);

}  // namespace dsgd
