// See interrupt.hpp. MPI libraries (MPICH with UCX) start threads and install signal
// handlers of their own, so a sigwait() thread is not reliable; instead, after MPI is up,
// our handler replaces theirs: it only write()s the signal number to a pipe
// (async-signal-safe), and a watcher thread blocked on that pipe does the database work
// and exits the process.
#include "engine/interrupt.hpp"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include "core/signal_name.hpp"
#include "engine/trainer.hpp"
#include "results/store.hpp"

namespace dsgd {

namespace {

int g_pipe[2] = {-1, -1};
volatile sig_atomic_t g_signalled = 0;  // set by on_signal

// The launcher's pid given to the ranks ($DSGD_LAUNCHER_PID) when that process has ended
// (no /proc entry, or a zombie its shell has not reaped); 0 otherwise or when not launched.
// The launcher forwards every signal it can catch and records the end itself, so it ends
// before its ranks only when killed by SIGKILL; mpiexec then gets SIGINT (PR_SET_PDEATHSIG).
long launcher_gone_pid() {
  const char* env = std::getenv("DSGD_LAUNCHER_PID");
  const long pid = env ? std::atol(env) : 0;
  if (pid <= 1) return 0;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return pid;
  const size_t paren = line.rfind(')');
  if (paren == std::string::npos || paren + 2 >= line.size()) return 0;
  const char state = line[paren + 2];
  return state == 'Z' || state == 'X' ? pid : 0;
}

void on_signal(int sig) {
  g_signalled = 1;
  const unsigned char byte = static_cast<unsigned char>(sig);
  ssize_t ignored = write(g_pipe[1], &byte, 1);
  (void)ignored;
}

}  // namespace

void interrupt_watch(std::function<void(int sig)> handle) {
  if (g_pipe[0] >= 0) return;
  if (pipe(g_pipe) != 0) return;
  std::thread([handle = std::move(handle)]() {
    unsigned char byte = 0;
    while (read(g_pipe[0], &byte, 1) != 1) {
    }
    const int sig = byte;
    handle(sig);
    std::fflush(stdout);
    std::fflush(stderr);
    _exit(128 + sig);
  }).detach();
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
}

void interrupt_yield_to_watcher() {
  if (!g_signalled) return;
  for (int i = 0; i < 600; ++i) usleep(100 * 1000);  // the watcher _exit()s the process meanwhile
}

void interrupt_start_watcher(const std::string& db_path) {
  if (db_path.empty()) {
    // Not the writer: let rank 0 record the interruption first; the launcher (mpiexec)
    // stops this rank once rank 0 has exited.
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) signal(sig, SIG_IGN);
    return;
  }
  interrupt_watch([db_path](int sig) {
    // Which signal, by name ("SIGTERM (Terminated)"); under the launcher every signal
    // arrives as SIGINT, and the launcher corrects the record (cli/run.cpp).
    const std::string name = signal_name(sig) + " (" + strsignal(sig) + ")";
    const int64_t run_id = trainer_active_run_id();
    if (run_id <= 0) return;
    try {
      Store store = Store::open(db_path, StoreOpenOptions{false, false});  // quick: no checks
      if (const long launcher = launcher_gone_pid(); launcher > 0) {
        const std::string why = "its launcher (dsgd-bench pid " + std::to_string(launcher) +
                                ") was killed (SIGKILL: nothing forwarded) and mpiexec stopped the ranks";
        store.run_finish(run_id, RunStatus::run_killed, why);
        std::fprintf(stderr, "dsgd-bench: run %lld marked 'killed' in %s: %s\n", static_cast<long long>(run_id),
                     db_path.c_str(), why.c_str());
      } else {
        store.run_finish(run_id, RunStatus::run_interrupted, "stopped by " + name);
        std::fprintf(stderr, "dsgd-bench: interrupted by %s; run %lld kept as 'interrupted' in %s\n", name.c_str(),
                     static_cast<long long>(run_id), db_path.c_str());
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "dsgd-bench: interrupted by %s; could not mark run %lld: %s\n", name.c_str(),
                   static_cast<long long>(run_id), e.what());
    }
  });
}

}  // namespace dsgd
