// See tune_interrupt.hpp.
#include "tuner/tune_interrupt.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include "core/signal_name.hpp"
#include "results/store.hpp"
#include "tuner/tune_store.hpp"

namespace dsgd {

namespace {

int g_pipe[2] = {-1, -1};
std::mutex g_mutex;
std::vector<std::string> g_paths;  // registered private databases

void on_signal(int sig) {
  const unsigned char byte = static_cast<unsigned char>(sig);
  ssize_t ignored = write(g_pipe[1], &byte, 1);
  (void)ignored;
}

void remove_registered() {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::error_code ec;
  for (const std::string& path : g_paths)
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(path + suffix, ec);
  g_paths.clear();
}

}  // namespace

void tune_interrupt_register(const std::string& path) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_paths.push_back(path);
}

void tune_interrupt_unregister(const std::string& path) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_paths.erase(std::remove(g_paths.begin(), g_paths.end(), path), g_paths.end());
}

void tune_interrupt_start(const std::string& db_path, int64_t session_id, const std::string& command) {
  if (g_pipe[0] >= 0) return;
  if (pipe(g_pipe) != 0) return;
  std::thread([db_path, session_id, command]() {
    unsigned char byte = 0;
    while (read(g_pipe[0], &byte, 1) != 1) {
    }
    const int sig = byte;
    const std::string name = signal_name(sig) + " (" + strsignal(sig) + ")";
    remove_registered();
    try {
      Store store = Store::open(db_path, StoreOpenOptions{false, false});  // quick: no checks
      tune_session_finish(store, session_id, "interrupted", "", "stopped by " + name);
      std::fprintf(stderr,
                   "\ndsgd-tune: interrupted by %s; session %lld kept as 'interrupted' in %s (finished trials are "
                   "kept: dsgd-tune %s --resume %lld)\n",
                   name.c_str(), static_cast<long long>(session_id), db_path.c_str(), command.c_str(),
                   static_cast<long long>(session_id));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "\ndsgd-tune: interrupted by %s; could not mark session %lld: %s\n", name.c_str(),
                   static_cast<long long>(session_id), e.what());
    }
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

}  // namespace dsgd
