// Self-launch through mpiexec (as horovodrun does): `dsgd-bench run --workers 4` outside
// of mpiexec re-executes itself as `mpiexec -n 4 [-f HOSTFILE] dsgd-bench run ...`.
// Under mpiexec, the world communicator is used as it is.
#pragma once

#include <string>

namespace dsgd {

// True when this process was started by an MPI launcher (Hydra/PMI, PMIx, Open MPI).
bool launcher_under_mpiexec();

// The mpiexec program to use: $DSGD_MPIEXEC, else the one found at build time, else "mpiexec".
std::string launcher_mpiexec_path();

// Replaces this process by mpiexec running the same command line on `workers` ranks.
// Throws Error when mpiexec cannot be executed.
[[noreturn]] void launcher_exec_mpiexec(int workers, const std::string& hostfile, int argc, char** argv);

}  // namespace dsgd
