// See run_copy.hpp.
#include "results/run_copy.hpp"

#include <fmt/format.h>
#include <sqlite3.h>

#include <vector>

#include "core/errors.hpp"
#include "results/sqlite.hpp"

namespace dsgd {

namespace {

constexpr const char* kAlias = "dsgd_copy_src";

// Column names of `table` in the main database of db, in their stored order.
std::vector<std::string> table_columns(sqlite3* db, const std::string& table) {
  std::vector<std::string> cols;
  SqlStatement st(db, fmt::format("PRAGMA main.table_info({})", table));
  while (st.step()) cols.push_back(st.column_text(1));
  if (cols.empty()) DSGD_THROW(Error, "this is a bug", "table '{}' has no columns", table);
  return cols;
}

// ATTACHes an existing file to a connection (opened with SQLITE_OPEN_URI, as Store::open does)
// for the lifetime of the object. mode=rw: a missing file is an error, not created empty (the
// tuner's private databases are removed by a signal while a finished trial may be copied).
class Attached {
 public:
  Attached(sqlite3* db, const std::string& path) : db_(db) {
    SqlStatement st(db, fmt::format("ATTACH DATABASE ?1 AS {}", kAlias));
    st.bind(1, sqlite_file_uri(path, "mode=rw"));
    st.run();
  }
  Attached(const Attached&) = delete;
  Attached& operator=(const Attached&) = delete;
  ~Attached() { sqlite3_exec(db_, fmt::format("DETACH DATABASE {}", kAlias).c_str(), nullptr, nullptr, nullptr); }

 private:
  sqlite3* db_;
};

// INSERT INTO main.table (cols) SELECT cols FROM src.table [WHERE where], with `first`
// replacing the first column's value when not empty.
std::string copy_sql(const std::vector<std::string>& cols, const std::string& table, const std::string& first,
                     const std::string& where) {
  std::string into, select;
  for (size_t i = 0; i < cols.size(); ++i) {
    into += (i ? "," : "") + ("\"" + cols[i] + "\"");
    select += (i ? "," : "") + (i == 0 && !first.empty() ? first : "\"" + cols[i] + "\"");
  }
  return fmt::format("INSERT INTO main.{0} ({1}) SELECT {2} FROM {3}.{0}{4}", table, into, select, kAlias,
                     where.empty() ? "" : " WHERE " + where);
}

}  // namespace

int64_t store_copy_run(Store& to, const std::string& from_path, int64_t run_id) {
  sqlite3* db = to.handle();
  Attached attached(db, from_path);
  SqlTransaction tx(db);
  std::vector<std::string> run_cols;
  for (const std::string& c : table_columns(db, "runs"))
    if (c != "id") run_cols.push_back(c);
  std::string cols;
  for (size_t i = 0; i < run_cols.size(); ++i) cols += (i ? "," : "") + ("\"" + run_cols[i] + "\"");
  {
    SqlStatement st(db,
                    fmt::format("INSERT INTO main.runs ({0}) SELECT {0} FROM {1}.runs WHERE id = ?1", cols, kAlias));
    st.bind(1, run_id);
    st.run();
    if (sqlite3_changes(db) != 1)
      DSGD_THROW(Error, "this is a bug", "run {} is not in '{}': nothing to copy", run_id, from_path);
  }
  const int64_t new_id = sqlite3_last_insert_rowid(db);
  for (const char* table : {"steps", "evals", "summaries"}) {
    const std::vector<std::string> tcols = table_columns(db, table);
    if (tcols.front() != "run_id") DSGD_THROW(Error, "this is a bug", "table '{}' does not start with run_id", table);
    SqlStatement st(db, copy_sql(tcols, table, "?1", "run_id = ?2"));
    st.bind(1, new_id);
    st.bind(2, run_id);
    st.run();
  }
  tx.commit();
  return new_id;
}

void store_copy_calibrations(Store& to, const std::string& from_path) {
  sqlite3* db = to.handle();
  Attached attached(db, from_path);
  SqlTransaction tx(db);
  for (const char* table : {"calibrations", "collectives", "fits", "profiles", "optimizer_profiles", "host_peaks"})
    sql_exec(db, copy_sql(table_columns(db, table), table, "", ""));
  tx.commit();
}

}  // namespace dsgd
