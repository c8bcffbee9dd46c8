// The calibration tables of the results store (schema v3; see store.hpp and
// docs/metrics.md): calibrations, collectives, fits, profiles. Written by rank 0 of
// `dsgd-bench calibrate`, read by the tuner and the simulated backend.
// Conventions as in store.cpp: one transaction per append call; an empty host / version
// string is stored as NULL; readers of a database older than v3 (opened read-only) see
// no calibrations rather than an error.
#include <sqlite3.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/errors.hpp"
#include "core/system_info.hpp"
#include "results/sqlite.hpp"
#include "results/store.hpp"

namespace dsgd {

namespace {

constexpr int calibration_schema = 3;        // first schema version with the calibration tables
constexpr int kCollectiveSpreadSchema = 20;  // collectives.spread
constexpr int profile_spread_schema = 15;    // first with profiles.spread
constexpr int profile_jitter_schema = 17;    // first with profiles.jitter

constexpr const char* calibration_columns =
    "id, created_at, workers, host, cpu_model, mpi_version, git_commit, tool_version, config_json";

CalibrationRecord calibration_read(const SqlStatement& stmt) {
  CalibrationRecord r;
  int c = 0;
  r.id = stmt.column_int64(c++);
  r.created_at = stmt.column_text(c++);
  r.workers = static_cast<int>(stmt.column_int64(c++));
  r.host = stmt.column_text(c++);
  r.cpu_model = stmt.column_text(c++);
  r.mpi_version = stmt.column_text(c++);
  r.git_commit = stmt.column_text(c++);
  r.tool_version = stmt.column_text(c++);
  r.config_json = stmt.column_text(c++);
  return r;
}

bool calibration_exists(sqlite3* db, int64_t id) {
  SqlStatement stmt(db, "SELECT 1 FROM calibrations WHERE id = ?");
  stmt.bind(1, id);
  return stmt.step();
}

[[noreturn]] void calibration_throw_not_found(const std::string& path, int64_t id) {
  DSGD_THROW(InputError, "run `dsgd-bench calibrate` first, or pass the id it printed",
             "calibration {} not found in DB '{}'", id, path);
}

}  // namespace

int64_t Store::calibration_begin(const CalibrationRecord& record) {
  if (record.workers < 1) {
    DSGD_THROW(Error, "", "calibration_begin: workers must be at least 1 (got {})", record.workers);
  }
  SqlStatement stmt(db_,
                    "INSERT INTO calibrations (created_at, workers, host, cpu_model, mpi_version, "
                    "git_commit, tool_version, config_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
  stmt.bind_all(record.created_at.empty() ? system_time_iso8601() : record.created_at, record.workers);
  int index = 3;
  for (const std::string* text :
       {&record.host, &record.cpu_model, &record.mpi_version, &record.git_commit, &record.tool_version}) {
    stmt.bind_text_or_null(index++, *text);
  }
  stmt.bind(index, record.config_json.empty() ? std::string("{}") : record.config_json);
  stmt.run();
  return sqlite3_last_insert_rowid(db_);
}

void Store::collectives_append(int64_t calibration_id, const std::vector<CollectiveRow>& rows) {
  if (rows.empty()) return;
  SqlTransaction transaction(db_);
  if (!calibration_exists(db_, calibration_id)) calibration_throw_not_found(path_, calibration_id);
  SqlStatement stmt(db_,
                    "INSERT INTO collectives (calibration_id, op, bytes, iters, time_s, "
                    "time_min_s, time_max_s, algbw_gbps, busbw_gbps, spread) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  for (const CollectiveRow& r : rows) {
    stmt.bind_all(calibration_id, r.op, r.bytes, r.iters, r.time_s, r.time_min_s, r.time_max_s, r.algbw_gbps,
                  r.busbw_gbps, std::isnan(r.spread) ? std::optional<double>() : std::optional<double>(r.spread));
    stmt.run();
  }
  transaction.commit();
}

void Store::fits_append(int64_t calibration_id, const std::vector<FitRow>& rows) {
  if (rows.empty()) return;
  SqlTransaction transaction(db_);
  if (!calibration_exists(db_, calibration_id)) calibration_throw_not_found(path_, calibration_id);
  SqlStatement stmt(db_,
                    "INSERT INTO fits (calibration_id, op, alpha_s, beta_s_per_byte, "
                    "bandwidth_bytes_per_s, rel_error) VALUES (?, ?, ?, ?, ?, ?)");
  for (const FitRow& r : rows) {
    stmt.bind_all(calibration_id, r.op, r.alpha_s, r.beta_s_per_byte, r.bandwidth_bytes_per_s, r.rel_error);
    stmt.run();
  }
  transaction.commit();
}

void Store::profiles_append(int64_t calibration_id, const std::vector<ProfileRow>& rows) {
  if (rows.empty()) return;
  SqlTransaction transaction(db_);
  if (!calibration_exists(db_, calibration_id)) calibration_throw_not_found(path_, calibration_id);
  SqlStatement stmt(db_,
                    "INSERT INTO profiles (calibration_id, workload, dataset, batch, layer, "
                    "layer_name, fwd_s, bwd_s, spread, jitter) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  for (const ProfileRow& r : rows) {
    stmt.bind_all(calibration_id, r.workload, r.dataset, r.batch, r.layer, r.layer_name, r.fwd_s, r.bwd_s, r.spread);
    stmt.bind_text_or_null(10, r.jitter.empty() ? std::string() : nlohmann::json(r.jitter).dump());
    stmt.run();
  }
  transaction.commit();
}

std::optional<int64_t> Store::calibration_latest(const std::string& host) const {
  if (user_version() < calibration_schema) return std::nullopt;
  SqlStatement stmt(
      db_, host.empty() ? "SELECT max(id) FROM calibrations" : "SELECT max(id) FROM calibrations WHERE host = ?");
  if (!host.empty()) stmt.bind(1, host);
  if (!stmt.step() || stmt.column_is_null(0)) return std::nullopt;
  return stmt.column_int64(0);
}

std::vector<AllreduceFit> Store::allreduce_fits(const std::string& host, int limit) const {
  std::vector<AllreduceFit> fits;
  if (user_version() < calibration_schema) return fits;
  // The calibrations of the host that measured the fabric: a profile-only calibration
  // (`calibrate --workers 1`, or one the tuner stored) does not hide an older fit.
  SqlStatement stmt(db_,
                    "SELECT c.id, c.workers, f.alpha_s, f.bandwidth_bytes_per_s FROM calibrations c "
                    "JOIN fits f ON f.calibration_id = c.id WHERE c.host = ? AND f.op = 'allreduce' "
                    "AND f.bandwidth_bytes_per_s > 0 ORDER BY c.id DESC LIMIT ?");
  stmt.bind(1, host);
  stmt.bind(2, limit);
  while (stmt.step())
    fits.push_back(AllreduceFit{stmt.column_int64(0), static_cast<int>(stmt.column_int64(1)), stmt.column_real(2),
                                stmt.column_real(3)});
  return fits;
}

std::optional<AllreduceFit> Store::allreduce_fit_latest(const std::string& host) const {
  std::vector<AllreduceFit> fits = allreduce_fits(host, 1);
  if (fits.empty()) return std::nullopt;
  return fits.front();
}

CalibrationRecord Store::calibration_get(int64_t calibration_id) const {
  if (user_version() < calibration_schema) calibration_throw_not_found(path_, calibration_id);
  SqlStatement stmt(db_, fmt::format("SELECT {} FROM calibrations WHERE id = ?", calibration_columns));
  stmt.bind(1, calibration_id);
  if (!stmt.step()) calibration_throw_not_found(path_, calibration_id);
  return calibration_read(stmt);
}

std::vector<CalibrationRecord> Store::calibrations_list(int limit) const {
  std::vector<CalibrationRecord> result;
  if (user_version() < calibration_schema) return result;
  SqlStatement stmt(db_, fmt::format("SELECT {} FROM calibrations ORDER BY id DESC LIMIT ?", calibration_columns));
  stmt.bind(1, limit > 0 ? limit : -1);
  while (stmt.step()) result.push_back(calibration_read(stmt));
  return result;
}

std::vector<CollectiveRow> Store::collectives_get(int64_t calibration_id) const {
  std::vector<CollectiveRow> rows;
  if (user_version() < calibration_schema) return rows;
  const bool spreads = user_version() >= kCollectiveSpreadSchema;
  SqlStatement stmt(db_, fmt::format("SELECT op, bytes, iters, time_s, time_min_s, time_max_s, algbw_gbps, "
                                     "busbw_gbps, {} FROM collectives WHERE calibration_id = ? ORDER BY op, bytes",
                                     spreads ? "spread" : "NULL"));
  stmt.bind(1, calibration_id);
  while (stmt.step()) {
    CollectiveRow& r = rows.emplace_back();
    int c = 0;
    r.op = stmt.column_text(c++);
    r.bytes = stmt.column_int64(c++);
    r.iters = stmt.column_int64(c++);
    r.time_s = stmt.column_real(c++);
    r.time_min_s = stmt.column_real(c++);
    r.time_max_s = stmt.column_real(c++);
    r.algbw_gbps = stmt.column_real(c++);
    r.busbw_gbps = stmt.column_real(c++);
    r.spread = stmt.column_optional_real(c++).value_or(std::numeric_limits<double>::quiet_NaN());
  }
  return rows;
}

std::vector<FitRow> Store::fits_get(int64_t calibration_id) const {
  std::vector<FitRow> rows;
  if (user_version() < calibration_schema) return rows;
  SqlStatement stmt(db_,
                    "SELECT op, alpha_s, beta_s_per_byte, bandwidth_bytes_per_s, rel_error "
                    "FROM fits WHERE calibration_id = ? ORDER BY op");
  stmt.bind(1, calibration_id);
  while (stmt.step()) {
    FitRow& r = rows.emplace_back();
    r.op = stmt.column_text(0);
    r.alpha_s = stmt.column_real(1);
    r.beta_s_per_byte = stmt.column_real(2);
    r.bandwidth_bytes_per_s = stmt.column_real(3);
    r.rel_error = stmt.column_real(4);
  }
  return rows;
}

std::vector<ProfileRow> Store::profiles_get(int64_t calibration_id) const {
  std::vector<ProfileRow> rows;
  if (user_version() < calibration_schema) return rows;
  // profiles.spread exists from v15 (a read-only open of an older database has none).
  const bool has_spread = user_version() >= profile_spread_schema;
  const bool has_jitter = user_version() >= profile_jitter_schema;
  SqlStatement stmt(db_, fmt::format("SELECT workload, dataset, batch, layer, layer_name, fwd_s, bwd_s, {}, {} FROM "
                                     "profiles WHERE calibration_id = ? ORDER BY workload, batch, layer",
                                     has_spread ? "spread" : "NULL", has_jitter ? "jitter" : "NULL"));
  stmt.bind(1, calibration_id);
  while (stmt.step()) {
    ProfileRow& r = rows.emplace_back();
    r.workload = stmt.column_text(0);
    r.dataset = stmt.column_text(1);
    r.batch = stmt.column_int64(2);
    r.layer = stmt.column_int64(3);
    r.layer_name = stmt.column_text(4);
    r.fwd_s = stmt.column_real(5);
    r.bwd_s = stmt.column_real(6);
    r.spread = stmt.column_real(7);
    if (!stmt.column_is_null(8)) {
      const nlohmann::json j = nlohmann::json::parse(stmt.column_text(8), nullptr, false);
      if (j.is_array())
        for (const nlohmann::json& v : j)
          if (v.is_number()) r.jitter.push_back(v.get<double>());
    }
  }
  return rows;
}

}  // namespace dsgd
