// See run_options.hpp.
#include "cli/run_options.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "core/errors.hpp"

namespace dsgd {

namespace {

// --KEY for one field of the table, bound to target's member, with the field's help and its
// default shown.
CLI::Option* bind_field(CLI::App* sub, const RunConfigField& field, RunConfig& target) {
  CLI::Option* option = nullptr;
  std::visit(
      [&](auto member) {
        option = sub->add_option(fmt::format("--{}", field.key), target.*member, field.help)
                     ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
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
  for (const auto& field : run_config_fields()) {
    if (std::find(skip.begin(), skip.end(), field.key) != skip.end()) continue;
    b.bound.emplace_back(&field, bind_field(sub, field, b.flags));
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
