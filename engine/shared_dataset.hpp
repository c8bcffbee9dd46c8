// One loaded copy of a dataset per process, shared read-only by every worker that asks
// for the same (spec, seed): the sim backend's N workers in one process would otherwise
// hold N copies (Fashion-MNIST: 220 MB each). An MPI rank is one worker, so it loads once
// as before. The copy lives while some worker holds it (weak cache).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "workloads/datasets/dataset.hpp"

namespace dsgd {

struct RunConfig;

// dataset_load(cfg.dataset, cfg.seed) prepared for cfg.workload (workload_prepare_data:
// text is cut into windows of --seq + 1 tokens), loaded at most once at a time per
// (dataset, seed, workload, seq) — the seed only for datasets generated from it
// (dataset_depends_on_seed); thread-safe.
std::shared_ptr<const DatasetPair> dataset_load_shared(const RunConfig& cfg);

// The set a run evaluates on: data's test set, or with --eval-subset N (below its rows) its
// class-stratified N-row subset (workloads/datasets/subset.hpp), built once per process for
// every worker that shares `data` (thread-safe). Throws InputError for a text dataset.
std::shared_ptr<const Dataset> dataset_eval_set_shared(const RunConfig& cfg,
                                                       const std::shared_ptr<const DatasetPair>& data);

}  // namespace dsgd
