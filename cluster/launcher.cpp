// See launcher.hpp. The re-executed command line is the original one, unchanged, so the
// ranks parse exactly what the user typed; DSGD_LAUNCHED=1 prevents a second re-launch.
#include "cluster/launcher.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/errors.hpp"

namespace dsgd {

bool launcher_under_mpiexec() {
  for (const char* var : {"PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE", "MPI_LOCALNRANKS",
                          "DSGD_LAUNCHED"}) {
    if (std::getenv(var)) return true;
  }
  return false;
}

std::string launcher_mpiexec_path() {
  if (const char* env = std::getenv("DSGD_MPIEXEC"); env && *env) return env;
#ifdef DSGD_MPIEXEC_PATH
  if (std::strlen(DSGD_MPIEXEC_PATH) > 0 && std::strstr(DSGD_MPIEXEC_PATH, "NOTFOUND") == nullptr)
    return DSGD_MPIEXEC_PATH;
#endif
  return "mpiexec";
}

void launcher_exec_mpiexec(int workers, const std::string& hostfile, int argc, char** argv) {
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

  setenv("DSGD_LAUNCHED", "1", 1);
  fflush(stdout);
  fflush(stderr);
  execvp(mpiexec.c_str(), cargs.data());
  DSGD_THROW(Error, "install MPICH (apt-get install mpich) or set DSGD_MPIEXEC to your mpiexec",
             "cannot execute '{}': {}", mpiexec, std::strerror(errno));
}

}  // namespace dsgd
