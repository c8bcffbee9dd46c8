// Convergence targets: parser and reached-test (see target.hpp).
#include "results/target.hpp"

#include <charconv>
#include <cmath>
#include <string_view>

#include "core/errors.hpp"
#include "core/text.hpp"

namespace dsgd {

namespace {

constexpr const char* target_forms_hint =
    "accepted forms: acc=V or test_acc=V (V a fraction in (0, 1], e.g. acc=0.8), "
    "loss=V or test_loss=V (e.g. loss=0.35), or empty for none";

}  // namespace

std::optional<Target> target_parse(const std::string& text) {
  std::string_view whole = text_trim_view(text);
  if (whole.empty()) return std::nullopt;

  size_t equals = whole.find('=');
  if (equals == std::string_view::npos) {
    DSGD_THROW(InputError, target_forms_hint, "bad target '{}': expected METRIC=VALUE", text);
  }
  std::string_view name = text_trim_view(whole.substr(0, equals));
  std::string_view number = text_trim_view(whole.substr(equals + 1));

  Target target;
  if (name == "acc" || name == "test_acc") {
    target.metric = TargetMetric::target_test_acc;
  } else if (name == "loss" || name == "test_loss") {
    target.metric = TargetMetric::target_test_loss;
  } else {
    DSGD_THROW(InputError, target_forms_hint, "bad target '{}': unknown metric '{}'", text, name);
  }

  double value = 0;
  auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (number.empty() || ec != std::errc() || end != number.data() + number.size() || !std::isfinite(value)) {
    DSGD_THROW(InputError, target_forms_hint, "bad target '{}': '{}' is not a number", text, number);
  }
  if (target.metric == TargetMetric::target_test_acc && !(value > 0 && value <= 1)) {
    DSGD_THROW(InputError, target_forms_hint, "bad target '{}': accuracy is a fraction in (0, 1] (acc=0.8 means 80%)",
               text);
  }
  if (target.metric == TargetMetric::target_test_loss && value < 0) {
    DSGD_THROW(InputError, target_forms_hint, "bad target '{}': a loss target is >= 0", text);
  }
  target.value = value;
  return target;
}

std::string target_format(const Target& target) {
  const char* name = target.metric == TargetMetric::target_test_acc ? "acc" : "loss";
  return fmt::format("{}={}", name, target.value);
}

bool target_reached(const Target& target, const EvalRow& eval) {
  switch (target.metric) {
    case TargetMetric::target_test_acc: return eval.test_acc >= target.value;
    case TargetMetric::target_test_loss: return eval.test_loss <= target.value;
  }
  return false;
}

}  // namespace dsgd
