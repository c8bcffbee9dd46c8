// The workload registry: one explicit table, one line per workload (no static
// self-registration, which a static library's linker may drop).
#include <nlohmann/json.hpp>
#include <string>

#include "core/errors.hpp"
#include "core/run_config.hpp"
#include "workloads/cost_file.hpp"
#include "workloads/resnet.hpp"
#include "workloads/svm.hpp"
#include "workloads/transformer.hpp"
#include "workloads/workload.hpp"

namespace dsgd {

namespace {

std::unique_ptr<Workload> svm_from_config(const RunConfig& cfg, const Dataset& train) {
  if (!cfg.model.empty())
    DSGD_THROW(InputError, "drop --model (the SVM is a single linear layer)",
               "--model {} does not apply to --workload svm", cfg.model);
  return svm_create(train);
}

std::unique_ptr<Workload> resnet_from_config(const RunConfig& cfg, const Dataset& train) {
  return resnet_create(cfg.model, train, cfg.augment, cfg.seed);
}

std::unique_ptr<Workload> transformer_from_config(const RunConfig& cfg, const Dataset& train) {
  if (!cfg.model.empty() && cfg.model != "gpt")
    DSGD_THROW(InputError, "the transformer models: gpt", "--model {} is not a transformer model", cfg.model);
  TransformerConfig tc;
  tc.layers = static_cast<size_t>(cfg.layers);
  tc.d_model = static_cast<size_t>(cfg.d_model);
  tc.heads = static_cast<size_t>(cfg.heads);
  tc.seq = static_cast<size_t>(cfg.seq);
  tc.vocab = static_cast<size_t>(cfg.vocab);
  return transformer_create(tc, train);
}

// The model shape of cfg that differs from the workload's default, for workload_profile_key
// ("" when it is the default one).
std::string svm_shape(const RunConfig&) {
  return {};  // one linear layer; its size comes from the dataset
}

std::string resnet_shape(const RunConfig& cfg) {
  return cfg.model.empty() || cfg.model == "resnet20" ? std::string() : cfg.model;
}

std::string transformer_shape(const RunConfig& cfg) {
  const RunConfig d;
  if (cfg.layers == d.layers && cfg.d_model == d.d_model && cfg.heads == d.heads && cfg.seq == d.seq &&
      cfg.vocab == d.vocab)
    return {};
  return fmt::format("gpt,layers={},d-model={},heads={},seq={},vocab={}", cfg.layers, cfg.d_model, cfg.heads, cfg.seq,
                     cfg.vocab);
}

struct WorkloadEntry {
  const char* name;
  const char* description;
  std::unique_ptr<Workload> (*create)(const RunConfig& cfg, const Dataset& train);
  std::string (*shape)(const RunConfig& cfg);
};

constexpr WorkloadEntry kWorkloads[] = {
    {"svm", "linear one-vs-rest SVM, hinge loss (L2 via weight decay), dense or sparse CSR features", svm_from_config,
     svm_shape},
    {"resnet", "CIFAR-style ResNet (--model resnet8|resnet20|resnet32|resnet56|resnet18) on images", resnet_from_config,
     resnet_shape},
    {"transformer",
     "--model gpt: GPT-2-style pre-LN decoder on byte-level text (--layers --d-model --heads --seq --vocab)",
     transformer_from_config, transformer_shape},
};

}  // namespace

void workload_check_name(const std::string& name) {
  if (cost_file_workload(name)) {
    if (cost_file_path(name).empty())
      DSGD_THROW(InputError,
                 "write --workload profile:PATH, PATH a file from tools/export_profile.py, or chakra:PATH, PATH a "
                 "Chakra execution trace",
                 "--workload {}: no file after {}", name, name);
    return;
  }
  std::string known;
  for (const WorkloadEntry& entry : kWorkloads) {
    if (name == entry.name) return;
    known += known.empty() ? entry.name : std::string(", ") + entry.name;
  }
  DSGD_THROW(
      InputError,
      fmt::format("known workloads: {}; or profile:FILE, a model cost file; or chakra:FILE, a Chakra trace", known),
      "unknown workload '{}'", name);
}

std::unique_ptr<Workload> workload_create(const RunConfig& cfg, const Dataset& train) {
  workload_check_name(cfg.workload);
  if (cost_file_workload(cfg.workload))
    DSGD_THROW(InputError, kCostFileRunHint, "--workload {}: a cost file has times, not a model to train",
               cfg.workload);
  for (const WorkloadEntry& entry : kWorkloads)
    if (cfg.workload == entry.name) return entry.create(cfg, train);
  return nullptr;  // unreachable: workload_check_name threw
}

std::string workload_profile_key(const RunConfig& cfg) {
  workload_check_name(cfg.workload);
  for (const WorkloadEntry& entry : kWorkloads)
    if (cfg.workload == entry.name) {
      const std::string shape = entry.shape(cfg);
      return shape.empty() ? cfg.workload : cfg.workload + ":" + shape;
    }
  return cfg.workload;  // unreachable: workload_check_name threw
}

const std::vector<std::string>& workload_shape_keys() {
  static const std::vector<std::string> keys = {"model", "layers", "d-model", "heads", "seq", "vocab"};
  return keys;
}

std::vector<std::pair<std::string, std::string>> workload_shape_flags(const RunConfig& cfg) {
  const nlohmann::json given = run_config_to_json(cfg), defaults = run_config_to_json(RunConfig{});
  std::vector<std::pair<std::string, std::string>> flags;
  for (const std::string& key : workload_shape_keys())
    if (given.contains(key) && given[key] != defaults[key])
      flags.emplace_back(key, given[key].is_string() ? given[key].get<std::string>() : given[key].dump());
  return flags;
}

void workload_prepare_data(const RunConfig& cfg, DatasetPair& data) {
  if (data.train.tokens.empty()) return;
  if (cfg.workload != "transformer") {
    DSGD_THROW(InputError, "use --workload transformer with a text dataset",
               "dataset {} is text (a token stream), which --workload {} cannot read", data.train.name, cfg.workload);
  }
  const size_t window = static_cast<size_t>(cfg.seq) + 1;
  dataset_set_window(data.train, window);
  if (!data.test.tokens.empty()) dataset_set_window(data.test, window);
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
