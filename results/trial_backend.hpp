// The backend a tuning session runs its trials on (dsgd-tune --backend): the simulated cluster
// (`sim`, virtual seconds; tuner/trial.hpp) or real MPI ranks of this machine (`mpi`, wall-clock
// seconds; tuner/trial_mpi.hpp). The tuner has one trial path for each, so these two are a closed
// set of its own, not a capability of the backend table. Parsed once from the flag (tuner/
// recommend.cpp tune_plan, into TunePlan::backend) and from a stored session's spec (results/
// report_tuning.cpp).
#pragma once

#include <optional>
#include <string>

namespace dsgd {

enum class TrialBackend { trial_sim, trial_mpi };

// "sim" or "mpi".
const char* trial_backend_text(TrialBackend backend);
// The trial backend named `name`, or nullopt for any other backend.
std::optional<TrialBackend> trial_backend_find(const std::string& name);
// The trial backend named `name`; InputError naming --backend and the two it takes otherwise.
TrialBackend trial_backend_parse(const std::string& name);

}  // namespace dsgd
