// See shared_dataset.hpp.
#include "engine/shared_dataset.hpp"

#include <map>
#include <mutex>
#include <tuple>
#include <utility>

#include "core/run_config.hpp"
#include "workloads/datasets/dataset.hpp"
#include "workloads/workload.hpp"

namespace dsgd {

std::shared_ptr<const DatasetPair> dataset_load_shared(const RunConfig& cfg) {
  static std::mutex mutex;
  using Key = std::tuple<std::string, uint64_t, std::string, int64_t>;
  static std::map<Key, std::weak_ptr<const DatasetPair>> cache;
  // Held while loading: concurrent callers for the same data wait instead of loading twice.
  std::lock_guard<std::mutex> lock(mutex);
  // A dataset read from files is the same for every seed: one copy serves them all.
  const uint64_t seed = dataset_depends_on_seed(cfg.dataset) ? cfg.seed : 0;
  auto& slot = cache[Key{cfg.dataset, seed, cfg.workload, cfg.seq}];
  if (auto existing = slot.lock()) return existing;
  auto loaded = std::make_shared<DatasetPair>(dataset_load(cfg.dataset, cfg.seed));
  workload_prepare_data(cfg, *loaded);  // text: windows of seq+1 tokens; refuses text for other workloads
  std::shared_ptr<const DatasetPair> shared = std::move(loaded);
  slot = shared;
  return shared;
}

}  // namespace dsgd
