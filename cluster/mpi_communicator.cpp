// The MPI backend of the Communicator (MPICH): the world communicator, with every MPI
// call checked (a failure throws dsgd::Error naming the call, the rank and the host).
// MPI is initialised on first use and finalised at exit.
#include <mpi.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "cluster/communicator.hpp"
#include "core/errors.hpp"

namespace dsgd {

namespace {

std::string host_name() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  return host;
}

void mpi_check(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  DSGD_THROW(Error, "check the MPI installation and that all ranks run the same command",
             "{} failed on rank {} ({}): {}", call, rank, host_name(), msg);
}

#define DSGD_MPI_CHECK(call) mpi_check((call), #call)

// How the one-sided windows are reached (do_window_create). DSGD_MPI_WINDOW=shared|rma picks
// one (the tests run both); unset, ranks that all share one host use shared memory.
enum class WindowPath { path_shared, path_rma };

WindowPath window_path(int local_size, int size) {
  const char* env = std::getenv("DSGD_MPI_WINDOW");
  const std::string want = env ? env : "";
  if (want == "rma") return WindowPath::path_rma;
  if (want == "shared" && local_size != size)
    DSGD_THROW(InputError, "unset DSGD_MPI_WINDOW (or set it to rma) when the ranks run on several hosts",
               "DSGD_MPI_WINDOW=shared needs every rank on one host ({} of {} share this one)", local_size, size);
  if (!want.empty() && want != "shared")
    DSGD_THROW(InputError, "set DSGD_MPI_WINDOW to shared or rma, or unset it",
               "DSGD_MPI_WINDOW={} is not a window path", want);
  return local_size == size ? WindowPath::path_shared : WindowPath::path_rma;
}

static_assert(std::atomic_ref<uint64_t>::is_always_lock_free,
              "the shared windows' ticket lock needs lock-free (address-free) 64-bit atomics");

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(int* argc, char*** argv) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) DSGD_MPI_CHECK(MPI_Init(argc, argv));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    DSGD_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
    DSGD_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size_));
    MPI_Comm local;
    DSGD_MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local));
    DSGD_MPI_CHECK(MPI_Comm_size(local, &local_size_));
    MPI_Comm_free(&local);
    win_path_want_ = window_path(local_size_, size_);
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
    int len = 0;
    MPI_Get_library_version(version, &len);
    version_.assign(version, static_cast<size_t>(len));
    while (!version_.empty() && (version_.back() == '\n' || version_.back() == ' ')) version_.pop_back();
    // Keep the first line only: MPICH prints its configure options after it.
    auto nl = version_.find('\n');
    if (nl != std::string::npos) version_.resize(nl);
    for (auto& ch : version_)
      if (ch == '\t') ch = ' ';
  }
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) {
      hier_free();
      // Enter MPI_Finalize together: with MPICH 4.0.2 + UCX 1.13 over TCP (ranks on different
      // hosts), a rank that reaches it first closes its endpoints and blocks in the PMI barrier,
      // and a later rank's endpoint-close flush, which needs that peer's progress, can wait for
      // ever (scripts/netns-cluster.sh, docs/cluster.md). A failed rank aborts instead of
      // getting here, so the barrier does not wait for a dead peer.
      if (size_ > 1) MPI_Barrier(MPI_COMM_WORLD);
      MPI_Finalize();
    }
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend_name() const override { return "mpi"; }
  std::string library_version() const override { return version_; }
  int ranks_on_this_host() const override { return local_size_; }

  void untimed_allreduce_sum(double* data, size_t count) override {
    DSGD_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, checked_count(count), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
  }
  void untimed_allreduce_sum(float* data, size_t count) override {
    DSGD_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, checked_count(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
  }
  void untimed_allreduce_max(double* data, size_t count) override {
    DSGD_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, checked_count(count), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
  }
  void untimed_gather(const double* send, size_t count, double* recv, int root) override {
    DSGD_MPI_CHECK(MPI_Gather(send, checked_count(count), MPI_DOUBLE, recv, checked_count(count), MPI_DOUBLE, root,
                              MPI_COMM_WORLD));
  }
  void untimed_broadcast(double* data, size_t count, int root) override {
    DSGD_MPI_CHECK(MPI_Bcast(data, checked_count(count), MPI_DOUBLE, root, MPI_COMM_WORLD));
  }
  void untimed_send(const double* data, size_t count, int peer) override {
    DSGD_MPI_CHECK(MPI_Send(data, checked_count(count), MPI_DOUBLE, peer, kHarnessTag, MPI_COMM_WORLD));
  }
  void untimed_recv(double* data, size_t count, int peer) override {
    DSGD_MPI_CHECK(
        MPI_Recv(data, checked_count(count), MPI_DOUBLE, peer, kHarnessTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  }
  void untimed_barrier() override { DSGD_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD)); }
  [[noreturn]] void abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);
  }

 protected:
  void do_allreduce_sum(BufferView view) override {
    float* data = view.f32();
    size_t count = view.count;
    if (hier_.groups > 1) {
      const int slot = hier_start(data, count);
      do_wait(slot);
      return;
    }
    // Large buffers are reduced in chunks below INT_MAX elements.
    while (count > 0) {
      const size_t chunk = count < kMaxChunk ? count : kMaxChunk;
      DSGD_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(chunk), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
      data += chunk;
      count -= chunk;
    }
  }
  void do_broadcast(BufferView view, int root) override {
    float* data = view.f32();
    size_t count = view.count;
    while (count > 0) {
      const size_t chunk = count < kMaxChunk ? count : kMaxChunk;
      DSGD_MPI_CHECK(MPI_Bcast(data, static_cast<int>(chunk), MPI_FLOAT, root, MPI_COMM_WORLD));
      data += chunk;
      count -= chunk;
    }
  }
  void do_barrier() override { DSGD_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD)); }
  int do_iallreduce_sum_start(BufferView view) override {
    float* data = view.f32();
    const size_t count = view.count;
    if (hier_.groups > 1) return hier_start(data, count);
    const int slot = free_slot();
    Slot& sl = slots_[static_cast<size_t>(slot)];
    sl.requests.assign(1, MPI_REQUEST_NULL);
    sl.hier_phase = 0;
    DSGD_MPI_CHECK(
        MPI_Iallreduce(MPI_IN_PLACE, data, checked_count(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &sl.requests[0]));
    sl.used = true;
    return slot;
  }
  bool do_test(int slot) override {
    Slot& sl = slots_[static_cast<size_t>(slot)];
    if (sl.hier_phase > 0) return hier_test(slot);
    int done = 0;
    DSGD_MPI_CHECK(MPI_Testall(static_cast<int>(sl.requests.size()), sl.requests.data(), &done, MPI_STATUSES_IGNORE));
    if (done) sl.used = false;
    return done != 0;
  }
  void do_wait(int slot) override {
    Slot& sl = slots_[static_cast<size_t>(slot)];
    if (sl.hier_phase > 0) {
      // Polls: its next phase may have to wait for an earlier operation's (hier_advance).
      while (!hier_test(slot)) {
      }
      return;
    }
    DSGD_MPI_CHECK(MPI_Waitall(static_cast<int>(sl.requests.size()), sl.requests.data(), MPI_STATUSES_IGNORE));
    sl.used = false;
  }
  bool do_set_hierarchy(int groups) override {
    if (groups == hier_.groups) return true;
    hier_free();
    if (groups <= 1) return true;
    if (size_ % groups != 0)
      DSGD_THROW(Error, "use a hier:GxW topology with G·W equal to the number of ranks",
                 "{} groups do not divide {} ranks", groups, size_);
    const int width = size_ / groups;
    // intra: the W ranks of this rank's group; inter: the G ranks at the same index in their groups.
    DSGD_MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, rank_ / width, rank_, &hier_.intra));
    DSGD_MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, rank_ % width, rank_, &hier_.inter));
    MPI_Comm_set_errhandler(hier_.intra, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(hier_.inter, MPI_ERRORS_RETURN);
    DSGD_MPI_CHECK(MPI_Comm_dup(hier_.intra, &hier_.intra_gather));
    hier_.groups = groups;
    hier_.width = width;
    hier_.index = rank_ % width;
    return true;
  }
  // Blocks of uneven size (Communicator::shard_begin), so the v-variants with counts
  // computed once per buffer size.
  void do_reduce_scatter_sum(ConstBufferView send, BufferView shard) override {
    shard_counts(send.count);
    DSGD_MPI_CHECK(MPI_Reduce_scatter(send.data, shard.data, counts_.data(), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
  }
  void do_allgather(BufferView data) override {
    shard_counts(data.count);
    DSGD_MPI_CHECK(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data.data, counts_.data(), displs_.data(),
                                  MPI_FLOAT, MPI_COMM_WORLD));
  }
  // Flat (also on hier topologies, like do_allgather); the slot keeps the block counts
  // until the operation completes.
  int do_iallgather_start(BufferView data) override {
    checked_count(data.count);
    const int slot = free_slot();
    Slot& sl = slots_[static_cast<size_t>(slot)];
    block_counts(data.count, size_, sl.counts, sl.displs);
    sl.requests.assign(1, MPI_REQUEST_NULL);
    sl.hier_phase = 0;
    DSGD_MPI_CHECK(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data.data, sl.counts.data(), sl.displs.data(),
                                   MPI_FLOAT, MPI_COMM_WORLD, &sl.requests[0]));
    sl.used = true;
    return slot;
  }
  int do_exchange_start(ConstBufferView send_view, const int* dests, size_t n_dests, BufferView recv_view,
                        size_t recv_count, const int* sources, size_t n_sources) override {
    const float* send = send_view.f32();
    const size_t send_count = send_view.count;
    float* recv = recv_view.f32();
    const int slot = free_slot();
    Slot& sl = slots_[static_cast<size_t>(slot)];
    sl.requests.assign(n_dests + n_sources, MPI_REQUEST_NULL);
    sl.hier_phase = 0;
    // Receives first, so that matching sends find them posted.
    for (size_t k = 0; k < n_sources; ++k)
      DSGD_MPI_CHECK(MPI_Irecv(recv + k * recv_count, checked_count(recv_count), MPI_FLOAT, sources[k], kExchangeTag,
                               MPI_COMM_WORLD, &sl.requests[k]));
    for (size_t k = 0; k < n_dests; ++k)
      DSGD_MPI_CHECK(MPI_Isend(send, checked_count(send_count), MPI_FLOAT, dests[k], kExchangeTag, MPI_COMM_WORLD,
                               &sl.requests[n_sources + k]));
    sl.used = true;
    return slot;
  }

  // One window of count floats followed (8-byte aligned) by a uint64 version per rank, then
  // two uint64 lock words (a ticket lock: next ticket, now serving). Two paths (WindowPath):
  //
  // Shared memory, when every rank runs on one host: MPI_Win_allocate_shared, each rank's
  // segment mapped into every rank (MPI_Win_shared_query), read and written directly; the
  // lock words are C++ atomics on the shared memory (acquire at lock, release at unlock order
  // the epoch's plain copies). No access waits for its target to enter MPI: as with RDMA
  // hardware between hosts, and unlike MPICH over UCX on one host, which serves a
  // MPI_Win_create window's accesses (atomics, gets and puts alike) only while the target is
  // inside an MPI call, so that an adpsgd averaging waited for the passive rank's next layer
  // boundary at each of its round trips.
  //
  // MPI RMA otherwise, in page-aligned memory this backend allocates (MPI_Win_create), never
  // MPI_Win_allocate's: MPICH 4.0.2's ch4:ucx netmod with UCX >= 1.13 replaces a window's base
  // by the start of its page (fixed upstream in MPICH PR 6140, after 4.0.2), so on memory that
  // does not start a page, remote puts land before the window, over other heap data, while
  // local accesses use the real base: lost updates and torn reads that look like a lock that
  // does not exclude (docs/cluster.md, tests/mpi/test_window_lock.cpp). window_check_addressing
  // verifies at creation that every rank's puts land in the target's memory.
  // Mutual exclusion does not rely on MPI_Win_lock(EXCLUSIVE): whether an MPI excludes
  // other ranks' exclusive locks from a rank's lock on its own window is the implementation's
  // business (it was reported not to on MPICH 4.0.2 over UCX). Instead, after the addressing
  // check every rank opens one shared epoch on every window (MPI_Win_lock_all) for the
  // window's life, and window_lock / window_unlock are MPI atomics (MPI_Fetch_and_op) on the
  // target's lock words, each followed by MPI_Win_flush. Atomic operations on one location
  // with one datatype are atomic with respect to each other whoever the origin is, the target
  // itself included (MPI 4.0 section 12.7), and the flushes order the epoch's data accesses
  // between acquire and release.
  void do_window_create(size_t count) override {
    if (win_ != MPI_WIN_NULL) DSGD_THROW(Error, "this is a bug: free the window first", "window already created");
    checked_count(count);
    win_version_offset_ = (count * sizeof(float) + 7) / 8 * 8;
    win_lock_offset_ = win_version_offset_ + sizeof(uint64_t);
    const size_t bytes = win_lock_offset_ + 2 * sizeof(uint64_t);
    const long page_size = sysconf(_SC_PAGESIZE);
    const size_t page = page_size > 0 ? static_cast<size_t>(page_size) : 4096;
    win_mem_bytes_ = (bytes + page - 1) / page * page;
    win_path_ = win_path_want_;
    if (win_path_ == WindowPath::path_shared && !shared_memory_fits(win_mem_bytes_ * static_cast<size_t>(size_)))
      win_path_ = WindowPath::path_rma;
    if (win_path_ == WindowPath::path_shared) {
      MPI_Info info = MPI_INFO_NULL;
      DSGD_MPI_CHECK(MPI_Info_create(&info));
      DSGD_MPI_CHECK(MPI_Info_set(info, "alloc_shared_noncontig", "true"));  // each segment on its own pages
      void* base = nullptr;
      const int rc =
          MPI_Win_allocate_shared(static_cast<MPI_Aint>(win_mem_bytes_), 1, info, MPI_COMM_WORLD, &base, &win_);
      MPI_Info_free(&info);
      DSGD_MPI_CHECK(rc);
      std::memset(base, 0, win_mem_bytes_);
      win_shared_.assign(static_cast<size_t>(size_), nullptr);
      for (int r = 0; r < size_; ++r) {
        MPI_Aint segment = 0;
        int unit = 0;
        void* at = nullptr;
        DSGD_MPI_CHECK(MPI_Win_shared_query(win_, r, &segment, &unit, &at));
        if (at == nullptr || static_cast<size_t>(segment) < bytes)
          DSGD_THROW(Error, "set DSGD_MPI_WINDOW=rma to use MPI's one-sided operations instead",
                     "rank {}'s shared window segment is {} bytes at {}, {} needed", r, segment, at, bytes);
        win_shared_[static_cast<size_t>(r)] = static_cast<char*>(at);
      }
      DSGD_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));  // every segment zeroed before any access
      return;
    }
    void* base = std::aligned_alloc(page, win_mem_bytes_);
    if (base == nullptr)
      DSGD_THROW(Error, "use a smaller model or fewer shards", "cannot allocate a {}-byte window", win_mem_bytes_);
    std::memset(base, 0, win_mem_bytes_);
    win_mem_ = static_cast<char*>(base);
    DSGD_MPI_CHECK(MPI_Win_create(base, static_cast<MPI_Aint>(bytes), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win_));
    window_check_addressing();
    DSGD_MPI_CHECK(MPI_Win_lock_all(0, win_));
  }
  void do_window_free() override {
    if (win_ != MPI_WIN_NULL) {
      if (win_path_ == WindowPath::path_shared) {
        DSGD_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));  // nobody reads a segment after it is unmapped
      } else {
        DSGD_MPI_CHECK(MPI_Win_unlock_all(win_));
      }
      DSGD_MPI_CHECK(MPI_Win_free(&win_));  // a shared window's memory goes with it
    }
    std::free(win_mem_);
    win_mem_ = nullptr;
    win_shared_.clear();
  }
  // A ticket lock, so that a rank cannot starve others: a compare-and-swap spin lock let a
  // passive adpsgd rank, whose own-window attempts are local while a remote attempt is served
  // only when it enters MPI, take its lock again and again (an active's averagings then all
  // landed after the passive's last step). Acquire: take a ticket (fetch-and-add 1 on the next
  // word), then read the serving word (atomic no-op fetch) until it equals the ticket,
  // driving progress between reads so that others' atomics on this rank's window complete.
  void do_window_lock(int rank) override {
    if (win_path_ == WindowPath::path_shared) {
      const uint64_t ticket = shared_word(rank, kNextTicket).fetch_add(1, std::memory_order_acq_rel);
      while (shared_word(rank, kServing).load(std::memory_order_acquire) != ticket) std::this_thread::yield();
      return;
    }
    const uint64_t one = 1;
    uint64_t ticket = 0, serving = 0;
    DSGD_MPI_CHECK(MPI_Fetch_and_op(&one, &ticket, MPI_UINT64_T, rank, lock_disp(kNextTicket), MPI_SUM, win_));
    DSGD_MPI_CHECK(MPI_Win_flush(rank, win_));
    for (;;) {
      DSGD_MPI_CHECK(MPI_Fetch_and_op(nullptr, &serving, MPI_UINT64_T, rank, lock_disp(kServing), MPI_NO_OP, win_));
      DSGD_MPI_CHECK(MPI_Win_flush(rank, win_));
      if (serving == ticket) return;
      do_window_progress();
      std::this_thread::yield();
    }
  }
  // Release: the epoch's data accesses complete (flush), then the serving word advances.
  void do_window_unlock(int rank) override {
    if (win_path_ == WindowPath::path_shared) {
      shared_word(rank, kServing).fetch_add(1, std::memory_order_release);
      return;
    }
    const uint64_t one = 1;
    uint64_t before = 0;
    DSGD_MPI_CHECK(MPI_Win_flush(rank, win_));
    DSGD_MPI_CHECK(MPI_Fetch_and_op(&one, &before, MPI_UINT64_T, rank, lock_disp(kServing), MPI_SUM, win_));
    DSGD_MPI_CHECK(MPI_Win_flush(rank, win_));
  }
  void do_window_get(BufferView dst, int rank, uint64_t* version) override {
    const int count = checked_count(dst.count);
    if (win_path_ == WindowPath::path_shared) {
      const char* at = win_shared_[static_cast<size_t>(rank)];
      std::memcpy(dst.data, at, dst.count * sizeof(float));
      std::memcpy(version, at + win_version_offset_, sizeof(uint64_t));
      return;
    }
    DSGD_MPI_CHECK(MPI_Get(dst.data, count, MPI_FLOAT, rank, 0, count, MPI_FLOAT, win_));
    DSGD_MPI_CHECK(
        MPI_Get(version, 1, MPI_UINT64_T, rank, static_cast<MPI_Aint>(win_version_offset_), 1, MPI_UINT64_T, win_));
    DSGD_MPI_CHECK(MPI_Win_flush(rank, win_));
  }
  void do_window_put(ConstBufferView src, int rank, uint64_t version) override {
    const int count = checked_count(src.count);
    if (win_path_ == WindowPath::path_shared) {
      char* at = win_shared_[static_cast<size_t>(rank)];
      std::memcpy(at, src.data, src.count * sizeof(float));
      std::memcpy(at + win_version_offset_, &version, sizeof(uint64_t));
      return;
    }
    put_version_ = version;
    DSGD_MPI_CHECK(MPI_Put(src.data, count, MPI_FLOAT, rank, 0, count, MPI_FLOAT, win_));
    DSGD_MPI_CHECK(MPI_Put(&put_version_, 1, MPI_UINT64_T, rank, static_cast<MPI_Aint>(win_version_offset_), 1,
                           MPI_UINT64_T, win_));
    DSGD_MPI_CHECK(MPI_Win_flush(rank, win_));
  }
  // Any MPI call that enters the progress engine serves the pending lock requests of others;
  // shared windows need none.
  void do_window_progress() override {
    if (win_path_ == WindowPath::path_shared && win_ != MPI_WIN_NULL) return;
    int flag = 0;
    DSGD_MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
    if (win_ != MPI_WIN_NULL) DSGD_MPI_CHECK(MPI_Win_flush(rank_, win_));
  }

 private:
  // Whether every rank's /dev/shm has room for the shared windows (`total` bytes), agreed by
  // all ranks. A tmpfs too small for them (a container's default 64 MB) would not fail the
  // allocation but kill a rank with SIGBUS when it touches a page: then the windows take the
  // RMA path, and rank 0 says so.
  bool shared_memory_fits(size_t total) {
    struct statvfs fs {};
    const double free_bytes =
        statvfs("/dev/shm", &fs) == 0 ? static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize) : -1.0;
    int fits = free_bytes < 0 || free_bytes >= 1.25 * static_cast<double>(total) ? 1 : 0;
    DSGD_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &fits, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    if (!fits && rank_ == 0) {
      std::fprintf(stderr,
                   "dsgd-bench: note: /dev/shm has %.0f MB free and the one-sided windows need %.0f MB: they go "
                   "through MPI's one-sided operations instead of shared memory (slower on one host; "
                   "docs/cluster.md)\n",
                   free_bytes / 1e6, static_cast<double>(total) / 1e6);
      std::fflush(stderr);
    }
    return fits != 0;
  }

  // Each rank puts a marker into the next rank's version word; each then checks, under a
  // lock on its own window, that the marker is in its memory and reads back through MPI;
  // the version words are zero again afterwards. Collective, untimed.
  void window_check_addressing() {
    const int next = (rank_ + 1) % size_, prev = (rank_ + size_ - 1) % size_;
    const auto version_disp = static_cast<MPI_Aint>(win_version_offset_);
    uint64_t marker = 0x5eed000000000000ULL + static_cast<uint64_t>(rank_);
    DSGD_MPI_CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, win_));
    DSGD_MPI_CHECK(MPI_Put(&marker, 1, MPI_UINT64_T, next, version_disp, 1, MPI_UINT64_T, win_));
    DSGD_MPI_CHECK(MPI_Win_unlock(next, win_));
    DSGD_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    const uint64_t want = 0x5eed000000000000ULL + static_cast<uint64_t>(prev);
    uint64_t local = 0, read = 0;
    DSGD_MPI_CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank_, 0, win_));
    std::memcpy(&local, win_mem_ + win_version_offset_, sizeof(local));
    DSGD_MPI_CHECK(MPI_Get(&read, 1, MPI_UINT64_T, rank_, version_disp, 1, MPI_UINT64_T, win_));
    DSGD_MPI_CHECK(MPI_Win_flush(rank_, win_));
    std::memset(win_mem_ + win_version_offset_, 0, sizeof(uint64_t));
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

  MPI_Win win_ = MPI_WIN_NULL;
  char* win_mem_ = nullptr;  // page-aligned window memory (do_window_create)
  size_t win_mem_bytes_ = 0;
  size_t win_version_offset_ = 0;
  size_t win_lock_offset_ = 0;  // two uint64 lock words after the version (do_window_lock)
  static constexpr size_t kNextTicket = 0, kServing = 1;
  MPI_Aint lock_disp(size_t word) const { return static_cast<MPI_Aint>(win_lock_offset_ + word * sizeof(uint64_t)); }
  uint64_t put_version_ = 0;
  WindowPath win_path_want_ = WindowPath::path_rma;  // DSGD_MPI_WINDOW, or where the ranks run
  WindowPath win_path_ = WindowPath::path_rma;       // the open window's
  std::vector<char*> win_shared_;                    // shared path: every rank's segment, mapped here
  std::atomic_ref<uint64_t> shared_word(int rank, size_t word) const {
    return std::atomic_ref<uint64_t>(
        *reinterpret_cast<uint64_t*>(win_shared_[static_cast<size_t>(rank)] + win_lock_offset_ + word * 8));
  }
  static constexpr int kHarnessTag = 7001;
  static constexpr int kExchangeTag = 7002;
  // A non-blocking operation in flight: one request (all-reduce) or one per message.
  // A two-level all-reduce (hier_start) runs three phases on the same slot: hier_phase
  // 1 = intra-group reduce-scatter into `shard`, 2 = all-reduce of the shard among the
  // groups, 3 = intra-group all-gather back into data; 0 = not a two-level operation.
  struct Slot {
    std::vector<MPI_Request> requests;
    bool used = false;
    int hier_phase = 0;
    bool hier_finished = false;  // phase 3 completed
    float* data = nullptr;
    std::vector<float> shard;         // this rank's block of the buffer (grown, never shrunk)
    std::vector<int> counts, displs;  // the group's blocks of the buffer
  };
  // The sub-communicators of set_hierarchy. MPI requires the non-blocking collectives on a
  // communicator to start in the same order on every rank. Phase 1 starts at launch (program
  // order, the same everywhere); phases 2 and 3 start when the previous phase completes,
  // which differs between ranks, so (a) op k starts phase p only after op k−1 started it
  // (hier_advance, launch order kept in hier_queue_) and (b) phase 3 has its own duplicate
  // of the group communicator, so it never interleaves with later launches' phase 1.
  struct Hierarchy {
    int groups = 1, width = 1, index = 0;
    MPI_Comm intra = MPI_COMM_NULL, intra_gather = MPI_COMM_NULL, inter = MPI_COMM_NULL;
  };
  void hier_free() {
    if (hier_.intra != MPI_COMM_NULL) MPI_Comm_free(&hier_.intra);
    if (hier_.intra_gather != MPI_COMM_NULL) MPI_Comm_free(&hier_.intra_gather);
    if (hier_.inter != MPI_COMM_NULL) MPI_Comm_free(&hier_.inter);
    hier_ = Hierarchy{};
    hier_queue_.clear();
  }
  // Starts phase 1 of a two-level all-reduce of data[0..count) (sum, in place).
  int hier_start(float* data, size_t count) {
    checked_count(count);
    const int slot = free_slot();
    Slot& sl = slots_[static_cast<size_t>(slot)];
    const int w = hier_.width;
    block_counts(count, w, sl.counts, sl.displs);
    const size_t mine = static_cast<size_t>(sl.counts[static_cast<size_t>(hier_.index)]);
    if (sl.shard.size() < mine) sl.shard.resize(mine);
    sl.data = data;
    sl.hier_phase = 1;
    sl.hier_finished = false;
    sl.requests.assign(1, MPI_REQUEST_NULL);
    DSGD_MPI_CHECK(
        MPI_Ireduce_scatter(data, sl.shard.data(), sl.counts.data(), MPI_FLOAT, MPI_SUM, hier_.intra, &sl.requests[0]));
    sl.used = true;
    hier_queue_.push_back(slot);
    return slot;
  }
  // Drives every two-level operation in launch order: a completed phase starts the next one
  // once the operation launched before it has started that phase (or finished).
  void hier_advance() {
    int before = 4;  // the phase started by the previous operation in the queue (4: none)
    for (int slot : hier_queue_) {
      Slot& sl = slots_[static_cast<size_t>(slot)];
      while (!sl.hier_finished) {
        int done = 0;
        DSGD_MPI_CHECK(
            MPI_Testall(static_cast<int>(sl.requests.size()), sl.requests.data(), &done, MPI_STATUSES_IGNORE));
        if (!done) break;
        if (sl.hier_phase == 3) {
          sl.hier_finished = true;
          break;
        }
        if (before <= sl.hier_phase) break;  // the earlier operation has not started the next phase yet
        const int mine = sl.counts[static_cast<size_t>(hier_.index)];
        sl.requests.assign(1, MPI_REQUEST_NULL);
        if (sl.hier_phase == 1) {
          DSGD_MPI_CHECK(
              MPI_Iallreduce(MPI_IN_PLACE, sl.shard.data(), mine, MPI_FLOAT, MPI_SUM, hier_.inter, &sl.requests[0]));
        } else {
          DSGD_MPI_CHECK(MPI_Iallgatherv(sl.shard.data(), mine, MPI_FLOAT, sl.data, sl.counts.data(), sl.displs.data(),
                                         MPI_FLOAT, hier_.intra_gather, &sl.requests[0]));
        }
        ++sl.hier_phase;
      }
      before = sl.hier_finished ? 4 : sl.hier_phase;
    }
  }
  bool hier_test(int slot) {
    hier_advance();
    Slot& sl = slots_[static_cast<size_t>(slot)];
    if (!sl.hier_finished) return false;
    hier_queue_.erase(std::find(hier_queue_.begin(), hier_queue_.end(), slot));
    sl.hier_phase = 0;
    sl.used = false;
    return true;
  }
  int free_slot() {
    for (size_t i = 0; i < slots_.size(); ++i)
      if (!slots_[i].used) return static_cast<int>(i);
    DSGD_THROW(Error, "this is a bug: wait() every request an algorithm launches",
               "more than {} non-blocking operations in flight", slots_.size());
  }
  // MPI's v-collective counts and displacements of the n blocks of a `count`-float buffer.
  static void block_counts(size_t count, int n, std::vector<int>& counts, std::vector<int>& displs) {
    counts.assign(static_cast<size_t>(n), 0);
    displs.assign(static_cast<size_t>(n), 0);
    for (int r = 0; r < n; ++r) {
      const size_t b = shard_begin(count, n, r), e = shard_begin(count, n, r + 1);
      displs[static_cast<size_t>(r)] = checked_count(b);
      counts[static_cast<size_t>(r)] = checked_count(e - b);
    }
  }
  void shard_counts(size_t count) {
    if (count == counts_for_) return;
    block_counts(count, size_, counts_, displs_);
    counts_for_ = count;
  }
  static constexpr size_t kMaxChunk = size_t(1) << 30;
  static int checked_count(size_t count) {
    if (count > static_cast<size_t>(INT32_MAX))
      DSGD_THROW(Error, "", "harness message of {} elements exceeds MPI's int count", count);
    return static_cast<int>(count);
  }
  std::vector<Slot> slots_ = std::vector<Slot>(256);
  Hierarchy hier_;
  std::vector<int> hier_queue_;       // slots of the two-level operations in flight, in launch order
  std::vector<int> counts_, displs_;  // per-rank blocks of the last sharded buffer size
  size_t counts_for_ = SIZE_MAX;
  int rank_ = 0;
  int size_ = 1;
  int local_size_ = 1;
  std::string version_;
};

}  // namespace

std::unique_ptr<Communicator> communicator_create_world(int* argc, char*** argv) {
  return std::make_unique<MpiCommunicator>(argc, argv);
}

}  // namespace dsgd
