// Copies rows between two dsgd-bench databases of the same schema version, inside SQLite
// (ATTACH + INSERT ... SELECT, no row decoding). The tuner's parallel trials each write into a
// private database file; the coordinator copies every finished trial's run into the session's
// database, so only one thread writes there. Limits: both files must be at this build's schema
// version (Store::open migrates them); `to` must not be inside a transaction.
#pragma once

#include <cstdint>
#include <string>

#include "results/store.hpp"

namespace dsgd {

// Copies run `run_id` of the database at `from_path` (its runs row, steps, evals and summary)
// into `to` under a new id, in one transaction; returns the new id. Throws Error when the run
// does not exist there.
int64_t store_copy_run(Store& to, const std::string& from_path, int64_t run_id);

// Copies the measured calibrations of `from_path` into `to`, keeping their ids: the tables
// calibrations, collectives, fits, profiles, optimizer_profiles and host_peaks (what a run reads from its
// database besides its own rows). `to` must have none yet (a fresh database).
void store_copy_calibrations(Store& to, const std::string& from_path);

}  // namespace dsgd
