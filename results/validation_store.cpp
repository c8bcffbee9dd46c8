// See validation_store.hpp.
#include "results/validation_store.hpp"

#include <sqlite3.h>

#include <cmath>

#include "core/system_info.hpp"
#include "results/sqlite.hpp"

namespace dsgd {

namespace {
constexpr int validation_schema = 5;  // first schema version with the validation tables
}  // namespace

std::optional<double> validation_rel_error(double measured, double predicted) {
  if (!std::isfinite(measured) || !std::isfinite(predicted) || measured == 0) return std::nullopt;
  return std::fabs(predicted - measured) / std::fabs(measured);
}

int64_t validation_store(Store& store, const ValidationRecord& r) {
  sqlite3* db = store.handle();
  SqlTransaction transaction(db);
  SqlStatement insert(db,
                      "INSERT INTO validations (created_at, host, config_json, profile_run_id, measured_run_id, "
                      "simulated_run_id) VALUES (?, ?, ?, ?, ?, ?)");
  insert.bind(1, r.created_at.empty() ? system_time_iso8601() : r.created_at);
  insert.bind_text_or_null(2, r.host);
  insert.bind(3, r.config_json.empty() ? std::string("{}") : r.config_json);
  int index = 4;
  for (int64_t id : {r.profile_run_id, r.measured_run_id, r.simulated_run_id}) {
    if (id > 0)
      insert.bind(index++, id);
    else
      insert.bind(index++, nullptr);
  }
  insert.run();
  const int64_t id = sqlite3_last_insert_rowid(db);
  SqlStatement metric(db,
                      "INSERT INTO validation_metrics (validation_id, metric, measured, predicted, rel_error) "
                      "VALUES (?, ?, ?, ?, ?)");
  for (const ValidationMetric& m : r.metrics) {
    metric.bind_all(id, m.metric, m.measured, m.predicted, m.rel_error);
    metric.run();
  }
  transaction.commit();
  return id;
}

std::vector<ValidationRecord> validations_list(const Store& store, int limit) {
  std::vector<ValidationRecord> out;
  if (store.user_version() < validation_schema) return out;
  sqlite3* db = store.handle();
  SqlStatement stmt(db,
                    "SELECT id, created_at, host, config_json, profile_run_id, measured_run_id, simulated_run_id "
                    "FROM validations ORDER BY id DESC LIMIT ?");
  stmt.bind(1, limit > 0 ? limit : -1);
  while (stmt.step()) {
    ValidationRecord& r = out.emplace_back();
    r.id = stmt.column_int64(0);
    r.created_at = stmt.column_text(1);
    r.host = stmt.column_text(2);
    r.config_json = stmt.column_text(3);
    r.profile_run_id = stmt.column_int64(4);
    r.measured_run_id = stmt.column_int64(5);
    r.simulated_run_id = stmt.column_int64(6);
  }
  SqlStatement metrics(db,
                       "SELECT metric, measured, predicted, rel_error FROM validation_metrics WHERE validation_id = ? "
                       "ORDER BY metric");
  for (ValidationRecord& r : out) {
    metrics.reset();
    metrics.bind(1, r.id);
    while (metrics.step()) {
      ValidationMetric& m = r.metrics.emplace_back();
      m.metric = metrics.column_text(0);
      m.measured = metrics.column_real(1);
      m.predicted = metrics.column_real(2);
      m.rel_error = metrics.column_optional_real(3);
    }
  }
  return out;
}

}  // namespace dsgd
