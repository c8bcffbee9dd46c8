// The checks every entry point of a run shares, before anything is loaded or allocated.
// `dsgd-bench run`'s launcher, the trainer's worker setup, the simulator, the memory
// preflight and the tuner's plan each call them, so a bad name gets the same message
// whichever path meets it first.
#pragma once

#include "core/run_config.hpp"

namespace dsgd {

// The names a run refers to: its variant (--algo), workload, dataset spec and target.
// Throws InputError naming the bad one, with the valid names where there is a list.
void preflight_check_names(const RunConfig& cfg);

}  // namespace dsgd
