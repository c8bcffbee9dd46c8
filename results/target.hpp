// Convergence targets ("acc=0.8", "loss=0.35"): parsing, for validating --target, and
// the reached-test behind time-to-target (the first evaluation at or past the target).
#pragma once

#include <optional>
#include <string>

#include "results/store.hpp"

namespace dsgd {

enum class TargetMetric {
  target_test_acc,   // reached when test_acc >= value
  target_test_loss,  // reached when test_loss <= value
};

struct Target {
  TargetMetric metric = TargetMetric::target_test_acc;
  double value = 0;
};

// Parses "acc=V" / "test_acc=V" (V a fraction in (0, 1]) or "loss=V" / "test_loss=V"
// (V finite, >= 0); spaces around the parts are ignored. Empty text means no target
// (nullopt). Anything else throws InputError naming the text and the accepted forms.
std::optional<Target> target_parse(const std::string& text);

// The canonical spelling, e.g. "acc=0.8".
std::string target_format(const Target& target);

// Whether the evaluation meets the target (a NaN metric never does).
bool target_reached(const Target& target, const EvalRow& eval);

}  // namespace dsgd
