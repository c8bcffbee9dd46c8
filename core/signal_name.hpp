// Signal names for messages: "SIGTERM" rather than strsignal's "Terminated".
#pragma once

#include <string.h>

#include <string>

namespace dsgd {

// "SIGKILL", or "signal N" for a number without a name.
inline std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);  // glibc >= 2.32
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

}  // namespace dsgd
