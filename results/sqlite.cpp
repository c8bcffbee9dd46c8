// The checked sqlite3 wrapper (see sqlite.hpp): every failing call becomes a dsgd::Error
// with the database file, sqlite's message and the SQL that failed.
#include "results/sqlite.hpp"

#include <fmt/format.h>
#include <sqlite3.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "core/errors.hpp"

namespace dsgd {

namespace {

// Long scripts (migrations) are cut so the message stays readable.
std::string sql_excerpt(std::string_view sql) {
  constexpr size_t max_chars = 240;
  std::string text(sql.substr(0, max_chars));
  for (char& c : text) {
    if (c == '\n' || c == '\t') c = ' ';
  }
  if (sql.size() > max_chars) text += "...";
  return text;
}

[[noreturn]] void sql_throw_message(sqlite3* db, int rc, std::string_view message, std::string_view sql) {
  std::string path = db ? sql_db_path(db) : std::string();
  if ((rc & 0xff) == SQLITE_BUSY) {
    // The busy timeout ran out: say who is in the way rather than "database is locked".
    DSGD_THROW(Error,
               "another process kept the database's write lock past the busy timeout (a sqlite3 shell with an "
               "open transaction, or another writer): finish it and retry; nothing was written by this statement",
               "database '{}' is locked: {} (code {}) in: {}", path.empty() ? ":memory:" : path, message, rc,
               sql_excerpt(sql));
  }
  DSGD_THROW(Error, "", "sqlite error on '{}': {} (code {}) in: {}", path.empty() ? ":memory:" : path, message, rc,
             sql_excerpt(sql));
}

}  // namespace

void sql_throw(sqlite3* db, int rc, std::string_view sql) {
  const char* message = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  sql_throw_message(db, rc, message ? message : sqlite3_errstr(rc), sql);
}

std::string sql_db_path(sqlite3* db) {
  const char* name = sqlite3_db_filename(db, "main");
  return name ? std::string(name) : std::string();
}

void sql_exec(sqlite3* db, std::string_view sql) {
  std::string text(sql);  // sqlite3_exec needs a NUL-terminated string
  char* message = nullptr;
  int rc = sqlite3_exec(db, text.c_str(), nullptr, nullptr, &message);
  if (rc != SQLITE_OK) {
    std::string copy = message ? message : sqlite3_errstr(rc);
    sqlite3_free(message);
    sql_throw_message(db, rc, copy, sql);
  }
}

// ---- SqlStatement ----------------------------------------------------------------------

SqlStatement::SqlStatement(sqlite3* db, std::string_view sql) : db_(db) {
  int rc = sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &stmt_, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt_);
    stmt_ = nullptr;
    sql_throw(db, rc, sql);
  }
}

SqlStatement::SqlStatement(SqlStatement&& other) noexcept : db_(other.db_), stmt_(other.stmt_) {
  other.stmt_ = nullptr;
}

SqlStatement::~SqlStatement() {
  sqlite3_finalize(stmt_);
}

#define DSGD_SQL_CHECK_BIND(call)                                  \
  do {                                                             \
    int rc_ = (call);                                              \
    if (rc_ != SQLITE_OK) sql_throw(db_, rc_, sqlite3_sql(stmt_)); \
  } while (0)

void SqlStatement::bind(int index, int64_t value) {
  DSGD_SQL_CHECK_BIND(sqlite3_bind_int64(stmt_, index, value));
}

void SqlStatement::bind(int index, double value) {
  DSGD_SQL_CHECK_BIND(sqlite3_bind_double(stmt_, index, value));
}

void SqlStatement::bind(int index, std::string_view value) {
  DSGD_SQL_CHECK_BIND(sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
}

void SqlStatement::bind(int index, std::nullptr_t) {
  DSGD_SQL_CHECK_BIND(sqlite3_bind_null(stmt_, index));
}

void SqlStatement::bind(int index, const std::optional<double>& value) {
  if (value) {
    bind(index, *value);
  } else {
    bind(index, nullptr);
  }
}

void SqlStatement::bind(int index, const std::optional<int64_t>& value) {
  if (value) {
    bind(index, *value);
  } else {
    bind(index, nullptr);
  }
}

void SqlStatement::bind_text_or_null(int index, std::string_view value) {
  if (value.empty()) {
    bind(index, nullptr);
  } else {
    bind(index, value);
  }
}

#undef DSGD_SQL_CHECK_BIND

bool SqlStatement::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  std::string sql = sqlite3_sql(stmt_);
  sqlite3_reset(stmt_);  // leaves the statement reusable; the error was already captured
  sql_throw(db_, rc, sql);
}

void SqlStatement::run() {
  while (step()) {
  }
  reset();
}

void SqlStatement::reset() {
  sqlite3_reset(stmt_);
}

bool SqlStatement::column_is_null(int col) const {
  return sqlite3_column_type(stmt_, col) == SQLITE_NULL;
}

bool SqlStatement::column_is_integer(int col) const {
  return sqlite3_column_type(stmt_, col) == SQLITE_INTEGER;
}

int64_t SqlStatement::column_int64(int col) const {
  return sqlite3_column_int64(stmt_, col);
}

double SqlStatement::column_real(int col) const {
  if (column_is_null(col)) return std::numeric_limits<double>::quiet_NaN();
  return sqlite3_column_double(stmt_, col);
}

std::string SqlStatement::column_text(int col) const {
  const auto* text = sqlite3_column_text(stmt_, col);
  if (!text) return {};
  int bytes = sqlite3_column_bytes(stmt_, col);
  return std::string(reinterpret_cast<const char*>(text), static_cast<size_t>(bytes));
}

std::optional<double> SqlStatement::column_optional_real(int col) const {
  if (column_is_null(col)) return std::nullopt;
  return sqlite3_column_double(stmt_, col);
}

std::optional<int64_t> SqlStatement::column_optional_int64(int col) const {
  if (column_is_null(col)) return std::nullopt;
  return sqlite3_column_int64(stmt_, col);
}

// ---- SqlTransaction --------------------------------------------------------------------

SqlTransaction::SqlTransaction(sqlite3* db) : db_(db) {
  sql_exec(db_, "BEGIN IMMEDIATE");
  open_ = true;
}

SqlTransaction::~SqlTransaction() {
  if (open_) {
    // Best effort: a failed ROLLBACK (e.g. sqlite already rolled back after an I/O
    // error) must not throw from a destructor.
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
}

void SqlTransaction::commit() {
  sql_exec(db_, "COMMIT");
  open_ = false;
}

bool sql_table_exists(sqlite3* db, const char* name) {
  SqlStatement stmt(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?");
  stmt.bind(1, name);
  return stmt.step() && stmt.column_int64(0) > 0;
}

std::string sqlite_file_uri(const std::string& path, const std::string& query) {
  std::string uri = "file:";
  for (unsigned char c : std::filesystem::absolute(path).string()) {
    if (c == '%' || c == '?' || c == '#' || c < 0x21 || c > 0x7e)
      uri += fmt::format("%{:02X}", c);
    else
      uri += static_cast<char>(c);
  }
  return query.empty() ? uri : uri + "?" + query;
}

}  // namespace dsgd
