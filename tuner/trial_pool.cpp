// See trial_pool.hpp.
#include "tuner/trial_pool.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <set>

#include "core/clock.hpp"
#include "core/errors.hpp"
#include "results/run_copy.hpp"
#include "tuner/tune_interrupt.hpp"

namespace dsgd {

namespace {

// "dsgd-tune-s<session>-<hash of the session database's path>-": the prefix of a session's
// private databases (the pid, the pool and the slot follow).
std::string session_prefix(const std::string& main_path, int64_t session_id) {
  std::error_code ec;
  std::filesystem::path canonical = std::filesystem::weakly_canonical(main_path, ec);
  if (ec) canonical = std::filesystem::absolute(main_path);
  return fmt::format("dsgd-tune-s{}-{:016x}-", session_id, std::hash<std::string>{}(canonical.string()));
}

std::string slot_path(const std::string& prefix, size_t k) {
  static std::atomic<int64_t> pools{0};
  const int64_t pool = pools.fetch_add(1);
  return (std::filesystem::temp_directory_path() / fmt::format("{}{}-{}-slot{}.db", prefix, getpid(), pool, k))
      .string();
}

void remove_database(const std::string& path) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(path + suffix, ec);
}

}  // namespace

int64_t trial_pool_remove_leftovers(const std::string& main_path, int64_t session_id) {
  const std::string prefix = session_prefix(main_path, session_id);
  const std::filesystem::path dir = std::filesystem::temp_directory_path();
  std::error_code ec;
  std::vector<std::string> dead;
  std::set<long> pids;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0 || name.size() < 3 || name.compare(name.size() - 3, 3, ".db") != 0) continue;
    const long pid = std::atol(name.c_str() + prefix.size());
    if (pid <= 0 || pid == static_cast<long>(getpid())) continue;
    if (kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // that process still runs
    dead.push_back(entry.path().string());
    pids.insert(pid);
  }
  for (const std::string& path : dead) remove_database(path);
  // The configuration files of that process's child runs (MPI trials write them beside the
  // private database: engine/child_run.cpp, "dsgd-child-<pid>-...").
  std::vector<std::filesystem::path> children;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("dsgd-child-", 0) == 0 && pids.count(std::atol(name.c_str() + 11))) children.push_back(entry.path());
  }
  for (const auto& path : children) std::filesystem::remove(path, ec);
  return static_cast<int64_t>(dead.size());
}

int trial_pool_default_jobs(int64_t threads_per_trial) {
  const int64_t cores = std::max<int64_t>(1, static_cast<int64_t>(std::thread::hardware_concurrency()));
  return static_cast<int>(std::max<int64_t>(1, cores / std::max<int64_t>(1, threads_per_trial)));
}

TrialPool::TrialPool(Store& main, int jobs, int64_t session_id) : main_(main) {
  if (jobs < 1) DSGD_THROW(InputError, "pass --jobs 1 or more", "--jobs must be positive (got {})", jobs);
  leftovers_removed_ = trial_pool_remove_leftovers(main.path(), session_id);
  const std::string prefix = session_prefix(main.path(), session_id);
  slots_.reserve(static_cast<size_t>(jobs));
  std::vector<std::string> paths;
  try {
    for (size_t k = 0; k < static_cast<size_t>(jobs); ++k) {
      paths.push_back(slot_path(prefix, k));
      const std::string& path = paths.back();
      remove_database(path);
      tune_interrupt_register(path);  // from before it exists: a signal while it is created removes it too
      Store store = Store::open(path, StoreOpenOptions{false, false});
      store_copy_calibrations(store, main.path());
      slots_.push_back(Slot{path, std::move(store), -1, {}});
    }
  } catch (...) {
    slots_.clear();  // closes the connections before the files go
    for (const std::string& path : paths) {
      remove_database(path);
      tune_interrupt_unregister(path);
    }
    throw;
  }
  busy_since_ = clock_now_s();
  for (size_t k = 0; k < slots_.size(); ++k) threads_.emplace_back([this, k] { worker(k); });
}

TrialPool::~TrialPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
  for (Slot& s : slots_) {
    Store closed = std::move(s.store);  // closes the connection before the file goes
    (void)closed;
  }
  for (const Slot& s : slots_) {
    remove_database(s.path);
    tune_interrupt_unregister(s.path);
  }
}

void TrialPool::worker(size_t k) {
  Slot& slot = slots_[k];
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || (slot.ticket >= 0 && slot.task); });
    if (slot.ticket >= 0 && slot.task) {
      Task task = std::move(slot.task);
      slot.task = nullptr;
      lock.unlock();
      std::exception_ptr error;
      try {
        task(slot.store);
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      if (error) errors_.emplace_back(slot.ticket, error);
      done_.emplace_back(slot.ticket, slot.path);
      finished_tickets_.push_back(slot.ticket);
      slot.ticket = -1;
      if (--running_ == 0) busy_total_ += clock_now_s() - busy_since_;
      finished_.notify_all();
      continue;
    }
    if (stopping_) return;
  }
}

bool TrialPool::has_free_slot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::any_of(slots_.begin(), slots_.end(), [](const Slot& s) { return s.ticket < 0; });
}

int64_t TrialPool::submit(Task task) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto free = std::find_if(slots_.begin(), slots_.end(), [](const Slot& s) { return s.ticket < 0; });
  if (free == slots_.end()) DSGD_THROW(Error, "this is a bug", "TrialPool::submit without a free slot");
  free->ticket = next_ticket_++;
  free->task = std::move(task);
  if (running_++ == 0) busy_since_ = clock_now_s();
  wake_.notify_all();
  return free->ticket;
}

int64_t TrialPool::wait_any() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (finished_tickets_.empty() && running_ == 0)
    DSGD_THROW(Error, "this is a bug", "TrialPool::wait_any with nothing running");
  finished_.wait(lock, [&] { return !finished_tickets_.empty(); });
  const int64_t ticket = finished_tickets_.front();
  finished_tickets_.erase(finished_tickets_.begin());
  for (auto it = errors_.begin(); it != errors_.end(); ++it)
    if (it->first == ticket) {
      const std::exception_ptr e = it->second;
      errors_.erase(it);
      std::rethrow_exception(e);
    }
  return ticket;
}

bool TrialPool::done(int64_t ticket) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::any_of(done_.begin(), done_.end(), [&](const auto& d) { return d.first == ticket; });
}

int64_t TrialPool::copy_run(int64_t ticket, int64_t run_id) {
  std::string path;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& d : done_)
      if (d.first == ticket) path = d.second;
  }
  if (path.empty()) DSGD_THROW(Error, "this is a bug", "TrialPool::copy_run of ticket {} before it finished", ticket);
  return store_copy_run(main_, path, run_id);
}

double TrialPool::busy_s() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return busy_total_ + (running_ > 0 ? clock_now_s() - busy_since_ : 0.0);
}

}  // namespace dsgd
