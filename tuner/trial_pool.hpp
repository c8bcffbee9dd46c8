// Parallel trials for `dsgd-tune recommend --jobs N`: N worker threads, each with a private
// results database (a temporary file holding a copy of the session database's calibrations,
// results/run_copy.hpp), run independent tasks — a trial and its step-time probe — at the same
// time. A task reads and writes only its slot's database, so the session database is written by
// the coordinating thread alone: it copies each finished trial's run there (copy_run). Every
// trial's workers are simulator threads of which one runs at a time, so a trial occupies about
// one core and N trials about N. The pool also measures the time during which no task was
// running (the tuner's own share of the session, docs/tuner.md). The private databases are named
// for the session (dsgd-tune-s<SESSION>-<database>-<pid>-...): a signal removes them
// (tuner/tune_interrupt.hpp), and the next pool of the same session removes those a killed
// process of it left behind.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "results/store.hpp"

namespace dsgd {

class TrialPool {
 public:
  // What a task reports back: its slot (for copy_run) and its real seconds.
  using Task = std::function<void(Store& slot_store)>;

  // Creates `jobs` slots (private databases seeded from `main`'s calibrations) and threads, after
  // removing the private databases of session `session_id` that an ended process left.
  TrialPool(Store& main, int jobs, int64_t session_id);
  TrialPool(const TrialPool&) = delete;
  TrialPool& operator=(const TrialPool&) = delete;
  ~TrialPool();  // waits for the running tasks, removes the private databases

  int jobs() const { return static_cast<int>(slots_.size()); }
  // Private databases of an earlier, killed process of this session removed at construction.
  int64_t leftovers_removed() const { return leftovers_removed_; }
  bool has_free_slot() const;
  // Starts task on a free slot (has_free_slot() must be true); returns a ticket.
  int64_t submit(Task task);
  // Blocks until some started task has finished that was not yet collected; returns its ticket.
  // A task's exception is rethrown here.
  int64_t wait_any();
  bool done(int64_t ticket) const;
  // Copies run `run_id` of the slot that ran `ticket` into the session database; returns its id there.
  int64_t copy_run(int64_t ticket, int64_t run_id);
  // Real seconds since construction during which at least one task was running.
  double busy_s() const;

 private:
  struct Slot {
    std::string path;
    Store store;
    int64_t ticket = -1;  // running this ticket; -1 free
    Task task;
  };
  void worker(size_t slot);

  Store& main_;
  std::vector<Slot> slots_;
  std::vector<std::thread> threads_;
  mutable std::mutex mutex_;
  std::condition_variable wake_, finished_;
  bool stopping_ = false;
  int64_t next_ticket_ = 0;
  std::vector<int64_t> finished_tickets_;              // finished, not yet returned by wait_any
  std::vector<std::pair<int64_t, std::string>> done_;  // ticket -> slot path (finished)
  std::vector<std::pair<int64_t, std::exception_ptr>> errors_;
  int running_ = 0;
  double busy_since_ = 0, busy_total_ = 0;
  int64_t leftovers_removed_ = 0;
};

// Removes the temporary directory's private databases of session `session_id` of `main_path`
// whose process has ended (a SIGKILL leaves them); returns how many databases.
int64_t trial_pool_remove_leftovers(const std::string& main_path, int64_t session_id);

// --jobs default: the cores of this machine, one trial each (at least 1).
int trial_pool_default_jobs(int64_t threads_per_trial);

}  // namespace dsgd
