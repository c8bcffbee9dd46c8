// Checked MPI calls for the MPI backend's files (cluster/mpi_communicator.cpp, mpi_window*.cpp):
// a failing call throws dsgd::Error naming the call, the rank and the host.
#pragma once

#include <cstddef>

namespace dsgd {

// Throws Error unless rc is MPI_SUCCESS.
void mpi_check(int rc, const char* call);
#define DSGD_MPI_CHECK(call) ::dsgd::mpi_check((call), #call)

// A harness element count as MPI's int; throws Error above INT32_MAX.
int mpi_count(size_t count);

}  // namespace dsgd
