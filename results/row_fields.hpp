// One field table per stored row type (StepRow, EvalRow): each entry names a column, its
// unit and help line, the schema version that added it and the struct member that holds
// it. The store's SQL (INSERT and SELECT), the report's steps / evals tables and the JSON
// of `show --evals` are derived from these tables, so a new per-step or per-evaluation
// metric is one member and one entry here (recipe: docs/contributing.md, "Add a metric").
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <type_traits>
#include <variant>
#include <vector>

#include "results/store.hpp"

namespace dsgd {

template <class Row>
struct RowField {
  using Member = std::variant<int Row::*, int64_t Row::*, bool Row::*, double Row::*, std::optional<double> Row::*>;
  const char* column;  // SQL column, report column and JSON key
  const char* unit;    // as ReportColumn::unit
  const char* help;    // one line, for the report's column help
  Member member;
  // The schema version whose migration added the column: on an older database the
  // column is not read and the member keeps its default (0, or empty when optional).
  int since_version = 1;
  // Whether the report's table has this column (false keeps a column out of reports
  // written before the table existed; the store and JSON still carry it).
  bool in_report = true;
  // A plain double column whose NULL reads as 0 instead of NaN (injected_s: rows migrated
  // from before the column had no injected delay). Elsewhere NULL is a stored NaN.
  bool null_is_zero = false;
};

// In report column order. Readers rely on (run_id, rank, step) being stored as well;
// those are in the table (run_id is not: it is the key every row is stored under).
const std::vector<RowField<StepRow>>& step_fields();
const std::vector<RowField<EvalRow>>& eval_fields();

// One row as a JSON object keyed by column (every field; an empty optional is null).
template <class Row>
nlohmann::json row_to_json(const std::vector<RowField<Row>>& fields, const Row& row) {
  nlohmann::json j = nlohmann::json::object();
  for (const RowField<Row>& f : fields) {
    std::visit(
        [&](auto member) {
          const auto& v = row.*member;
          if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::optional<double>>)
            j[f.column] = v ? nlohmann::json(*v) : nlohmann::json(nullptr);
          else
            j[f.column] = v;
        },
        f.member);
  }
  return j;
}

}  // namespace dsgd
