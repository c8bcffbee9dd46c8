// Self-launch through mpiexec (as horovodrun does): `dsgd-bench run --workers 4` outside
// of mpiexec runs `mpiexec -n 4 [-f HOSTFILE] dsgd-bench run ...` and waits for it.
// Under mpiexec, the world communicator is used as it is.
#pragma once

#include <functional>
#include <string>

namespace dsgd {

// Who started this process, from its environment (`env` returns a variable's value or nullptr):
//   mpi_launcher       PMI_RANK / PMI_SIZE (Hydra's mpiexec; Slurm's `srun --mpi=pmi2`), PMIX_RANK
//                      (`srun --mpi=pmix`, prterun), OMPI_COMM_WORLD_SIZE, MPI_LOCALNRANKS, or
//                      DSGD_LAUNCHED (our own self-launch);
//   slurm_without_pmi  none of those, but srun started SLURM_STEP_NUM_TASKS > 1 tasks: every task
//                      would MPI_Init as a world of 1 (or self-launch mpiexec: N × N ranks);
//   none               anything else (a shell, an sbatch script, `srun -n 1`).
enum class LauncherEnv { none, mpi_launcher, slurm_without_pmi };
LauncherEnv launcher_detect(const std::function<const char*(const char*)>& env);

// True when this process was started by an MPI launcher (launcher_detect of the process
// environment is mpi_launcher). Throws InputError for slurm_without_pmi, naming the fix
// (srun --mpi=pmi2 or --mpi=pmix).
bool launcher_under_mpiexec();

// The mpiexec program to use: $DSGD_MPIEXEC, else the one found at build time, else "mpiexec".
std::string launcher_mpiexec_path();

// How a launch ended, for the record of its run (cli/run.cpp marks a run the ranks left
// `running` as `killed`, and names the signal the launcher forwarded).
struct LaunchOutcome {
  int exit_code = 0;         // mpiexec's exit code; 128 + signal when it was killed
  int mpiexec_signal = 0;    // the signal that killed mpiexec itself (0: it exited)
  int forwarded_signal = 0;  // the first SIGINT/SIGTERM/SIGHUP the launcher got and forwarded (0: none)
  std::string launch_id;     // $DSGD_LAUNCH_ID given to the ranks (stored with the run)
  int output_errno = 0;      // the first failed write of the ranks' output to stdout (0: none)
};

// Runs mpiexec with the same command line on `workers` ranks and waits for it, staying
// as a supervisor that forwards SIGINT/SIGTERM/SIGHUP to mpiexec as one Ctrl-C (Hydra
// itself dies on SIGTERM without telling the ranks, which would leave the run marked
// `running`). When mpiexec is killed, its orphaned proxies and ranks (its process group)
// are killed too. The ranks' output (mpiexec's stdout) is copied to this process's stdout
// with every write checked: when one fails (a full disk) the rest is dropped, the run goes
// on, and output_errno says why. Throws Error when mpiexec cannot be executed.
LaunchOutcome launcher_run_mpiexec(int workers, const std::string& hostfile, int argc, char** argv);

// Rank 0 of a self-launch started from a terminal: makes that terminal this process's stdout,
// so its output and its live progress line reach the terminal directly (under mpiexec the
// ranks' stdout is a pipe, which a progress line must not be drawn into). The launcher names
// its stdout's terminal in $DSGD_TERMINAL (the path) and $DSGD_TERMINAL_ID (host and device);
// nothing changes when they are absent, name another host or another device, or stdout is a
// terminal already. Returns whether stdout is a terminal afterwards.
bool launcher_adopt_terminal();

// What ended a launch that left its run unfinished, for the run's error column:
// "a rank was killed by SIGKILL (...)", "stopped by SIGTERM sent to the launcher ...".
std::string launcher_describe_end(const LaunchOutcome& outcome);

// A local launch of more ranks than cores: throws InputError above 4 ranks per core unless
// oversubscribe; returns a warning (empty when ranks fit the cores).
std::string launcher_check_local_ranks(int workers, int cores, bool oversubscribe);

}  // namespace dsgd
