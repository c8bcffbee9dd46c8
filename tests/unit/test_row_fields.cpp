// The field tables of results/row_fields.hpp: every StepRow / EvalRow field survives the
// store (written and read through the derived SQL), the report's steps / evals columns
// are the table's report entries after run_id, and the JSON of a row has one key per
// field. Values are set through the table itself, so a field added later is covered.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "results/report_rows.hpp"
#include "results/row_fields.hpp"
#include "results/store.hpp"

namespace dsgd {
namespace {

namespace fs = std::filesystem;

// Gives field i a value of its type that no other field has (i + 1 + a fraction).
template <class Row>
Row row_distinct(const std::vector<RowField<Row>>& fields, int64_t base) {
  Row row;
  for (size_t i = 0; i < fields.size(); ++i) {
    const int64_t n = base + static_cast<int64_t>(i) + 1;
    std::visit(
        [&](auto member) {
          using M = std::decay_t<decltype(row.*member)>;
          if constexpr (std::is_same_v<M, bool>)
            row.*member = true;
          else if constexpr (std::is_integral_v<M>)
            row.*member = static_cast<M>(n);
          else
            row.*member = static_cast<double>(n) + 0.25;
        },
        fields[i].member);
  }
  return row;
}

template <class Row>
void expect_same_fields(const std::vector<RowField<Row>>& fields, const Row& a, const Row& b) {
  for (const RowField<Row>& f : fields)
    std::visit([&](auto member) { EXPECT_TRUE(a.*member == b.*member) << f.column; }, f.member);
}

template <class Row>
void expect_unique_columns(const std::vector<RowField<Row>>& fields) {
  std::set<std::string> names = {"run_id"};
  for (const RowField<Row>& f : fields) EXPECT_TRUE(names.insert(f.column).second) << "duplicate " << f.column;
}

TEST(RowFields, ColumnNamesAreUniqueAndVersionsKnown) {
  expect_unique_columns(step_fields());
  expect_unique_columns(eval_fields());
  for (const auto& f : step_fields()) EXPECT_LE(f.since_version, Store::schema_version()) << f.column;
  for (const auto& f : eval_fields()) EXPECT_LE(f.since_version, Store::schema_version()) << f.column;
}

TEST(RowFields, EveryFieldRoundTripsThroughTheStore) {
  const fs::path dir = fs::temp_directory_path() / ("dsgd_row_fields_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    Store store = Store::open((dir / "rows.db").string());
    RunRecord run;
    run.workload = "svm";
    run.steps = 2;
    const int64_t id = store.run_begin(run);
    const std::vector<StepRow> steps = {row_distinct(step_fields(), 0), row_distinct(step_fields(), 100)};
    const std::vector<EvalRow> evals = {row_distinct(eval_fields(), 0), row_distinct(eval_fields(), 100)};
    store.steps_append(id, steps);
    store.evals_append(id, evals);
    const std::vector<StepRow> steps_back = store.steps_get(id);
    const std::vector<EvalRow> evals_back = store.evals_get(id);
    ASSERT_EQ(steps_back.size(), 2u);
    ASSERT_EQ(evals_back.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
      expect_same_fields(step_fields(), steps[i], steps_back[i]);
      expect_same_fields(eval_fields(), evals[i], evals_back[i]);
    }
  }
  fs::remove_all(dir);
}

template <class Row>
void expect_report_columns(const ReportTable& table, const std::vector<RowField<Row>>& fields, const Row& row) {
  std::vector<std::string> expected = {"run_id"};
  for (const RowField<Row>& f : fields)
    if (f.in_report) expected.push_back(f.column);
  std::vector<std::string> got;
  for (const ReportColumn& c : table.columns) got.push_back(c.name);
  EXPECT_EQ(got, expected);
  ASSERT_EQ(table.rows.size(), 1u);
  EXPECT_EQ(std::get<int64_t>(table.rows[0][0]), 7);
  // Each value lands in its own column: the field's distinct value, by type.
  size_t c = 1;
  for (const RowField<Row>& f : fields) {
    if (!f.in_report) continue;
    std::visit(
        [&](auto member) {
          using M = std::decay_t<decltype(row.*member)>;
          if constexpr (std::is_same_v<M, bool>)
            EXPECT_EQ(std::get<int64_t>(table.rows[0][c]), 1) << f.column;
          else if constexpr (std::is_integral_v<M>)
            EXPECT_EQ(std::get<int64_t>(table.rows[0][c]), static_cast<int64_t>(row.*member)) << f.column;
          else if constexpr (std::is_same_v<M, double>)
            EXPECT_EQ(std::get<double>(table.rows[0][c]), row.*member) << f.column;
          else
            EXPECT_EQ(std::get<double>(table.rows[0][c]), *(row.*member)) << f.column;
        },
        f.member);
    ++c;
  }
}

TEST(RowFields, ReportTablesAndJsonFollowTheTables) {
  const StepRow step = row_distinct(step_fields(), 0);
  const EvalRow eval = row_distinct(eval_fields(), 0);
  expect_report_columns(report_steps_table({{7, {step}}}), step_fields(), step);
  expect_report_columns(report_evals_table({{7, {eval}}}), eval_fields(), eval);
  const nlohmann::json j = row_to_json(eval_fields(), eval);
  EXPECT_EQ(j.size(), eval_fields().size());
  for (const auto& f : eval_fields()) EXPECT_TRUE(j.contains(f.column)) << f.column;
  EXPECT_TRUE(row_to_json(eval_fields(), EvalRow{})["consensus_distance"].is_null());
}

}  // namespace
}  // namespace dsgd
