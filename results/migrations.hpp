// The results-database schema as an ordered list of forward migrations. Migration i
// (0-based) brings the schema from version i to i+1; the version lives in
// PRAGMA user_version. Migrating to version v runs v's script (if it has one), then adds
// the columns the field tables (results/row_fields.hpp) declare `.since(v)` that the
// database lacks. So a new column of a step / evaluation / summary row needs no script: its
// field says the version. Anything else (a table, an index, a default) is a script appended
// to migration_scripts() in migrations.cpp; never edit a script that has shipped. The newest
// version is the larger of the last script's and the newest field's.
#pragma once

#include <vector>

struct sqlite3;

namespace dsgd {

// application_id stamped by migration v8 ('DSGD'): a database of another program, or a
// corrupt header, is told apart from one written by a newer dsgd-bench.
constexpr int migrations_application_id = 0x44534744;

// The migration scripts in order; migrations_all().size() is the newest schema version.
const std::vector<const char*>& migrations_all();

// Brings the database from schema version `from` to `to` (0 <= from <= to <= newest),
// one transaction per migration, each also setting user_version, so a failure rolls
// back that migration and leaves the database at the last completed version.
// A migration whose version another connection already applied is skipped; throws
// dsgd::Error when the database is at a version other than the one expected.
void migrations_apply(sqlite3* db, int from, int to);

}  // namespace dsgd
