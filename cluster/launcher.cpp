// See launcher.hpp. The command line given to the ranks is the original one, unchanged,
// so they parse exactly what the user typed; DSGD_LAUNCHED=1 prevents a second launch.
#include "cluster/launcher.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/errors.hpp"

namespace dsgd {

LauncherEnv launcher_detect(const std::function<const char*(const char*)>& env) {
  for (const char* var :
       {"PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE", "MPI_LOCALNRANKS", "DSGD_LAUNCHED"}) {
    if (env(var)) return LauncherEnv::mpi_launcher;
  }
  const char* tasks = env("SLURM_STEP_NUM_TASKS");
  if (tasks && std::atol(tasks) > 1) return LauncherEnv::slurm_without_pmi;
  return LauncherEnv::none;
}

bool launcher_under_mpiexec() {
  const LauncherEnv where = launcher_detect([](const char* var) { return std::getenv(var); });
  if (where == LauncherEnv::slurm_without_pmi)
    DSGD_THROW(InputError,
               "start the tasks with a PMI: srun --mpi=pmi2 (MPICH) or --mpi=pmix; or run one task "
               "(srun -n 1 dsgd-bench run --workers N) and let mpiexec place the ranks (docs/cluster.md)",
               "srun started {} tasks without a PMI (no PMI_RANK or PMIX_RANK): each would be an MPI world of 1",
               std::getenv("SLURM_STEP_NUM_TASKS"));
  return where == LauncherEnv::mpi_launcher;
}

std::string launcher_mpiexec_path() {
  if (const char* env = std::getenv("DSGD_MPIEXEC"); env && *env) return env;
#ifdef DSGD_MPIEXEC_PATH
  if (std::strlen(DSGD_MPIEXEC_PATH) > 0 && std::strstr(DSGD_MPIEXEC_PATH, "NOTFOUND") == nullptr)
    return DSGD_MPIEXEC_PATH;
#endif
  return "mpiexec";
}

namespace {

volatile sig_atomic_t g_child_pid = 0;
volatile sig_atomic_t g_forwarded = 0;

// The launcher's own signal handler: forward the first SIGINT/SIGTERM/SIGHUP to mpiexec
// as one Ctrl-C (Hydra then forwards SIGINT to every rank; rank 0 marks the run
// interrupted); a second signal kills mpiexec.
void forward_signal(int) {
  if (g_child_pid <= 0) return;
  kill(static_cast<pid_t>(g_child_pid), g_forwarded ? SIGKILL : SIGINT);
  g_forwarded = 1;
}

}  // namespace

int launcher_run_mpiexec(int workers, const std::string& hostfile, int argc, char** argv) {
  char self[4096] = {0};
  ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (len <= 0) DSGD_THROW(Error, "", "cannot resolve the path of this program: {}", std::strerror(errno));
  self[len] = '\0';

  const std::string mpiexec = launcher_mpiexec_path();
  const std::string n = std::to_string(workers);
  std::vector<std::string> args = {mpiexec, "-n", n};
  if (!hostfile.empty()) {
    args.push_back("-f");
    args.push_back(hostfile);
  }
  args.push_back(self);
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  std::vector<char*> cargs;
  for (auto& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);

  fflush(stdout);
  fflush(stderr);
  int ready[2];
  if (pipe2(ready, O_CLOEXEC) != 0) DSGD_THROW(Error, "", "pipe failed: {}", std::strerror(errno));
  const pid_t pid = fork();
  if (pid < 0) DSGD_THROW(Error, "", "fork failed: {}", std::strerror(errno));
  if (pid == 0) {
    // Own process group: a terminal Ctrl-C reaches mpiexec only through the launcher
    // (once), not twice (Hydra aborts hard on a second Ctrl-C).
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGINT);
    setenv("DSGD_LAUNCHED", "1", 1);
    // Idle BLAS/OpenMP threads sleep instead of spinning (read when the libraries load, so
    // only settable here): with --threads > 1 a spinning OpenMP pool (oneDNN, layer loops)
    // and OpenBLAS's own pool steal each other's cores (docs/workloads.md). A value the user
    // set is kept.
    setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
    setenv("OPENBLAS_THREAD_TIMEOUT", "4", 0);
    close(ready[0]);
    execvp(mpiexec.c_str(), cargs.data());
    const int err = errno;
    ssize_t ignored = write(ready[1], &err, sizeof(err));
    (void)ignored;
    _exit(127);
  }
  close(ready[1]);
  int exec_errno = 0;
  const bool exec_failed = read(ready[0], &exec_errno, sizeof(exec_errno)) == sizeof(exec_errno);
  close(ready[0]);
  g_child_pid = pid;
  struct sigaction sa {};
  sa.sa_handler = forward_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);

  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  g_child_pid = 0;
  if (exec_failed)
    DSGD_THROW(Error, "install MPICH (apt-get install mpich) or set DSGD_MPIEXEC to your mpiexec",
               "cannot execute '{}': {}", mpiexec, std::strerror(exec_errno));
  // Hydra sometimes exits 0 after forwarding a Ctrl-C (a race in its cleanup); the run
  // was interrupted all the same, so say so.
  if (g_forwarded && WIFEXITED(status) && WEXITSTATUS(status) == 0) return 128 + SIGINT;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace dsgd
