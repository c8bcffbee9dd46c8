// What machine and build a run happened on: host, CPU model, core count, tool version,
// git commit, build type. Recorded with every run so results can be matched and trusted.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace dsgd {

struct SystemInfo {
  std::string host;
  std::string cpu_model;
  int cores = 0;
  std::string tool_version;
  std::string git_commit;
  std::string build_type;
  std::string cpu_governor;  // "performance", "powersave", ... or empty when not exposed
};

SystemInfo system_info_read();

// The 1-, 5- and 15-minute load averages (/proc/loadavg); all -1 when unreadable.
std::array<double, 3> system_load_average();

// The host's CPU time since boot in clock ticks (/proc/stat's "cpu" line): all of it, and the
// part the hypervisor stole (time a virtual CPU was ready but another guest ran); nullopt
// when unreadable.
struct CpuTimes {
  uint64_t total = 0, steal = 0;
};
std::optional<CpuTimes> system_cpu_times();

// The current time as ISO 8601 UTC ("2026-11-29T23:57:10Z").
std::string system_time_iso8601();

}  // namespace dsgd
