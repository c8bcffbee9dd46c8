// See run_liveness.hpp.
#include "results/run_liveness.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <climits>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <sstream>

namespace dsgd {

namespace {

std::string file_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// State and start time of /proc/PID/stat; false when the process does not exist.
bool proc_stat_read(int64_t pid, char* state, int64_t* start_ticks) {
  const std::string text = file_first_line(fmt::format("/proc/{}/stat", pid));
  const size_t close = text.rfind(')');  // the command name may hold spaces and ')'
  if (text.empty() || close == std::string::npos) return false;
  std::istringstream fields(text.substr(close + 1));
  std::string field;
  // Field 3 is the state, field 22 the start time.
  for (int index = 3; index <= 22 && (fields >> field); ++index) {
    if (index == 3) *state = field.empty() ? '?' : field[0];
    if (index == 22) {
      *start_ticks = std::stoll(field);
      return true;
    }
  }
  return false;
}

std::string boot_id() {
  return file_first_line("/proc/sys/kernel/random/boot_id");
}

std::string pid_namespace() {
  char buf[128] = {0};
  const ssize_t n = readlink("/proc/self/ns/pid", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

}  // namespace

ProcessIdentity process_identity_self() {
  ProcessIdentity id;
  id.pid = static_cast<int64_t>(getpid());
  char state = '?';
  if (!proc_stat_read(id.pid, &state, &id.start_ticks)) id.start_ticks = 0;
  id.scope = boot_id() + "/" + pid_namespace();
  return id;
}

RunLiveness run_liveness_check(const std::string& run_host, int64_t pid, int64_t start_ticks, const std::string& scope,
                               const std::string& this_host, std::string* why) {
  if (pid <= 0 || run_host != this_host || scope.empty()) return RunLiveness::run_unknown;
  const ProcessIdentity self = process_identity_self();
  const size_t slash = scope.find('/');
  const std::string run_boot = scope.substr(0, slash);
  const std::string self_boot = self.scope.substr(0, self.scope.find('/'));
  if (run_boot.empty() || self_boot.empty()) return RunLiveness::run_unknown;
  if (run_boot != self_boot) {
    if (why) *why = fmt::format("host {} rebooted since", this_host);
    return RunLiveness::run_gone;
  }
  if (scope != self.scope) return RunLiveness::run_unknown;  // another container's pids
  char state = '?';
  int64_t start = 0;
  if (!proc_stat_read(pid, &state, &start)) {
    if (why) *why = fmt::format("pid {} no longer exists", pid);
    return RunLiveness::run_gone;
  }
  if (state == 'Z' || state == 'X') {
    if (why) *why = fmt::format("pid {} has exited", pid);
    return RunLiveness::run_gone;
  }
  if (start_ticks > 0 && start != start_ticks) {
    if (why) *why = fmt::format("pid {} now belongs to another process", pid);
    return RunLiveness::run_gone;
  }
  return RunLiveness::run_alive;
}

double seconds_since_iso8601(const std::string& time) {
  std::tm tm{};
  std::istringstream in(time);
  in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%S");
  if (in.fail()) return -1;
  const std::time_t then = timegm(&tm);
  return std::difftime(std::time(nullptr), then);
}

}  // namespace dsgd
