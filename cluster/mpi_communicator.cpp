// The MPI backend of the Communicator (MPICH): the world communicator, with every MPI
// call checked (a failure throws dsgd::Error naming the call, the rank and the host).
// MPI is initialised on first use and finalised at exit.
#include <mpi.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
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
    if (!finalized) MPI_Finalize();
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
  void do_allreduce_sum(float* data, size_t count) override {
    // Large buffers are reduced in chunks below INT_MAX elements.
    while (count > 0) {
      const size_t chunk = count < kMaxChunk ? count : kMaxChunk;
      DSGD_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(chunk), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
      data += chunk;
      count -= chunk;
    }
  }
  void do_broadcast(float* data, size_t count, int root) override {
    while (count > 0) {
      const size_t chunk = count < kMaxChunk ? count : kMaxChunk;
      DSGD_MPI_CHECK(MPI_Bcast(data, static_cast<int>(chunk), MPI_FLOAT, root, MPI_COMM_WORLD));
      data += chunk;
      count -= chunk;
    }
  }
  void do_barrier() override { DSGD_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD)); }
  int do_iallreduce_sum_start(float* data, size_t count) override {
    const int slot = free_slot();
    Slot& sl = slots_[static_cast<size_t>(slot)];
    sl.requests.assign(1, MPI_REQUEST_NULL);
    DSGD_MPI_CHECK(
        MPI_Iallreduce(MPI_IN_PLACE, data, checked_count(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &sl.requests[0]));
    sl.used = true;
    return slot;
  }
  bool do_test(int slot) override {
    Slot& sl = slots_[static_cast<size_t>(slot)];
    int done = 0;
    DSGD_MPI_CHECK(MPI_Testall(static_cast<int>(sl.requests.size()), sl.requests.data(), &done, MPI_STATUSES_IGNORE));
    if (done) sl.used = false;
    return done != 0;
  }
  void do_wait(int slot) override {
    Slot& sl = slots_[static_cast<size_t>(slot)];
    DSGD_MPI_CHECK(MPI_Waitall(static_cast<int>(sl.requests.size()), sl.requests.data(), MPI_STATUSES_IGNORE));
    sl.used = false;
  }
  // Blocks of uneven size (Communicator::shard_begin), so the v-variants with counts
  // computed once per buffer size.
  void do_reduce_scatter_sum(const float* send, float* shard, size_t count) override {
    shard_counts(count);
    DSGD_MPI_CHECK(MPI_Reduce_scatter(send, shard, counts_.data(), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
  }
  void do_allgather(float* data, size_t count) override {
    shard_counts(count);
    DSGD_MPI_CHECK(
        MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, counts_.data(), displs_.data(), MPI_FLOAT, MPI_COMM_WORLD));
  }
  int do_exchange_start(const float* send, size_t send_count, const int* dests, size_t n_dests, float* recv,
                        size_t recv_count, const int* sources, size_t n_sources) override {
    const int slot = free_slot();
    Slot& sl = slots_[static_cast<size_t>(slot)];
    sl.requests.assign(n_dests + n_sources, MPI_REQUEST_NULL);
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

  // One window of count floats followed (8-byte aligned) by a uint64 version per rank.
  void do_window_create(size_t count) override {
    if (win_ != MPI_WIN_NULL) DSGD_THROW(Error, "this is a bug: free the window first", "window already created");
    checked_count(count);
    win_version_offset_ = (count * sizeof(float) + 7) / 8 * 8;
    void* base = nullptr;
    DSGD_MPI_CHECK(MPI_Win_allocate(static_cast<MPI_Aint>(win_version_offset_ + sizeof(uint64_t)), 1, MPI_INFO_NULL,
                                    MPI_COMM_WORLD, &base, &win_));
    DSGD_MPI_CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank_, 0, win_));
    std::memset(base, 0, win_version_offset_ + sizeof(uint64_t));
    DSGD_MPI_CHECK(MPI_Win_unlock(rank_, win_));
    DSGD_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
  }
  void do_window_free() override {
    if (win_ != MPI_WIN_NULL) DSGD_MPI_CHECK(MPI_Win_free(&win_));
  }
  void do_window_lock(int rank) override { DSGD_MPI_CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win_)); }
  void do_window_unlock(int rank) override { DSGD_MPI_CHECK(MPI_Win_unlock(rank, win_)); }
  void do_window_get(float* dst, size_t count, int rank, uint64_t* version) override {
    DSGD_MPI_CHECK(MPI_Get(dst, checked_count(count), MPI_FLOAT, rank, 0, checked_count(count), MPI_FLOAT, win_));
    DSGD_MPI_CHECK(MPI_Get(version, 1, MPI_UINT64_T, rank, static_cast<MPI_Aint>(win_version_offset_), 1,
                           MPI_UINT64_T, win_));
    DSGD_MPI_CHECK(MPI_Win_flush(rank, win_));
  }
  void do_window_put(const float* src, size_t count, int rank, uint64_t version) override {
    put_version_ = version;
    DSGD_MPI_CHECK(MPI_Put(src, checked_count(count), MPI_FLOAT, rank, 0, checked_count(count), MPI_FLOAT, win_));
    DSGD_MPI_CHECK(MPI_Put(&put_version_, 1, MPI_UINT64_T, rank, static_cast<MPI_Aint>(win_version_offset_), 1,
                           MPI_UINT64_T, win_));
    DSGD_MPI_CHECK(MPI_Win_flush(rank, win_));
  }
  // Any MPI call that enters the progress engine serves the pending lock requests of others.
  void do_window_progress() override {
    int flag = 0;
    DSGD_MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
  }

 private:
  MPI_Win win_ = MPI_WIN_NULL;
  size_t win_version_offset_ = 0;
  uint64_t put_version_ = 0;
  static constexpr int kHarnessTag = 7001;
  static constexpr int kExchangeTag = 7002;
  // A non-blocking operation in flight: one request (all-reduce) or one per message.
  struct Slot {
    std::vector<MPI_Request> requests;
    bool used = false;
  };
  int free_slot() {
    for (size_t i = 0; i < slots_.size(); ++i)
      if (!slots_[i].used) return static_cast<int>(i);
    DSGD_THROW(Error, "this is a bug: wait() every request an algorithm launches",
               "more than {} non-blocking operations in flight", slots_.size());
  }
  void shard_counts(size_t count) {
    if (count == counts_for_) return;
    counts_.assign(static_cast<size_t>(size_), 0);
    displs_.assign(static_cast<size_t>(size_), 0);
    for (int r = 0; r < size_; ++r) {
      const size_t b = shard_begin(count, size_, r), e = shard_begin(count, size_, r + 1);
      displs_[static_cast<size_t>(r)] = checked_count(b);
      counts_[static_cast<size_t>(r)] = checked_count(e - b);
    }
    counts_for_ = count;
  }
  static constexpr size_t kMaxChunk = size_t(1) << 30;
  static int checked_count(size_t count) {
    if (count > static_cast<size_t>(INT32_MAX))
      DSGD_THROW(Error, "", "harness message of {} elements exceeds MPI's int count", count);
    return static_cast<int>(count);
  }
  std::vector<Slot> slots_ = std::vector<Slot>(256);
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
