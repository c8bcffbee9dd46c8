// See mpi_check.hpp.
#include "cluster/mpi_check.hpp"

#include <mpi.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "core/errors.hpp"

namespace dsgd {

namespace {

std::string host_name() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  return host;
}

}  // namespace

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

int mpi_count(size_t count) {
  if (count > static_cast<size_t>(INT32_MAX))
    DSGD_THROW(Error, "", "harness message of {} elements exceeds MPI's int count", count);
  return static_cast<int>(count);
}

}  // namespace dsgd
