// Self-launch through mpiexec (as horovodrun does): `dsgd-bench run --workers 4` outside
// of mpiexec runs `mpiexec -n 4 [-f HOSTFILE] dsgd-bench run ...` and waits for it.
// Under mpiexec, the world communicator is used as it is.
#pragma once

#include <string>

namespace dsgd {

// True when this process was started by an MPI launcher (Hydra/PMI, PMIx, Open MPI).
bool launcher_under_mpiexec();

// The mpiexec program to use: $DSGD_MPIEXEC, else the one found at build time, else "mpiexec".
std::string launcher_mpiexec_path();

// Runs mpiexec with the same command line on `workers` ranks and waits for it, staying
// as a supervisor that forwards SIGINT/SIGTERM/SIGHUP to mpiexec as one Ctrl-C (Hydra
// itself dies on SIGTERM without telling the ranks, which would leave the run marked
// `running`). Returns mpiexec's exit code (128 + signal when it was killed). Throws
// Error when mpiexec cannot be executed.
int launcher_run_mpiexec(int workers, const std::string& hostfile, int argc, char** argv);

}  // namespace dsgd
