// Is the process that writes a `running` run still alive? A run killed by SIGKILL (the OOM
// killer) never records its end, so the store checks, when it is opened, the writer
// process recorded with each run (schema v8: runs.pid, pid_start, pid_scope, host).
// The pid is only meaningful on the same host, after the same boot and in the same pid
// namespace (pid_scope = "<boot id>/<pid namespace>"); there the run's process is gone when
// /proc/PID does not exist, is a zombie, or started at another time (the pid was reused).
// Elsewhere (another host, another container) it cannot be checked: the run's heartbeat
// (updated at every flush) tells how long it has been silent instead.
#pragma once

#include <cstdint>
#include <string>

namespace dsgd {

// The calling process: its pid, start time (clock ticks since boot, /proc/PID/stat field
// 22) and scope ("<boot id>/<pid namespace>", empty parts where /proc does not say).
struct ProcessIdentity {
  int64_t pid = 0;
  int64_t start_ticks = 0;
  std::string scope;
};
ProcessIdentity process_identity_self();

enum class RunLiveness { run_alive, run_gone, run_unknown };

// Whether the writer recorded for a run (host, pid, start, scope) is still running, seen
// from this process on this_host; `why` says why it is known gone ("pid 123 no longer
// exists", "host rebooted since").
RunLiveness run_liveness_check(const std::string& run_host, int64_t pid, int64_t start_ticks, const std::string& scope,
                               const std::string& this_host, std::string* why);

// Seconds since an ISO 8601 UTC time "YYYY-MM-DDTHH:MM:SSZ" (the store's format); -1 when
// it does not parse.
double seconds_since_iso8601(const std::string& time);

}  // namespace dsgd
