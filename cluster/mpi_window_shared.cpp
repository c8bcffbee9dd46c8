// The one-sided windows in shared memory, for ranks that all run on one host (mpi_window.hpp):
// MPI_Win_allocate_shared, each rank's segment mapped into every rank (MPI_Win_shared_query),
// read and written directly; the ticket lock's words are C++ atomics on the shared memory
// (acquire when the ticket is served, release when the serving word advances: they order the
// epoch's plain copies). No access waits for its target to enter MPI: as with RDMA hardware
// between hosts, and unlike MPICH over UCX on one host, which serves a MPI_Win_create window's
// accesses (atomics, gets and puts alike) only while the target is inside an MPI call, so that
// an adpsgd averaging waited for the passive rank's next layer boundary at each round trip.
#include <mpi.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "cluster/mpi_check.hpp"
#include "cluster/mpi_window.hpp"
#include "core/errors.hpp"

namespace dsgd {

namespace {

static_assert(std::atomic_ref<uint64_t>::is_always_lock_free,
              "the shared windows' ticket lock needs lock-free (address-free) 64-bit atomics");

class SharedWindow final : public MpiWindow {
 public:
  SharedWindow(const MpiWindowLayout& layout, int size) : layout_(layout) {
    MPI_Info info = MPI_INFO_NULL;
    DSGD_MPI_CHECK(MPI_Info_create(&info));
    DSGD_MPI_CHECK(MPI_Info_set(info, "alloc_shared_noncontig", "true"));  // each segment on its own pages
    void* base = nullptr;
    const int rc =
        MPI_Win_allocate_shared(static_cast<MPI_Aint>(layout_.mem_bytes), 1, info, MPI_COMM_WORLD, &base, &win_);
    MPI_Info_free(&info);
    DSGD_MPI_CHECK(rc);
    std::memset(base, 0, layout_.mem_bytes);
    segments_.assign(static_cast<size_t>(size), nullptr);
    for (int r = 0; r < size; ++r) {
      MPI_Aint segment = 0;
      int unit = 0;
      void* at = nullptr;
      DSGD_MPI_CHECK(MPI_Win_shared_query(win_, r, &segment, &unit, &at));
      if (at == nullptr || static_cast<size_t>(segment) < layout_.bytes)
        DSGD_THROW(Error, "set DSGD_MPI_WINDOW=rma to use MPI's one-sided operations instead",
                   "rank {}'s shared window segment is {} bytes at {}, {} needed", r, segment, at, layout_.bytes);
      segments_[static_cast<size_t>(r)] = static_cast<char*>(at);
    }
    DSGD_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));  // every segment zeroed before any access
  }

  void lock(int rank) override {
    const uint64_t ticket = word(rank, MpiWindowLayout::kNextTicket).fetch_add(1, std::memory_order_acq_rel);
    while (word(rank, MpiWindowLayout::kServing).load(std::memory_order_acquire) != ticket) std::this_thread::yield();
  }
  void unlock(int rank) override { word(rank, MpiWindowLayout::kServing).fetch_add(1, std::memory_order_release); }
  void get(BufferView dst, int rank, uint64_t* version) override {
    const char* at = segments_[static_cast<size_t>(rank)];
    std::memcpy(dst.data, at, dst.count * sizeof(float));
    std::memcpy(version, at + layout_.version_offset, sizeof(uint64_t));
  }
  void put(ConstBufferView src, int rank, uint64_t version) override {
    char* at = segments_[static_cast<size_t>(rank)];
    std::memcpy(at, src.data, src.count * sizeof(float));
    std::memcpy(at + layout_.version_offset, &version, sizeof(uint64_t));
  }
  void progress() override {}
  void close() override {
    if (win_ == MPI_WIN_NULL) return;
    DSGD_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));  // nobody reads a segment after it is unmapped
    DSGD_MPI_CHECK(MPI_Win_free(&win_));          // the memory goes with it
    segments_.clear();
  }

 private:
  std::atomic_ref<uint64_t> word(int rank, size_t w) const {
    return std::atomic_ref<uint64_t>(
        *reinterpret_cast<uint64_t*>(segments_[static_cast<size_t>(rank)] + layout_.lock_word(w)));
  }

  MpiWindowLayout layout_;
  MPI_Win win_ = MPI_WIN_NULL;
  std::vector<char*> segments_;  // every rank's segment, mapped here
};

}  // namespace

std::unique_ptr<MpiWindow> mpi_window_create_shared(const MpiWindowLayout& layout, int, int size) {
  return std::make_unique<SharedWindow>(layout, size);
}

}  // namespace dsgd
