// The tuner's trial backends (see trial_backend.hpp).
#include "results/trial_backend.hpp"

#include "core/errors.hpp"

namespace dsgd {

const char* trial_backend_text(TrialBackend backend) {
  return backend == TrialBackend::trial_mpi ? "mpi" : "sim";
}

std::optional<TrialBackend> trial_backend_find(const std::string& name) {
  if (name == "sim") return TrialBackend::trial_sim;
  if (name == "mpi") return TrialBackend::trial_mpi;
  return std::nullopt;
}

TrialBackend trial_backend_parse(const std::string& name) {
  if (std::optional<TrialBackend> backend = trial_backend_find(name)) return *backend;
  DSGD_THROW(InputError, "pass --backend sim (simulated workers, the default) or --backend mpi (real ranks)",
             "dsgd-tune runs its trials on --backend sim or mpi; got --backend {}", name);
}

}  // namespace dsgd
