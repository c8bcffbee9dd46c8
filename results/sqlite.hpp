// A thin checked wrapper around the sqlite3 C API for the results store: prepared
// statements with RAII (bind / step / column helpers), multi-statement execution and a
// transaction guard that rolls back unless committed. Every failing sqlite call throws
// dsgd::Error naming the SQL, sqlite's message and the database file.
// Limits: one thread per connection; REAL columns read as NaN when NULL, because
// SQLite stores a bound NaN as NULL.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace dsgd {

// Throws dsgd::Error for a failed sqlite call: "sqlite error on 'FILE': MESSAGE (in: SQL)".
[[noreturn]] void sql_throw(sqlite3* db, int rc, std::string_view sql);

// Runs one or more SQL statements that return no rows we need.
void sql_exec(sqlite3* db, std::string_view sql);

// The file behind the connection's main database ("" for in-memory databases).
std::string sql_db_path(sqlite3* db);
// Whether the database has a table of that name (an older or read-only, unmigrated schema may not).
bool sql_table_exists(sqlite3* db, const char* name);
// The file: URI of `path` made absolute (https://www.sqlite.org/uri.html), with `query` (e.g.
// "mode=rw", "immutable=1"; empty: none): '%', '?', '#', spaces, control and non-ASCII bytes
// percent-encoded. For sqlite3_open_v2 with SQLITE_OPEN_URI, or ATTACH on such a connection.
std::string sqlite_file_uri(const std::string& path, const std::string& query);

// One prepared statement. bind() indices start at 1, column() indices at 0, as in sqlite.
class SqlStatement {
 public:
  SqlStatement(sqlite3* db, std::string_view sql);
  SqlStatement(SqlStatement&& other) noexcept;
  SqlStatement& operator=(SqlStatement&&) = delete;
  SqlStatement(const SqlStatement&) = delete;
  SqlStatement& operator=(const SqlStatement&) = delete;
  ~SqlStatement();

  void bind(int index, int64_t value);
  void bind(int index, int value) { bind(index, static_cast<int64_t>(value)); }
  void bind(int index, bool value) { bind(index, static_cast<int64_t>(value ? 1 : 0)); }
  void bind(int index, double value);
  void bind(int index, std::string_view value);
  void bind(int index, const std::string& value) { bind(index, std::string_view(value)); }
  void bind(int index, const char* value) { bind(index, std::string_view(value)); }
  void bind(int index, std::nullptr_t);
  void bind(int index, const std::optional<double>& value);
  void bind(int index, const std::optional<int64_t>& value);
  // Binds NULL for an empty string (for columns where "absent" reads better as NULL).
  void bind_text_or_null(int index, std::string_view value);

  // Binds args to parameters 1..N in order.
  template <class... Args>
  void bind_all(const Args&... args) {
    int index = 0;
    (bind(++index, args), ...);
  }

  // Advances: true when a row is available, false when done; throws on error.
  bool step();
  // Runs a statement that returns no rows, then resets it for reuse.
  void run();
  // Resets for reuse; bindings are kept until rebound.
  void reset();

  bool column_is_null(int col) const;
  bool column_is_integer(int col) const;
  int64_t column_int64(int col) const;     // 0 when NULL
  double column_real(int col) const;       // NaN when NULL
  std::string column_text(int col) const;  // "" when NULL
  std::optional<double> column_optional_real(int col) const;
  std::optional<int64_t> column_optional_int64(int col) const;

 private:
  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
};

// BEGIN IMMEDIATE on construction (takes the write lock up front, so a busy database
// waits on busy_timeout instead of failing mid-transaction); ROLLBACK on destruction
// unless commit() was called.
class SqlTransaction {
 public:
  explicit SqlTransaction(sqlite3* db);
  SqlTransaction(const SqlTransaction&) = delete;
  SqlTransaction& operator=(const SqlTransaction&) = delete;
  ~SqlTransaction();
  void commit();

 private:
  sqlite3* db_ = nullptr;
  bool open_ = false;
};

}  // namespace dsgd
