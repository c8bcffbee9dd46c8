// See store_file.hpp.
#include "results/store_file.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/errors.hpp"
#include "results/migrations.hpp"
#include "results/sqlite.hpp"
#include "results/store.hpp"

namespace dsgd::store_detail {

namespace fs = std::filesystem;

// Opens `uri` when given (with SQLITE_OPEN_URI in flags), else `path`; errors name `path`.
Connection connection_open(const std::string& path, int flags, const std::string& uri) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(uri.empty() ? path.c_str() : uri.c_str(), &raw, flags, nullptr);
  Connection db(raw);
  if (rc != SQLITE_OK) {
    DSGD_THROW(Error, "", "sqlite error on '{}': cannot open: {} (code {})", path,
               raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc), rc);
  }
  rc = sqlite3_busy_timeout(db.get(), busy_timeout_ms);
  if (rc != SQLITE_OK) sql_throw(db.get(), rc, "sqlite3_busy_timeout");
  return db;
}

int user_version_read(sqlite3* db) {
  SqlStatement stmt(db, "PRAGMA user_version");
  return stmt.step() ? static_cast<int>(stmt.column_int64(0)) : 0;
}

// The schema version in an existing file's 100-byte header (user_version: bytes 60..63,
// big-endian), read without sqlite: even a read-only sqlite connection to a WAL database
// leaves -wal and -shm files behind, and a refused file must get no companions.
// InputError when the file is not a SQLite database; an empty file is an empty database.
// The header can lag behind a -wal file a writer has not checkpointed yet, so callers
// check the version again through their connection before writing.

uint32_t be32(const std::array<unsigned char, 100>& h, size_t at) {
  return (uint32_t{h[at]} << 24) | (uint32_t{h[at + 1]} << 16) | (uint32_t{h[at + 2]} << 8) | uint32_t{h[at + 3]};
}

[[noreturn]] void throw_not_ours(const std::string& path, const std::string& why) {
  DSGD_THROW(InputError, fmt::format("{} (the file was left untouched)", db_hint),
             "cannot open database '{}': it is not a dsgd-bench database or it is corrupt ({})", path, why);
}

FileHeader header_read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    DSGD_THROW(InputError, db_hint, "cannot open database '{}': the file cannot be read", path);
  }
  std::array<unsigned char, 100> header{};
  in.read(reinterpret_cast<char*>(header.data()), header.size());
  const auto got = static_cast<size_t>(in.gcount());
  if (got == 0) return {};
  static constexpr char magic[] = "SQLite format 3";  // 16 bytes with its NUL
  if (got < header.size() || std::memcmp(header.data(), magic, sizeof magic) != 0) {
    DSGD_THROW(InputError, fmt::format("{} (the file was left untouched)", db_hint),
               "cannot open database '{}': the file is not a SQLite database", path);
  }
  // The fields SQLite itself fixes (https://www.sqlite.org/fileformat.html): page size a
  // power of two in 512..65536 (1 = 65536), format versions 1 or 2, payload fractions
  // 64/32/32. Random bytes after the magic fail these.
  const uint32_t page = (uint32_t{header[16]} << 8) | header[17];
  const bool page_ok = page == 1 || (page >= 512 && page <= 32768 && (page & (page - 1)) == 0);
  if (!page_ok || header[18] < 1 || header[18] > 2 || header[19] < 1 || header[19] > 2 || header[21] != 64 ||
      header[22] != 32 || header[23] != 32)
    throw_not_ours(path, "its SQLite header is invalid");
  FileHeader result;
  result.user_version = static_cast<int>(be32(header, 60));
  result.application_id = be32(header, 68);
  return result;
}

// A newer dsgd-bench stamps application_id (schema v8 on); a version beyond this build's
// without it, or another application_id, is not ours.
void version_check_not_newer(const std::string& path, int version, uint32_t application_id) {
  const auto ours = static_cast<uint32_t>(migrations_application_id);
  if (application_id != 0 && application_id != ours)
    throw_not_ours(path, fmt::format("application_id {:#x} is another program's", application_id));
  if (version > Store::schema_version() && application_id != ours)
    throw_not_ours(path, fmt::format("schema version {} is no dsgd-bench version", version));
  if (version > Store::schema_version()) {
    DSGD_THROW(InputError, "upgrade dsgd-bench or use another --db",
               "cannot open database '{}': it was written by a newer dsgd-bench (schema v{}; "
               "this build knows up to v{})",
               path, version, Store::schema_version());
  }
}

// One integer PRAGMA through the raw API, so that "file is not a database" / "corrupt"
// become the refusal they are (InputError) rather than an internal sqlite error.
int64_t pragma_int(sqlite3* db, const std::string& path, const char* pragma) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db, pragma, -1, &stmt, nullptr);
  if (rc == SQLITE_OK) rc = sqlite3_step(stmt);
  const int64_t value = rc == SQLITE_ROW ? sqlite3_column_int64(stmt, 0) : 0;
  const int code = rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : sqlite3_extended_errcode(db);
  sqlite3_finalize(stmt);
  if ((code & 0xff) == SQLITE_NOTADB || (code & 0xff) == SQLITE_CORRUPT) throw_not_ours(path, sqlite3_errstr(code));
  if (code != SQLITE_OK) sql_throw(db, code, pragma);
  return value;
}

// The definitive check, through the connection, before anything is written. A refused
// connection is told not to checkpoint on close, so the main file stays as it was.
int version_check_connection(sqlite3* db, const std::string& path) {
  const int version = static_cast<int>(pragma_int(db, path, "PRAGMA user_version"));
  const auto application_id = static_cast<uint32_t>(pragma_int(db, path, "PRAGMA application_id"));
  try {
    version_check_not_newer(path, version, application_id);
  } catch (...) {
    sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
    throw;
  }
  if (version == 0) {
    SqlStatement tables(db, "SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'");
    if (tables.step() && tables.column_int64(0) > 0) {
      sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
      throw_not_ours(path, "it has tables but no dsgd-bench schema version");
    }
  }
  return version;
}

// PRAGMA quick_check: refuses to write to a database with corrupt pages. Raw API: on a
// badly damaged file the check itself fails with SQLITE_CORRUPT, which is the same answer.
void integrity_check(sqlite3* db, const std::string& path) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db, "PRAGMA quick_check(5)", -1, &stmt, nullptr);
  std::string problems;
  while (rc == SQLITE_OK || rc == SQLITE_ROW) {
    rc = sqlite3_step(stmt);
    if (rc != SQLITE_ROW) break;
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    const std::string line = text ? text : "";
    if (line != "ok") problems += (problems.empty() ? "" : "; ") + line;
    std::replace(problems.begin(), problems.end(), '\n', ' ');
  }
  const int code = sqlite3_extended_errcode(db);
  sqlite3_finalize(stmt);
  if (rc != SQLITE_DONE) {
    if ((code & 0xff) != SQLITE_CORRUPT && (code & 0xff) != SQLITE_NOTADB) sql_throw(db, code, "PRAGMA quick_check");
    problems += (problems.empty() ? "" : "; ") + std::string(sqlite3_errstr(code));
  }
  if (problems.empty()) return;
  DSGD_THROW(Error,
             fmt::format("nothing was written; recover what is readable with `sqlite3 {} .recover | sqlite3 "
                         "recovered.db`, or pass another --db",
                         path),
             "database '{}' is corrupt (PRAGMA quick_check: {})", path, problems);
}

void file_check_regular(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    DSGD_THROW(InputError, db_hint, "cannot open database '{}': it is not a regular file", path);
  }
}

// Refuses, without creating anything, a path Store::open could not use.
void path_check_writable(const std::string& path) {
  if (path.empty()) DSGD_THROW(InputError, db_hint, "the database path is empty");
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    DSGD_THROW(InputError, "create the directory or pass another --db",
               "cannot open database '{}': directory '{}' does not exist", path, dir.string());
  }
  if (!fs::is_directory(dir, ec)) {
    DSGD_THROW(InputError, db_hint, "cannot open database '{}': '{}' is not a directory", path, dir.string());
  }
  if (::access(dir.c_str(), W_OK) != 0) {
    DSGD_THROW(InputError, "make the directory writable or pass another --db",
               "cannot open database '{}': directory '{}' is not writable", path, dir.string());
  }
  if (fs::exists(path, ec)) {
    file_check_regular(path);
    if (::access(path.c_str(), R_OK | W_OK) != 0) {
      DSGD_THROW(InputError, "make the file writable or pass another --db",
                 "cannot open database '{}': the file is not readable and writable", path);
    }
  }
}

}  // namespace dsgd::store_detail
