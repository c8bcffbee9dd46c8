// See child_process.hpp.
#include "cli/child_process.hpp"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>

#include "core/errors.hpp"

namespace dsgd {

std::string child_process_self_path() {
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.string();
}

std::pair<int, std::string> child_process_run(const std::vector<std::string>& args,
                                              const std::function<void(const std::string&)>& tick) {
  int fds[2];
  if (::pipe(fds) != 0) DSGD_THROW(Error, "", "pipe() failed");
  const pid_t pid = ::fork();
  if (pid < 0) DSGD_THROW(Error, "", "fork() failed");
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    ::close(fds[0]);
    ::close(fds[1]);
    std::vector<char*> argv;
    argv.reserve(args.size() + 1);
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    std::perror("dsgd-bench: exec");
    std::_Exit(127);
  }
  ::close(fds[1]);
  std::string output;
  char buffer[4096];
  ssize_t got = 0;
  for (;;) {
    pollfd pfd{fds[0], POLLIN, 0};
    const int ready = ::poll(&pfd, 1, 250);
    if (ready < 0 && errno == EINTR) continue;
    if (ready > 0) {
      got = ::read(fds[0], buffer, sizeof buffer);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) break;
      output.append(buffer, static_cast<size_t>(got));
    }
    tick(output);
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return {code, output};
}

}  // namespace dsgd
