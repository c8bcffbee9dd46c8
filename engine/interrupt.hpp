// A run stopped by a signal (Ctrl-C, SIGTERM, SIGHUP) is left in the database as
// `interrupted`, with everything flushed so far. Signals are blocked in every thread
// (call interrupt_block_signals() before MPI starts its threads) and one thread waits
// for them; on rank 0 it marks the active run through its own database connection,
// then the process exits with 128 + signal.
#pragma once

#include <string>

namespace dsgd {

void interrupt_block_signals();
// Starts the waiting thread; db_path empty on ranks that do not write.
void interrupt_start_watcher(const std::string& db_path);

}  // namespace dsgd
