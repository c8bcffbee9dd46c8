// A run stopped by a signal (Ctrl-C, SIGTERM, SIGHUP) is left in the database as
// `interrupted`, with everything flushed so far. After MPI is initialised, a handler
// forwards the signal through a pipe to a watcher thread; on rank 0 it marks the active
// run through its own database connection, then the process exits with 128 + signal.
#pragma once

#include <functional>
#include <string>

namespace dsgd {

// Starts the waiting thread; db_path empty on ranks that do not write.
void interrupt_start_watcher(const std::string& db_path);

// The mechanism under it, for other programs (dsgd-tune: tuner/tune_interrupt.hpp): once per
// process, on SIGINT, SIGTERM or SIGHUP, `handle(sig)` runs on the watcher thread, then the
// process exits with 128 + signal.
void interrupt_watch(std::function<void(int sig)> handle);

// Once a watched signal has arrived, the watcher thread records it and ends the process: any
// other way out (an error the signal's cleanup caused on another thread, main returning) must
// not race it to a different exit code or a half-written record. Returns at once when no
// signal arrived; otherwise waits for the watcher's exit (at most 60 s, then returns).
void interrupt_yield_to_watcher();

}  // namespace dsgd
