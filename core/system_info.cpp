// Reads host name, CPU model and governor from the OS; version and commit from the build.
#include "core/system_info.hpp"

#include <unistd.h>

#include <ctime>
#include <fstream>
#include <thread>

#include "dsgd_git_commit.hpp"  // generated at build time

namespace dsgd {

namespace {

std::string read_first_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  if (in) std::getline(in, line);
  return line;
}

std::string read_cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) {
        auto start = line.find_first_not_of(" \t", colon + 1);
        return start == std::string::npos ? std::string() : line.substr(start);
      }
    }
  }
  return "unknown";
}

}  // namespace

SystemInfo system_info_read() {
  SystemInfo info;
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) == 0) info.host = host;
  info.cpu_model = read_cpu_model();
  info.cores = static_cast<int>(std::thread::hardware_concurrency());
  info.tool_version = DSGD_VERSION;
  info.git_commit = DSGD_GIT_COMMIT;
  info.build_type = DSGD_BUILD_TYPE;
  info.cpu_governor = read_first_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
  return info;
}

std::array<double, 3> system_load_average() {
  std::ifstream in("/proc/loadavg");
  std::array<double, 3> load{};
  if (!(in >> load[0] >> load[1] >> load[2])) load = {-1, -1, -1};
  return load;
}

std::optional<CpuTimes> system_cpu_times() {
  std::ifstream in("/proc/stat");
  std::string label;
  if (!(in >> label) || label != "cpu") return std::nullopt;
  // user nice system idle iowait irq softirq steal (guest time is already in user and nice)
  uint64_t field[8] = {};
  for (uint64_t& f : field)
    if (!(in >> f)) return std::nullopt;
  CpuTimes t;
  for (uint64_t f : field) t.total += f;
  t.steal = field[7];
  return t;
}

std::string system_time_iso8601() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace dsgd
