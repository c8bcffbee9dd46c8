// See preflight.hpp.
#include "engine/preflight.hpp"

#include "algorithms/variant.hpp"
#include "results/target.hpp"
#include "workloads/datasets/dataset.hpp"
#include "workloads/workload.hpp"

namespace dsgd {

void preflight_check_names(const RunConfig& cfg) {
  variant_get(cfg.algo);  // InputError listing the variants
  workload_check_name(cfg.workload);
  dataset_validate_spec(cfg.dataset);
  target_parse(cfg.target);
}

}  // namespace dsgd
