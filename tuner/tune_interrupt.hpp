// A dsgd-tune session stopped by a signal (Ctrl-C, SIGTERM, SIGHUP): the private databases of
// its parallel trials (tuner/trial_pool.hpp) are removed from the temporary directory and the
// session is left `interrupted` in its database (resume it with `--resume`), then the process
// exits with 128 + signal: the watcher of a run (engine/interrupt.hpp interrupt_watch: the
// handler only write()s the signal to a pipe, a thread does the file and database work). A session killed by
// SIGKILL cannot clean up: the next start of the same session removes what a dead process of it
// left (trial_pool_remove_leftovers). Limits: an MPI trial's child run (tuner/trial_mpi.hpp) gets
// the signal only when it is sent to the whole process group (Ctrl-C on a terminal); otherwise it
// ends at its own time limit, writing into a removed file.
#pragma once

#include <cstdint>
#include <string>

namespace dsgd {

// Starts the watcher once per process for session `session_id` of `db_path`; `command` is the
// subcommand that resumes it ("recommend", "grid"), for the message.
void tune_interrupt_start(const std::string& db_path, int64_t session_id, const std::string& command);
// A private database (with its -wal, -shm and -journal files) to remove on a signal, and no longer.
void tune_interrupt_register(const std::string& path);
void tune_interrupt_unregister(const std::string& path);

}  // namespace dsgd
