// See shared_dataset.hpp.
#include "engine/shared_dataset.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>
#include <utility>

#include "core/run_config.hpp"
#include "workloads/datasets/dataset.hpp"
#include "workloads/datasets/subset.hpp"
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

std::shared_ptr<const Dataset> dataset_eval_set_shared(const RunConfig& cfg,
                                                       const std::shared_ptr<const DatasetPair>& data) {
  const size_t n = static_cast<size_t>(std::max<int64_t>(cfg.eval_subset, 0));
  if (n == 0 || n >= dataset_eval_units(data->test))
    return std::shared_ptr<const Dataset>(data, &data->test);  // the whole test set, no copy
  // Keyed by the pair's address, and checked against the pair itself: a freed pair's address
  // can be reused by another dataset while an old subset is still held.
  struct Slot {
    std::weak_ptr<const DatasetPair> of;
    std::weak_ptr<const Dataset> subset;
  };
  static std::mutex mutex;
  static std::map<std::pair<const DatasetPair*, size_t>, Slot> cache;
  std::lock_guard<std::mutex> lock(mutex);
  Slot& slot = cache[{data.get(), n}];
  if (slot.of.lock() == data)
    if (auto existing = slot.subset.lock()) return existing;
  std::shared_ptr<const Dataset> subset = std::make_shared<Dataset>(dataset_stratified_subset(data->test, n));
  slot = Slot{data, subset};
  return subset;
}

}  // namespace dsgd
