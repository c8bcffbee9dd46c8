// Child processes of the CLI: this program's own path, and running a command line with its
// stdout captured (stderr passes through), as `dsgd-bench suite` runs each entry and `track
// calibrate` repeats a command.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace dsgd {

// The path of this process's executable (/proc/self/exe); empty when it cannot be read.
std::string child_process_self_path();

// Runs argv (args[0] the program's path) with stdout captured; stderr passes through.
// Returns (exit status, stdout); a child killed by signal S gives 128 + S. `tick` is called
// with the output so far whenever some arrives, and at least every 250 ms while the child runs.
std::pair<int, std::string> child_process_run(const std::vector<std::string>& args,
                                              const std::function<void(const std::string&)>& tick);

}  // namespace dsgd
