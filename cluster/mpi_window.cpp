// See mpi_window.hpp: the layout, the choice of path and the factory.
#include "cluster/mpi_window.hpp"

#include <mpi.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "cluster/mpi_check.hpp"
#include "core/errors.hpp"

namespace dsgd {

namespace {

// Whether every rank's /dev/shm has room for `total` bytes of shared windows, agreed by all.
bool shared_memory_fits(size_t total, int rank) {
  struct statvfs fs {};
  const double free_bytes =
      statvfs("/dev/shm", &fs) == 0 ? static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize) : -1.0;
  int fits = free_bytes < 0 || free_bytes >= 1.25 * static_cast<double>(total) ? 1 : 0;
  DSGD_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &fits, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
  if (!fits && rank == 0) {
    std::fprintf(stderr,
                 "dsgd-bench: note: /dev/shm has %.0f MB free and the one-sided windows need %.0f MB: they go "
                 "through MPI's one-sided operations instead of shared memory (slower on one host; "
                 "docs/cluster.md)\n",
                 free_bytes / 1e6, static_cast<double>(total) / 1e6);
    std::fflush(stderr);
  }
  return fits != 0;
}

}  // namespace

MpiWindowLayout mpi_window_layout(size_t count) {
  MpiWindowLayout l;
  l.count = count;
  l.version_offset = (count * sizeof(float) + 7) / 8 * 8;
  l.lock_offset = l.version_offset + sizeof(uint64_t);
  l.bytes = l.lock_offset + 2 * sizeof(uint64_t);
  const long page_size = sysconf(_SC_PAGESIZE);
  const size_t page = page_size > 0 ? static_cast<size_t>(page_size) : 4096;
  l.mem_bytes = (l.bytes + page - 1) / page * page;
  return l;
}

MpiWindowPath mpi_window_path(int local_size, int size) {
  const char* env = std::getenv("DSGD_MPI_WINDOW");
  const std::string want = env ? env : "";
  if (want == "rma") return MpiWindowPath::path_rma;
  if (want == "shared" && local_size != size)
    DSGD_THROW(InputError, "unset DSGD_MPI_WINDOW (or set it to rma) when the ranks run on several hosts",
               "DSGD_MPI_WINDOW=shared needs every rank on one host ({} of {} share this one)", local_size, size);
  if (!want.empty() && want != "shared")
    DSGD_THROW(InputError, "set DSGD_MPI_WINDOW to shared or rma, or unset it",
               "DSGD_MPI_WINDOW={} is not a window path", want);
  return local_size == size ? MpiWindowPath::path_shared : MpiWindowPath::path_rma;
}

std::unique_ptr<MpiWindow> mpi_window_create(MpiWindowPath path, size_t count, int rank, int size) {
  mpi_count(count);
  const MpiWindowLayout layout = mpi_window_layout(count);
  if (path == MpiWindowPath::path_shared && shared_memory_fits(layout.mem_bytes * static_cast<size_t>(size), rank))
    return mpi_window_create_shared(layout, rank, size);
  return mpi_window_create_rma(layout, rank, size);
}

}  // namespace dsgd
