// See tune_interrupt.hpp.
#include "tuner/tune_interrupt.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <vector>

#include "core/signal_name.hpp"
#include "engine/interrupt.hpp"
#include "results/store.hpp"
#include "results/tune_store.hpp"

namespace dsgd {

namespace {

std::mutex g_mutex;
std::vector<std::string> g_paths;  // registered private databases

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
  interrupt_watch([db_path, session_id, command](int sig) {
    const std::string name = signal_name(sig) + " (" + strsignal(sig) + ")";
    remove_registered();
    try {
      Store store = Store::open(db_path, StoreOpenOptions{false, false});  // quick: no checks
      tune_session_finish(store, session_id, TuneSessionStatus::session_interrupted, "", "stopped by " + name);
      std::fprintf(stderr,
                   "\ndsgd-tune: interrupted by %s; session %lld kept as 'interrupted' in %s (finished trials are "
                   "kept: dsgd-tune %s --resume %lld)\n",
                   name.c_str(), static_cast<long long>(session_id), db_path.c_str(), command.c_str(),
                   static_cast<long long>(session_id));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "\ndsgd-tune: interrupted by %s; could not mark session %lld: %s\n", name.c_str(),
                   static_cast<long long>(session_id), e.what());
    }
  });
}

}  // namespace dsgd
