// See interrupt.hpp.
#include "engine/interrupt.hpp"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <thread>

#include "engine/trainer.hpp"
#include "results/store.hpp"

namespace dsgd {

namespace {

sigset_t watched_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  return set;
}

}  // namespace

void interrupt_block_signals() {
  sigset_t set = watched_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

void interrupt_start_watcher(const std::string& db_path) {
  std::thread([db_path]() {
    sigset_t set = watched_signals();
    int sig = 0;
    if (sigwait(&set, &sig) != 0) return;
    const int64_t run_id = trainer_active_run_id();
    if (!db_path.empty() && run_id > 0) {
      try {
        Store store = Store::open(db_path);
        store.run_finish(run_id, "interrupted", std::string("stopped by signal ") + strsignal(sig));
        std::fprintf(stderr, "dsgd-bench: interrupted by %s; run %lld kept as 'interrupted' in %s\n", strsignal(sig),
                     static_cast<long long>(run_id), db_path.c_str());
      } catch (const std::exception& e) {
        std::fprintf(stderr, "dsgd-bench: interrupted by %s; could not mark run %lld: %s\n", strsignal(sig),
                     static_cast<long long>(run_id), e.what());
      }
    }
    std::fflush(stdout);
    std::fflush(stderr);
    _exit(128 + sig);
  }).detach();
}

}  // namespace dsgd
