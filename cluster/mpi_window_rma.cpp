// The one-sided windows through MPI RMA (mpi_window.hpp), for ranks on several hosts or
// DSGD_MPI_WINDOW=rma, in page-aligned memory this backend allocates (MPI_Win_create), never
// MPI_Win_allocate's: MPICH 4.0.2's ch4:ucx netmod with UCX >= 1.13 replaces a window's base
// by the start of its page (fixed upstream in MPICH PR 6140, after 4.0.2), so on memory that
// does not start a page, remote puts land before the window, over other heap data, while
// local accesses use the real base: lost updates and torn reads that look like a lock that
// does not exclude (docs/cluster.md, tests/mpi/test_window_lock.cpp). check_addressing
// verifies at creation that every rank's puts land in the target's memory.
// Mutual exclusion does not rely on MPI_Win_lock(EXCLUSIVE): whether an MPI excludes other
// ranks' exclusive locks from a rank's lock on its own window is the implementation's business
// (it was reported not to on MPICH 4.0.2 over UCX). Instead, after the addressing check every
// rank opens one shared epoch on every window (MPI_Win_lock_all) for the window's life, and
// lock / unlock are MPI atomics (MPI_Fetch_and_op) on the target's lock words, each followed
// by MPI_Win_flush. Atomic operations on one location with one datatype are atomic with
// respect to each other whoever the origin is, the target itself included (MPI 4.0 section
// 12.7), and the flushes order the epoch's data accesses between acquire and release.
#include <mpi.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <thread>

#include "cluster/mpi_check.hpp"
#include "cluster/mpi_window.hpp"
#include "core/errors.hpp"

namespace dsgd {

namespace {

class RmaWindow final : public MpiWindow {
 public:
  RmaWindow(const MpiWindowLayout& layout, int rank, int size) : layout_(layout), rank_(rank), size_(size) {
    const long page_size = sysconf(_SC_PAGESIZE);
    void* base = std::aligned_alloc(page_size > 0 ? static_cast<size_t>(page_size) : 4096, layout_.mem_bytes);
    if (base == nullptr)
      DSGD_THROW(Error, "use a smaller model or fewer shards", "cannot allocate a {}-byte window", layout_.mem_bytes);
    std::memset(base, 0, layout_.mem_bytes);
    mem_ = static_cast<char*>(base);
    DSGD_MPI_CHECK(MPI_Win_create(base, static_cast<MPI_Aint>(layout_.bytes), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win_));
    check_addressing();
    DSGD_MPI_CHECK(MPI_Win_lock_all(0, win_));
  }
  ~RmaWindow() override {
    if (win_ == MPI_WIN_NULL) std::free(mem_);  // else MPI may still reference it: left to MPI_Finalize
  }

  // A ticket lock, so that a rank cannot starve others: a compare-and-swap spin lock let a
  // passive adpsgd rank, whose own-window attempts are local while a remote attempt is served
  // only when it enters MPI, take its lock again and again (an active's averagings then all
  // landed after the passive's last step). Acquire: take a ticket (fetch-and-add 1 on the next
  // word), then read the serving word (atomic no-op fetch) until it equals the ticket,
  // driving progress between reads so that others' atomics on this rank's window complete.
  void lock(int rank) override {
    const uint64_t one = 1;
    uint64_t ticket = 0, serving = 0;
    DSGD_MPI_CHECK(
        MPI_Fetch_and_op(&one, &ticket, MPI_UINT64_T, rank, disp(MpiWindowLayout::kNextTicket), MPI_SUM, win_));
    DSGD_MPI_CHECK(MPI_Win_flush(rank, win_));
    for (;;) {
      DSGD_MPI_CHECK(
          MPI_Fetch_and_op(nullptr, &serving, MPI_UINT64_T, rank, disp(MpiWindowLayout::kServing), MPI_NO_OP, win_));
      DSGD_MPI_CHECK(MPI_Win_flush(rank, win_));
      if (serving == ticket) return;
      progress();
      std::this_thread::yield();
    }
  }
  // Release: the epoch's data accesses complete (flush), then the serving word advances.
  void unlock(int rank) override {
    const uint64_t one = 1;
    uint64_t before = 0;
    DSGD_MPI_CHECK(MPI_Win_flush(rank, win_));
    DSGD_MPI_CHECK(MPI_Fetch_and_op(&one, &before, MPI_UINT64_T, rank, disp(MpiWindowLayout::kServing), MPI_SUM, win_));
    DSGD_MPI_CHECK(MPI_Win_flush(rank, win_));
  }
  void get(BufferView dst, int rank, uint64_t* version) override {
    const int count = mpi_count(dst.count);
    DSGD_MPI_CHECK(MPI_Get(dst.data, count, MPI_FLOAT, rank, 0, count, MPI_FLOAT, win_));
    DSGD_MPI_CHECK(
        MPI_Get(version, 1, MPI_UINT64_T, rank, static_cast<MPI_Aint>(layout_.version_offset), 1, MPI_UINT64_T, win_));
    DSGD_MPI_CHECK(MPI_Win_flush(rank, win_));
  }
  void put(ConstBufferView src, int rank, uint64_t version) override {
    const int count = mpi_count(src.count);
    put_version_ = version;
    DSGD_MPI_CHECK(MPI_Put(src.data, count, MPI_FLOAT, rank, 0, count, MPI_FLOAT, win_));
    DSGD_MPI_CHECK(MPI_Put(&put_version_, 1, MPI_UINT64_T, rank, static_cast<MPI_Aint>(layout_.version_offset), 1,
                           MPI_UINT64_T, win_));
    DSGD_MPI_CHECK(MPI_Win_flush(rank, win_));
  }
  // Any MPI call that enters the progress engine serves the pending requests of others.
  void progress() override {
    int flag = 0;
    DSGD_MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
    DSGD_MPI_CHECK(MPI_Win_flush(rank_, win_));
  }
  void close() override {
    if (win_ == MPI_WIN_NULL) return;
    DSGD_MPI_CHECK(MPI_Win_unlock_all(win_));
    DSGD_MPI_CHECK(MPI_Win_free(&win_));
    std::free(mem_);
    mem_ = nullptr;
  }

 private:
  MPI_Aint disp(size_t word) const { return static_cast<MPI_Aint>(layout_.lock_word(word)); }

  // Each rank puts a marker into the next rank's version word; each then checks, under a
  // lock on its own window, that the marker is in its memory and reads back through MPI;
  // the version words are zero again afterwards. Collective, untimed.
  void check_addressing() {
    const int next = (rank_ + 1) % size_, prev = (rank_ + size_ - 1) % size_;
    const auto version_disp = static_cast<MPI_Aint>(layout_.version_offset);
    uint64_t marker = 0x5eed000000000000ULL + static_cast<uint64_t>(rank_);
    DSGD_MPI_CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, win_));
    DSGD_MPI_CHECK(MPI_Put(&marker, 1, MPI_UINT64_T, next, version_disp, 1, MPI_UINT64_T, win_));
    DSGD_MPI_CHECK(MPI_Win_unlock(next, win_));
    DSGD_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    const uint64_t want = 0x5eed000000000000ULL + static_cast<uint64_t>(prev);
    uint64_t local = 0, read = 0;
    DSGD_MPI_CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank_, 0, win_));
    std::memcpy(&local, mem_ + layout_.version_offset, sizeof(local));
    DSGD_MPI_CHECK(MPI_Get(&read, 1, MPI_UINT64_T, rank_, version_disp, 1, MPI_UINT64_T, win_));
    DSGD_MPI_CHECK(MPI_Win_flush(rank_, win_));
    std::memset(mem_ + layout_.version_offset, 0, sizeof(uint64_t));
    DSGD_MPI_CHECK(MPI_Win_unlock(rank_, win_));
    int ok = local == want && read == want ? 1 : 0;
    DSGD_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    if (!ok)
      DSGD_THROW(Error,
                 "use an MPI whose one-sided operations address the window correctly (MPICH >= 4.1, or another "
                 "netmod), or an algorithm without windows",
                 "MPI one-sided puts do not land in the target's window memory (rank {}: memory {:#x}, MPI_Get "
                 "{:#x}, expected {:#x})",
                 rank_, local, read, want);
  }

  MpiWindowLayout layout_;
  int rank_, size_;
  MPI_Win win_ = MPI_WIN_NULL;
  char* mem_ = nullptr;       // page-aligned window memory
  uint64_t put_version_ = 0;  // the version an epoch's put sends (alive until its flush)
};

}  // namespace

std::unique_ptr<MpiWindow> mpi_window_create_rma(const MpiWindowLayout& layout, int rank, int size) {
  return std::make_unique<RmaWindow>(layout, rank, size);
}

}  // namespace dsgd
