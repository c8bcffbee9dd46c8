// The MPI backend's one-sided windows (Communicator::window_*, docs/cluster.md "One-sided
// windows"): one window of `count` floats per rank, followed (8-byte aligned) by a uint64
// version, then two uint64 lock words of a ticket lock (next ticket, now serving), so that a
// rank cannot starve others. Two implementations behind one interface:
//  - shared memory (mpi_window_shared.cpp), when every rank runs on one host: the segments are
//    mapped into every rank and read and written directly; no access waits for its target;
//  - MPI RMA (mpi_window_rma.cpp) otherwise, or when DSGD_MPI_WINDOW=rma.
// Creating and closing a window are collective.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/buffer.hpp"

namespace dsgd {

class MpiWindow {
 public:
  virtual ~MpiWindow() = default;
  // Acquire / release `rank`'s window (the epoch's accesses are complete at release).
  virtual void lock(int rank) = 0;
  virtual void unlock(int rank) = 0;
  // Within an epoch on `rank`: its floats and version, or new ones.
  virtual void get(BufferView dst, int rank, uint64_t* version) = 0;
  virtual void put(ConstBufferView src, int rank, uint64_t version) = 0;
  // Lets others' pending accesses to this rank's window complete (RMA: MPI serves them only
  // inside an MPI call; shared memory needs nothing).
  virtual void progress() = 0;
  // Collective: every rank's accesses are over; the window's memory goes.
  virtual void close() = 0;
};

// The byte layout of one rank's window.
struct MpiWindowLayout {
  size_t count = 0;           // floats
  size_t version_offset = 0;  // the uint64 version after the floats
  size_t lock_offset = 0;     // the two lock words after it
  size_t bytes = 0;           // what is used
  size_t mem_bytes = 0;       // bytes rounded up to whole pages
  static constexpr size_t kNextTicket = 0, kServing = 1;
  size_t lock_word(size_t word) const { return lock_offset + word * sizeof(uint64_t); }
};
MpiWindowLayout mpi_window_layout(size_t count);

enum class MpiWindowPath { path_shared, path_rma };

// The path DSGD_MPI_WINDOW asks for (shared | rma), or, unset, shared when every rank runs on
// one host (local_size == size). Throws InputError on another value, and on shared with ranks
// on several hosts.
MpiWindowPath mpi_window_path(int local_size, int size);

// Collective over MPI_COMM_WORLD: a window of `count` floats on `path`. Shared memory falls
// back to RMA when /dev/shm has less than 1.25x the windows free on some rank (a tmpfs too
// small does not fail the allocation but kills a rank with SIGBUS at first touch); rank 0
// says so on stderr.
std::unique_ptr<MpiWindow> mpi_window_create(MpiWindowPath path, size_t count, int rank, int size);

// The two implementations (collective; mpi_window_create picks).
std::unique_ptr<MpiWindow> mpi_window_create_shared(const MpiWindowLayout& layout, int rank, int size);
std::unique_ptr<MpiWindow> mpi_window_create_rma(const MpiWindowLayout& layout, int rank, int size);

}  // namespace dsgd
