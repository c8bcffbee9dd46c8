// The workload registry: one explicit table, one line per workload (no static
// self-registration, which a static library's linker may drop).
// Limits: only svm so far; resnet and transformer add one line each here.
#include <string>

#include "core/errors.hpp"
#include "workloads/svm.hpp"
#include "workloads/workload.hpp"

namespace dsgd {

namespace {

struct WorkloadEntry {
  const char* name;
  const char* description;
  std::unique_ptr<Workload> (*create)(const Dataset& train);
};

constexpr WorkloadEntry kWorkloads[] = {
    {"svm", "linear one-vs-rest SVM, hinge loss (L2 via weight decay), dense or sparse CSR features", svm_create},
};

}  // namespace

std::unique_ptr<Workload> workload_create(const std::string& name, const Dataset& train) {
  std::string known;
  for (const WorkloadEntry& entry : kWorkloads) {
    if (name == entry.name) return entry.create(train);
    known += known.empty() ? entry.name : std::string(", ") + entry.name;
  }
  DSGD_THROW(InputError, fmt::format("known workloads: {}", known), "unknown workload '{}'", name);
}

std::vector<WorkloadInfo> workload_list() {
  std::vector<WorkloadInfo> out;
  for (const WorkloadEntry& entry : kWorkloads) out.push_back(WorkloadInfo{entry.name, entry.description});
  return out;
}

bool workload_exists(const std::string& name) {
  for (const WorkloadEntry& entry : kWorkloads)
    if (name == entry.name) return true;
  return false;
}

}  // namespace dsgd
