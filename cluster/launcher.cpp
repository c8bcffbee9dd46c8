// See launcher.hpp. The command line given to the ranks is the original one, unchanged,
// so they parse exactly what the user typed; DSGD_LAUNCHED=1 prevents a second launch.
#include "cluster/launcher.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "core/errors.hpp"
#include "core/signal_name.hpp"

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
volatile sig_atomic_t g_forwarded = 0;  // the first signal forwarded (0: none)

// The launcher's own signal handler: forward the first SIGINT/SIGTERM/SIGHUP to mpiexec
// as one Ctrl-C (Hydra then forwards SIGINT to every rank; rank 0 marks the run
// interrupted); a second signal kills mpiexec.
void forward_signal(int sig) {
  if (g_child_pid <= 0) return;
  kill(static_cast<pid_t>(g_child_pid), g_forwarded ? SIGKILL : SIGINT);
  if (!g_forwarded) g_forwarded = sig;
}

// Writes all of buf to standard output; false (errno set) when a write failed.
bool write_all_stdout(const char* buf, size_t n) {
  while (n > 0) {
    const ssize_t w = write(STDOUT_FILENO, buf, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    buf += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// Copies what mpiexec prints (the ranks' standard output) from `fd` to this process's
// standard output until mpiexec `pid` has exited, then what is left in the pipe; returns
// mpiexec's wait status. The first failed write (a full disk: ENOSPC, a closed pipe: EPIPE)
// is kept in write_errno and the rest of the output is read and dropped, so the ranks never
// block on a full pipe and the run ends as it would have (its record is in the database).
// Hydra itself, writing to a full disk, kills the ranks and exits 255.
int relay_output(pid_t pid, int fd, int& write_errno) {
  struct sigaction ignore = {};
  struct sigaction old_pipe = {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGPIPE, &ignore, &old_pipe);  // a closed stdout is EPIPE here, not death
  char buf[1 << 16];
  auto copy = [&](ssize_t n) {
    if (write_errno == 0 && !write_all_stdout(buf, static_cast<size_t>(n))) write_errno = errno ? errno : EIO;
  };
  int status = 0;
  bool open = true;
  for (;;) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) break;
    if (!open) {  // mpiexec closed its stdout but still runs
      usleep(20000);
      continue;
    }
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;  // timeout, or EINTR (a forwarded signal)
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n > 0)
      copy(n);
    else if (n == 0 || errno != EINTR)
      open = false;
  }
  // mpiexec has exited: what it wrote is in the pipe. Another holder of the write end (an
  // orphaned proxy, killed below by the caller) must not keep this loop waiting.
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  for (ssize_t n; open && (n = read(fd, buf, sizeof(buf))) != 0;) {
    if (n > 0)
      copy(n);
    else if (errno != EINTR)
      break;
  }
  sigaction(SIGPIPE, &old_pipe, nullptr);
  return status;
}

}  // namespace

std::string launcher_check_local_ranks(int workers, int cores, bool oversubscribe) {
  if (cores <= 0 || workers <= cores) return {};
  if (workers > 4 * cores && !oversubscribe)
    DSGD_THROW(InputError,
               "pass --oversubscribe to start them anyway, use fewer --workers, --backend sim for many workers, "
               "or --hostfile to spread them over machines",
               "--workers {} would start {} MPI ranks on the {} cores of this machine (more than 4 per core: MPICH "
               "busy-polls, so they would crawl and be slow to stop)",
               workers, workers, cores);
  return fmt::format("{} MPI ranks on {} cores: ranks exceed cores, timings are not trustworthy (MPICH busy-polls)",
                     workers, cores);
}

std::string launcher_describe_end(const LaunchOutcome& outcome) {
  if (outcome.forwarded_signal)
    return fmt::format("stopped by {} sent to the launcher (forwarded to the ranks as SIGINT)",
                       signal_name(outcome.forwarded_signal));
  if (outcome.mpiexec_signal)
    return fmt::format("mpiexec was killed by {}{}; its ranks were stopped", signal_name(outcome.mpiexec_signal),
                       outcome.mpiexec_signal == SIGKILL ? " (the OOM killer's signal: see dmesg)" : "");
  // A rank killed by signal N: MPICH's Hydra exits with N itself (Open MPI and shells with
  // 128 + N). Our ranks exit 0, 1, 2, 3 (diverged) or 128 + N (interrupt.hpp), and record
  // the run's end before they do, so a run still `running` was not ended by them.
  int sig = 0;
  if (outcome.exit_code > 128 && outcome.exit_code < 128 + 65) sig = outcome.exit_code - 128;
  if (outcome.exit_code >= 4 && outcome.exit_code < 65) sig = outcome.exit_code;
  if (sig > 0)
    return fmt::format("a rank was killed by {}{} (mpiexec exit {})", signal_name(sig),
                       sig == SIGKILL ? " (the OOM killer's signal: see dmesg)" : "", outcome.exit_code);
  return fmt::format("the ranks ended without recording the run's end (mpiexec exit {})", outcome.exit_code);
}

namespace {

// "<host>/<device number>" of a terminal, as launcher_adopt_terminal compares it.
std::string terminal_id(const struct stat& st) {
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) return "";
  return fmt::format("{}/{}", host, static_cast<uint64_t>(st.st_rdev));
}

// The path and id of the terminal that is stdout; empty when stdout is no terminal.
std::pair<std::string, std::string> stdout_terminal() {
  struct stat st {};
  char path[256] = {0};
  if (isatty(STDOUT_FILENO) != 1 || fstat(STDOUT_FILENO, &st) != 0 ||
      ttyname_r(STDOUT_FILENO, path, sizeof(path) - 1) != 0)
    return {};
  return {path, terminal_id(st)};
}

// The path of this program.
std::string self_exe_path() {
  char self[4096] = {0};
  ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (len <= 0) DSGD_THROW(Error, "", "cannot resolve the path of this program: {}", std::strerror(errno));
  self[len] = '\0';
  return self;
}

// mpiexec's command line: -n workers (-f hostfile), then this program (`self`) with this
// invocation's arguments.
std::vector<std::string> mpiexec_args(const std::string& mpiexec, int workers, const std::string& hostfile,
                                      const std::string& self, int argc, char** argv) {
  const std::string n = std::to_string(workers);
  std::vector<std::string> args = {mpiexec, "-n", n};
  if (!hostfile.empty()) {
    args.push_back("-f");
    args.push_back(hostfile);
  }
  args.push_back(self);
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  return args;
}

// What the forked child sets up before it becomes mpiexec: its own process group, the
// environment the ranks read, stdout onto the relay pipe. On an exec failure it writes errno
// to the `ready` pipe and exits 127.
[[noreturn]] void mpiexec_child(const std::string& mpiexec, std::vector<char*>& cargs, const std::string& launch_id,
                                const std::string& launcher_pid, const std::string& terminal,
                                const std::string& terminal_id_text, const int ready[2], const int out[2]) {
  // Own process group: a terminal Ctrl-C reaches mpiexec only through the launcher
  // (once), not twice (Hydra aborts hard on a second Ctrl-C).
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGINT);
  setenv("DSGD_LAUNCHED", "1", 1);
  setenv("DSGD_LAUNCH_ID", launch_id.c_str(), 1);
  // The ranks tell a SIGINT from the death of this launcher (PDEATHSIG above) by whether
  // this pid still runs (engine/interrupt.cpp): the run is then `killed`, not `interrupted`.
  setenv("DSGD_LAUNCHER_PID", launcher_pid.c_str(), 1);
  // Rank 0 draws its output and progress line on this terminal (launcher_adopt_terminal).
  if (!terminal.empty()) {
    setenv("DSGD_TERMINAL", terminal.c_str(), 1);
    setenv("DSGD_TERMINAL_ID", terminal_id_text.c_str(), 1);
  } else {
    unsetenv("DSGD_TERMINAL");
    unsetenv("DSGD_TERMINAL_ID");
  }
  // Idle BLAS/OpenMP threads sleep instead of spinning (read when the libraries load, so
  // only settable here): with --threads > 1 a spinning OpenMP pool (oneDNN, layer loops)
  // and OpenBLAS's own pool steal each other's cores (docs/workloads.md). A value the user
  // set is kept.
  setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
  setenv("OPENBLAS_THREAD_TIMEOUT", "4", 0);
  // mpiexec keeps a copy of its stdout pipe's read end (no FD_CLOEXEC): when this launcher
  // is killed, its writes do not fail (Hydra exits on a write error, killing the ranks
  // before they record the run) while the PDEATHSIG's SIGINT stops the ranks; the few lines
  // they print meanwhile fit in the pipe. The copy goes when mpiexec and its proxies exit.
  fcntl(out[0], F_SETFD, 0);
  close(ready[0]);
  if (dup2(out[1], STDOUT_FILENO) < 0) _exit(127);  // the duplicate has no FD_CLOEXEC
  execvp(mpiexec.c_str(), cargs.data());
  const int err = errno;
  ssize_t ignored = write(ready[1], &err, sizeof(err));
  (void)ignored;
  _exit(127);
}

// SIGINT, SIGTERM and SIGHUP forwarded to mpiexec (g_child_pid) while it runs.
void signals_forward_to_child() {
  struct sigaction sa {};
  sa.sa_handler = forward_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
}

// The outcome's exit code (and signal) from mpiexec's wait status.
void outcome_from_status(int status, pid_t pid, LaunchOutcome& outcome) {
  outcome.forwarded_signal = g_forwarded;
  if (WIFSIGNALED(status)) {
    // mpiexec itself was killed (SIGKILL: nothing forwarded). Its proxies and ranks are in
    // its process group and may live on, orphaned, busy-polling: stop them.
    outcome.mpiexec_signal = WTERMSIG(status);
    kill(-pid, SIGKILL);
    outcome.exit_code = 128 + WTERMSIG(status);
  } else if (WIFEXITED(status)) {
    outcome.exit_code = WEXITSTATUS(status);
  } else {
    outcome.exit_code = 1;
  }
  // Hydra sometimes exits 0 after forwarding a Ctrl-C (a race in its cleanup); the run
  // was interrupted all the same, so say so.
  if (g_forwarded && outcome.exit_code == 0) outcome.exit_code = 128 + SIGINT;
}

}  // namespace

bool launcher_adopt_terminal() {
  if (isatty(STDOUT_FILENO) == 1) return true;
  const char* path = std::getenv("DSGD_TERMINAL");
  const char* id = std::getenv("DSGD_TERMINAL_ID");
  if (!path || !id || !*path || !*id) return false;
  const int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  const bool same = fstat(fd, &st) == 0 && isatty(fd) == 1 && terminal_id(st) == id;
  if (same) {
    fflush(stdout);
    dup2(fd, STDOUT_FILENO);
  }
  close(fd);
  return same;
}

LaunchOutcome launcher_run_mpiexec(int workers, const std::string& hostfile, int argc, char** argv) {
  const std::string self = self_exe_path();
  const std::string mpiexec = launcher_mpiexec_path();
  std::vector<std::string> args = mpiexec_args(mpiexec, workers, hostfile, self, argc, argv);
  std::vector<char*> cargs;
  cargs.reserve(args.size() + 1);
  for (auto& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);

  // Every run this launch starts records this id (Store::run_begin), so the launcher can
  // find its run after the ranks died without a word.
  LaunchOutcome outcome;
  outcome.launch_id = fmt::format(
      "{}-{}", getpid(),
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());

  fflush(stdout);
  fflush(stderr);
  int ready[2];
  if (pipe2(ready, O_CLOEXEC) != 0) DSGD_THROW(Error, "", "pipe failed: {}", std::strerror(errno));
  // mpiexec's standard output is a pipe the launcher copies to its own (relay_output).
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) DSGD_THROW(Error, "", "pipe failed: {}", std::strerror(errno));
  const std::string launcher_pid = std::to_string(getpid());  // formatted before fork
  const auto [terminal, terminal_id_text] = stdout_terminal();
  const pid_t pid = fork();
  if (pid < 0) DSGD_THROW(Error, "", "fork failed: {}", std::strerror(errno));
  if (pid == 0) mpiexec_child(mpiexec, cargs, outcome.launch_id, launcher_pid, terminal, terminal_id_text, ready, out);
  close(ready[1]);
  close(out[1]);
  int exec_errno = 0;
  const bool exec_failed = read(ready[0], &exec_errno, sizeof(exec_errno)) == sizeof(exec_errno);
  close(ready[0]);
  g_child_pid = pid;
  signals_forward_to_child();

  const int status = relay_output(pid, out[0], outcome.output_errno);
  close(out[0]);
  g_child_pid = 0;
  if (exec_failed)
    DSGD_THROW(Error, "install MPICH (apt-get install mpich) or set DSGD_MPIEXEC to your mpiexec",
               "cannot execute '{}': {}", mpiexec, std::strerror(exec_errno));
  outcome_from_status(status, pid, outcome);
  return outcome;
}

}  // namespace dsgd
