// The field tables of results/row_fields.hpp: every StepRow / EvalRow / Summary field survives
// the store (written and read through the derived SQL), the report's columns are the table's
// report entries, the JSON of a row has one key per stored field, each stored column appears
// at its schema version when migrating, and the step wire format carries the gathered fields.
// Values are set through the table itself, so a field added later is covered.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "results/migrations.hpp"
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

// GCC 12 reports the row maybe-uninitialized when its integer members are read through the
// member pointers below (-Wmaybe-uninitialized); every member of the rows has an initializer
// and row_distinct sets each one: a false positive, silenced for this function alone.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
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

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

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

// ---- summaries ---------------------------------------------------------------------------------

// Every stored summary field is read back through the derived SELECT: the stored row's columns
// set to distinct values by SQL, then read by run_get; a derived field is computed.
TEST(RowFields, SummaryFieldsRoundTripThroughTheStore) {
  const fs::path dir = fs::temp_directory_path() / ("dsgd_summary_fields_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    Store store = Store::open((dir / "s.db").string());
    RunRecord run;
    run.workload = "svm";
    run.steps = 1;
    const int64_t id = store.run_begin(run);
    store.run_finish(id, RunStatus::run_completed, "");
    std::string sql;
    std::vector<double> expected;
    for (const RowField<Summary>& f : summary_fields()) {
      if (!f.stored()) continue;
      const double value = static_cast<double>(expected.size()) + 1.0;
      expected.push_back(value);
      sql += fmt::format("{}{} = {}", sql.empty() ? "UPDATE summaries SET " : ", ", f.column, value);
    }
    ASSERT_EQ(
        sqlite3_exec(store.handle(), (sql + fmt::format(" WHERE run_id = {}", id)).c_str(), nullptr, nullptr, nullptr),
        SQLITE_OK);
    const RunWithSummary back = store.run_get(id);
    ASSERT_TRUE(back.summary);
    size_t i = 0;
    for (const RowField<Summary>& f : summary_fields()) {
      if (!f.stored()) continue;
      EXPECT_EQ(row_field_value(f, *back.summary), expected[i++]) << f.column;
    }
    const RowField<Summary>* pct = row_field_find(summary_fields(), "overlap_pct");
    ASSERT_TRUE(pct && !pct->stored());
    EXPECT_DOUBLE_EQ(*row_field_value(*pct, *back.summary),
                     100.0 * back.summary->overlap_s / (back.summary->overlap_s + back.summary->comm_s));
    // The report's summary columns and the run JSON follow the table.
    std::vector<std::string> report;
    for (const ReportColumn& c : report_summary_columns()) report.push_back(c.name);
    std::vector<std::string> fields, stored;
    for (const RowField<Summary>& f : summary_fields()) {
      fields.emplace_back(f.column);
      if (f.stored()) stored.emplace_back(f.column);
    }
    EXPECT_EQ(report, fields);
    const nlohmann::json j = row_to_json(summary_fields(), *back.summary);
    EXPECT_EQ(j.size(), stored.size());
    for (const std::string& c : stored) EXPECT_TRUE(j.contains(c)) << c;
  }
  fs::remove_all(dir);
}

// ---- migrations from the field tables --------------------------------------------------------

bool column_exists(sqlite3* db, const char* table, const char* column) {
  sqlite3_stmt* stmt = nullptr;
  const std::string sql = fmt::format("SELECT count(*) FROM pragma_table_info('{}') WHERE name = '{}'", table, column);
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK);
  const bool exists = sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_int64(stmt, 0) > 0;
  sqlite3_finalize(stmt);
  return exists;
}

// Migrating one version at a time, a stored field's column appears exactly at its since_version,
// whether a script adds it (the shipped ones) or the field table does (a field newer than every
// script: results/migrations.cpp, field_columns_add).
TEST(RowFields, EveryStoredColumnAppearsAtItsVersion) {
  const fs::path path = fs::temp_directory_path() / ("dsgd_field_migrations_" + std::to_string(::getpid()) + ".db");
  fs::remove(path);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  EXPECT_GE(Store::schema_version(), row_fields_newest_version());
  EXPECT_EQ(Store::schema_version(), static_cast<int>(migrations_all().size()));
  for (int v = 1; v <= Store::schema_version(); ++v) {
    migrations_apply(db, v - 1, v);
    for (const StoredColumn& c : row_fields_stored_columns())
      EXPECT_EQ(column_exists(db, c.table, c.column), c.since_version <= v)
          << c.table << "." << c.column << " at v" << v;
  }
  sqlite3_close(db);
  fs::remove(path);
}

// ---- the step wire format --------------------------------------------------------------------

// The gathered fields travel as they are (an empty optional as empty); rank 0's own fields do not
// travel (they keep their defaults here).
TEST(RowFields, StepWireFormatCarriesTheGatheredFields) {
  const StepRow row = row_distinct(step_fields(), 0);
  std::vector<double> wire(step_wire_fields());
  step_wire_pack(row, wire.data());
  StepRow back;
  step_wire_unpack(wire.data(), back);
  size_t gathered = 0;
  for (const RowField<StepRow>& f : step_fields()) {
    gathered += f.gathered ? 1 : 0;
    std::visit(
        [&](auto member) {
          if (f.gathered)
            EXPECT_TRUE(back.*member == row.*member) << f.column;
          else
            EXPECT_TRUE(back.*member == StepRow{}.*member) << f.column;
        },
        f.member);
  }
  EXPECT_EQ(gathered, step_wire_fields());
  StepRow none;
  step_wire_pack(none, wire.data());
  StepRow none_back;
  none_back.staleness = 1.0;
  step_wire_unpack(wire.data(), none_back);
  EXPECT_FALSE(none_back.staleness.has_value());  // an empty optional travels as NaN and arrives empty
}

}  // namespace
}  // namespace dsgd
