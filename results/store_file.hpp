// Opening a results database safely (internal to results/store.cpp): the connection, the
// file header read without sqlite (so a refused file gets no -wal/-shm companions), the schema
// version and application id checks, the integrity check and the path checks that run
// before anything is created or written (the rules are in store.cpp's opening comment).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <string>

namespace dsgd::store_detail {

inline constexpr int busy_timeout_ms = 5000;
inline constexpr uintmax_t integrity_check_max_bytes = uintmax_t{512} << 20;
inline constexpr const char* db_hint = "pass another --db";

struct ConnectionClose {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using Connection = std::unique_ptr<sqlite3, ConnectionClose>;

// Opens `uri` when given (with SQLITE_OPEN_URI in flags), else `path`; errors name `path`.
Connection connection_open(const std::string& path, int flags, const std::string& uri = {});

int user_version_read(sqlite3* db);

// The schema version and application id in an existing file's 100-byte header (user_version:
// bytes 60..63, big-endian), read without sqlite. InputError when the file is not a SQLite
// database; an empty file is an empty database. The header can lag behind a -wal file a
// writer has not checkpointed yet, so callers check the version again through their
// connection before writing.
struct FileHeader {
  int user_version = 0;
  uint32_t application_id = 0;
};
FileHeader header_read(const std::string& path);

// InputError when the file's schema is newer than this build's or its application id is
// another program's.
void version_check_not_newer(const std::string& path, int version, uint32_t application_id);

// An integer PRAGMA's value through the connection.
int64_t pragma_int(sqlite3* db, const std::string& path, const char* pragma);

// The schema version through the connection (which sees the -wal file), checked as above.
int version_check_connection(sqlite3* db, const std::string& path);

// PRAGMA quick_check of an existing file (up to integrity_check_max_bytes): InputError when
// it reports damage.
void integrity_check(sqlite3* db, const std::string& path);

// InputError unless `path` is a regular file (or does not exist).
void file_check_regular(const std::string& path);

// InputError unless `path`'s directory exists and is writable.
void path_check_writable(const std::string& path);

}  // namespace dsgd::store_detail
