// The MPI backend of the Communicator (MPICH): the world communicator, with every MPI
// call checked (a failure throws dsgd::Error naming the call, the rank and the host).
// MPI is initialised on first use and finalised at exit.
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "cluster/communicator.hpp"
#include "cluster/mpi_check.hpp"
#include "cluster/mpi_window.hpp"
#include "core/errors.hpp"

namespace dsgd {

namespace {

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
    window_path_ = mpi_window_path(local_size_, size_);
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

  // One-sided windows (cluster/mpi_window.hpp): in shared memory when every rank runs on one
  // host, else through MPI RMA (DSGD_MPI_WINDOW picks; checked at construction).
  void do_window_create(size_t count) override {
    if (window_) DSGD_THROW(Error, "this is a bug: free the window first", "window already created");
    window_ = mpi_window_create(window_path_, count, rank_, size_);
  }
  void do_window_free() override {
    if (!window_) return;
    window_->close();
    window_.reset();
  }
  void do_window_lock(int rank) override { window_->lock(rank); }
  void do_window_unlock(int rank) override { window_->unlock(rank); }
  void do_window_get(BufferView dst, int rank, uint64_t* version) override { window_->get(dst, rank, version); }
  void do_window_put(ConstBufferView src, int rank, uint64_t version) override { window_->put(src, rank, version); }
  // Any MPI call that enters the progress engine serves the pending requests of others.
  void do_window_progress() override {
    if (window_) {
      window_->progress();
      return;
    }
    int flag = 0;
    DSGD_MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
  }

 private:
  MpiWindowPath window_path_ = MpiWindowPath::path_rma;  // DSGD_MPI_WINDOW, or where the ranks run
  std::unique_ptr<MpiWindow> window_;                    // the open window

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
  static int checked_count(size_t count) { return mpi_count(count); }
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
