// See run_options.hpp.
#include "cli/run_options.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string_view>
#include <type_traits>

#include "algorithms/variant.hpp"
#include "core/errors.hpp"

namespace dsgd {

namespace {

// The --help group of a run flag: a variant's own flags under that variant (from the
// registry), the rest by topic. Groups are listed in the order their first flag appears in
// the field table.
std::string option_group(std::string_view key) {
  if (const std::vector<const Variant*> owners = variant_flag_owners(key); !owners.empty()) {
    std::vector<std::string> names;
    for (const Variant* v : owners) names.push_back(v->name);
    return fmt::format("Options of --algo {}", fmt::join(names, ", "));
  }
  static const std::vector<std::pair<std::string_view, std::vector<std::string_view>>> groups = {
      {"Workload and data",
       {"workload", "dataset", "batch", "model", "layers", "d-model", "heads", "seq", "vocab", "augment"}},
      {"Algorithm", {"algo", "period", "compress"}},
      {"Optimizer and learning-rate schedule",
       {"lr", "momentum", "weight-decay", "optimizer", "nesterov", "beta1", "beta2", "eps", "lr-schedule", "lr-warmup",
        "lr-step-every", "lr-step-gamma", "lr-scaling", "lr-base-batch"}},
      {"Length, evaluation and target",
       {"steps", "epochs", "seed", "eval-every", "eval-subset", "target", "stop-at-target", "time-limit", "warmup"}},
      {"Cluster and network",
       {"workers", "backend", "hostfile", "threads", "topology", "bandwidth", "latency", "inter-bandwidth",
        "inter-latency", "link-efficiency", "mtu"}},
      {"Stragglers", {"straggler"}},
      {"Simulator (--backend sim)", {"timing-only", "compute-scale", "profile-from", "native-floor", "fabric"}},
      {"Measurement and output", {"db", "tag", "save-params", "timers"}},
  };
  for (const auto& [name, keys] : groups)
    if (std::find(keys.begin(), keys.end(), key) != keys.end()) return std::string(name);
  return "Other";
}

// The help line of a field, with what the registry knows: which variants take --period and
// --compress (instead of a hand-kept list).
std::string option_help(const RunConfigField& field) {
  const std::string_view key = field.key;
  std::vector<std::string> takers;
  if (key == "period" || key == "compress")
    for (const Variant* v : variant_all())
      if (key == "period" ? v->takes_period : v->no_compress.empty()) takers.push_back(v->name);
  if (takers.empty()) return field.help;
  return fmt::format("{}; taken by --algo {}", field.help, fmt::join(takers, ", "));
}

// --KEY for one field of the table, bound to target's member, with the field's help and its
// default shown.
CLI::Option* bind_field(CLI::App* sub, const RunConfigField& field, RunConfig& target) {
  CLI::Option* option = nullptr;
  std::visit(
      [&](auto member) {
        option = sub->add_option(fmt::format("--{}", field.key), target.*member, option_help(field))
                     ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
                     ->group(option_group(field.key));
        // A boolean may be given bare (--overlap means --overlap true) or with a value.
        if constexpr (std::is_same_v<std::remove_reference_t<decltype(target.*member)>, bool>)
          option->expected(0)->expected(0, 1);  // flag-like: bare means true
        // CLI11 reads "-1" into an unsigned field as 2^64-1; refuse it as a config file does.
        if constexpr (std::is_same_v<std::remove_reference_t<decltype(target.*member)>, uint64_t>)
          option->check(
              [](const std::string& text) {
                return text.find('-') == std::string::npos
                           ? std::string()
                           : fmt::format("must be a non-negative integer (got {}); pass 0..{}", text,
                                         std::numeric_limits<int64_t>::max());
              },
              "non-negative");
      },
      field.member);
  RunConfig defaults;
  std::visit([&](auto member) { option->default_str(fmt::format("{}", defaults.*member)); }, field.member);
  return option;
}

}  // namespace

void run_options_bind(CLI::App* sub, RunOptionBinding& b, const std::vector<std::string>& skip) {
  // The shared flags first, then each variant's own in registry order, so --help lists the
  // topic groups before the variants' groups.
  std::vector<const RunConfigField*> fields;
  for (const auto& field : run_config_fields())
    if (variant_flag_owners(field.key).empty()) fields.push_back(&field);
  for (const Variant* v : variant_all())
    for (const VariantFlag& flag : v->flags)
      for (const auto& field : run_config_fields())
        if (std::string_view(field.key) == flag.key && std::find(fields.begin(), fields.end(), &field) == fields.end())
          fields.push_back(&field);
  for (const RunConfigField* field : fields) {
    if (std::find(skip.begin(), skip.end(), field->key) != skip.end()) continue;
    b.bound.emplace_back(field, bind_field(sub, *field, b.flags));
  }
}

void run_options_bind_keys(CLI::App* sub, RunConfig& target, const std::vector<std::string>& keys) {
  for (const auto& field : run_config_fields())
    if (std::find(keys.begin(), keys.end(), field.key) != keys.end()) bind_field(sub, field, target);
}

RunConfig run_options_resolve(const RunOptionBinding& b) {
  RunConfig cfg;
  if (!b.config_file.empty()) run_config_load_file(cfg, b.config_file);
  for (const auto& [field, option] : b.bound) {
    if (option->count() == 0) continue;
    run_config_copy_field(cfg, b.flags, *field);
    run_config_mark_given(cfg, field->key);
    const std::string key = field->key;
    // 0 means "not given" for these (lr: the optimizer's default), so an explicit 0 is refused.
    if ((key == "steps" && cfg.steps <= 0) || (key == "epochs" && !(cfg.epochs > 0)) || (key == "lr" && cfg.lr == 0))
      DSGD_THROW(InputError, fmt::format("pass a positive --{}", key), "--{} must be positive (got {})", key,
                 key == "steps"    ? fmt::format("{}", cfg.steps)
                 : key == "epochs" ? fmt::format("{}", cfg.epochs)
                                   : fmt::format("{}", cfg.lr));
  }
  return cfg;
}

}  // namespace dsgd
