// See config_check.hpp.
#include "algorithms/config_check.hpp"

#include <cmath>

#include "algorithms/compress/compressor.hpp"
#include "algorithms/optimizer.hpp"
#include "algorithms/variant.hpp"
#include "cluster/backends.hpp"
#include "core/errors.hpp"
#include "workloads/cost_file.hpp"
#include "workloads/workload.hpp"

namespace dsgd {

void config_fail(const char* flag, const std::string& what, const std::string& hint) {
  DSGD_THROW(InputError, hint, "--{}: {}", flag, what);
}

bool config_changed(const RunConfig& cfg, const char* key) {
  if (cfg.given(key)) return true;
  static const RunConfig def;
  for (const auto& f : run_config_fields())
    if (std::string(f.key) == key) return std::visit([&](auto m) { return !(cfg.*m == def.*m); }, f.member);
  DSGD_THROW(Error, "this is a bug: a variant declares a flag the field table lacks", "unknown run flag '{}'", key);
}

namespace {

// Optimizer and learning-rate schedule knobs: a knob of the other optimizer or schedule
// (given, or set to other than its default) is refused, as it would be silently ignored.
void check_optimizer(const RunConfig& cfg) {
  auto owned = [&](const char* flag, bool applies, const char* owner) {
    if (config_changed(cfg, flag) && !applies)
      config_fail(flag,
                  fmt::format("applies to {} only (got --algo {}, --optimizer {})", owner, cfg.algo, cfg.optimizer),
                  fmt::format("drop --{} or use {}", flag, owner));
  };
  if (cfg.optimizer != "auto" && cfg.optimizer != "sgd" && cfg.optimizer != "adamw")
    config_fail("optimizer", fmt::format("unknown optimizer '{}'", cfg.optimizer), "available: sgd, adamw, auto");
  const bool adamw = optimizer_resolve_name(cfg) == "adamw";
  owned("nesterov", !adamw, "--optimizer sgd");
  owned("momentum", !adamw, "--optimizer sgd");
  if (cfg.nesterov && !(cfg.momentum > 0))
    config_fail("nesterov", "needs momentum", "pass --momentum 0.9 (for example) with --nesterov");
  owned("beta1", adamw, "--optimizer adamw");
  owned("beta2", adamw, "--optimizer adamw");
  owned("eps", adamw, "--optimizer adamw");
  if (cfg.lr_schedule != "constant" && cfg.lr_schedule != "cosine" && cfg.lr_schedule != "step")
    config_fail("lr-schedule", fmt::format("unknown schedule '{}'", cfg.lr_schedule),
                "available: constant, cosine, step");
  const bool step_schedule = cfg.lr_schedule == "step";
  owned("lr-step-every", step_schedule, "--lr-schedule step");
  owned("lr-step-gamma", step_schedule, "--lr-schedule step");
  if (step_schedule && cfg.lr_step_every < 1)
    config_fail("lr-step-every", fmt::format("must be at least 1 with --lr-schedule step (got {})", cfg.lr_step_every),
                "pass e.g. --lr-step-every 1000");
  if (cfg.lr_scaling != "none" && cfg.lr_scaling != "linear" && cfg.lr_scaling != "sqrt")
    config_fail("lr-scaling", fmt::format("unknown rule '{}'", cfg.lr_scaling), "available: none, linear, sqrt");
  owned("lr-base-batch", cfg.lr_scaling != "none", "--lr-scaling linear|sqrt");
}

// "--algo A|B" for the variants that declare `key`, or a declared owner text.
std::string owners_of(const char* key) {
  std::string out;
  for (const Variant* v : variant_flag_owners(key)) {
    for (const VariantFlag& f : v->flags)
      if (std::string_view(f.key) == key && f.owner) return f.owner;
    out += (out.empty() ? "--algo " : "|") + v->name;
  }
  return out;
}

// A variant's knob given to another variant is refused, naming the flag and its owners.
void check_ownership(const RunConfig& cfg, const Variant& self) {
  for (const Variant* v : variant_all())
    for (const VariantFlag& f : v->flags) {
      if (!config_changed(cfg, f.key)) continue;
      const bool mine = std::any_of(self.flags.begin(), self.flags.end(),
                                    [&](const VariantFlag& g) { return std::string(g.key) == f.key; });
      if (mine) continue;
      const std::string owner = owners_of(f.key);
      config_fail(f.key, fmt::format("applies to {} only (got --algo {})", owner, cfg.algo),
                  fmt::format("drop --{} or use {}", f.key, owner));
    }
  if (config_changed(cfg, "period") && !self.takes_period) {
    std::string owner;
    for (const Variant* v : variant_all())
      if (v->takes_period) owner += (owner.empty() ? "--algo " : "|") + v->name;
    config_fail("period",
                fmt::format("applies to {} only (got --algo {}, --optimizer {})", owner, cfg.algo, cfg.optimizer),
                fmt::format("drop --period or use {}", owner));
  }
  if ((!cfg.compress.empty() || cfg.given("compress")) && !self.no_compress.empty()) {
    std::vector<std::string> users;
    for (const Variant* v : variant_all())
      if (v->no_compress.empty()) users.push_back(v->name);
    std::string list;
    for (size_t i = 0; i < users.size(); ++i) list += (i == 0 ? "" : i + 1 == users.size() ? " and " : ", ") + users[i];
    config_fail(
        "compress", fmt::format("applies to the all-reduce variants {}, not {}: {}", list, cfg.algo, self.no_compress),
        self.no_compress_hint.empty() ? "drop --compress, or use one of those variants" : self.no_compress_hint);
  }
}

// The backend row of the run (cluster/backends.hpp): known, the clock flags, and what the
// variant and the compressor need of it, before anything starts.
void check_backend(const RunConfig& cfg, const Variant& self) {
  const uint32_t needs = self.needs ? self.needs(cfg) : 0;
  const Backend& b = backend_check_config(cfg, needs, "--algo " + cfg.algo);
  if (!cfg.compress.empty())
    backend_check_needs(b, compressor_backend_needs(cfg.compress), "--compress " + cfg.compress);
  if (b.device.is_host()) return;
  if (const char* why = self.host_only ? self.host_only(cfg) : nullptr)
    config_fail("algo",
                fmt::format("{} keeps its model in host memory ({}); --backend {} computes on {}", cfg.algo, why,
                            b.name, device_name(b.device)),
                "use a host backend (mpi, sim), or another --algo");
  if (!cfg.compress.empty())
    config_fail("compress",
                fmt::format("runs on host memory only (its selection and encoding have no device implementation); "
                            "--backend {} computes on {}",
                            b.name, device_name(b.device)),
                "drop --compress, or use a host backend (mpi, sim)");
}

}  // namespace

void config_check_timing_only(const RunConfig& cfg) {
  if (!cfg.timing_only || variant_timing_supported(cfg)) return;
  // What of the request is not modelled: --compress, or settings outside the variant's model.
  const Variant& v = variant_get(cfg.algo);
  const std::string what = !cfg.compress.empty() ? " with --compress"
                           : v.timing            ? fmt::format(" with these settings: only {}", v.timing_text)
                                                 : "";
  DSGD_THROW(InputError, "use one of those, or drop --timing-only to simulate with numerics",
             "--timing-only models {} only (got {}{})", variant_timing_supported_text(), cfg.algo, what);
}

namespace {

// A cost-file workload (--workload profile:FILE or chakra:FILE) has times and no numerics: the
// simulator's timing-only path, a step count, and a batch the file can scale to; the file is
// read now (by its prefix: a trace given as profile: is refused, and the reverse).
void check_cost_file(const RunConfig& cfg) {
  if (!cost_file_workload(cfg.workload)) return;
  workload_check_name(cfg.workload);  // the path after profile: or chakra:
  if (!backend_get(cfg.backend).has(cap_virtual_clock) || !cfg.timing_only)
    config_fail("workload",
                fmt::format("{} is a model's costs (a cost file or a Chakra trace): its model is timed, not "
                            "trained, so it runs on the simulator's timing-only path only (got --backend {}{})",
                            cfg.workload, cfg.backend, cfg.timing_only ? "" : " without --timing-only"),
                kCostFileRunHint);
  if (cfg.steps <= 0)
    config_fail("steps", "a cost file or trace has no dataset, so no epoch: give the number of steps",
                kCostFileRunHint);
  cost_file_at_batch(cost_file_load(cfg.workload), cfg.batch);
}

}  // namespace

void config_validate(const RunConfig& cfg) {
  run_config_validate_generic(cfg);
  check_cost_file(cfg);
  if (cfg.workers > kRunConfigMaxComputingWorkers && !cfg.timing_only)
    config_fail(
        "workers",
        fmt::format("must be in 1..{} for workers that compute (got {})", kRunConfigMaxComputingWorkers, cfg.workers),
        fmt::format("use --backend sim --timing-only true for up to {} simulated workers, or fewer workers",
                    kRunConfigMaxWorkers));
  const Variant& self = variant_get(cfg.algo);
  check_backend(cfg, self);
  check_optimizer(cfg);
  check_ownership(cfg, self);
  if (self.validate) self.validate(cfg);
  config_check_timing_only(cfg);  // after the variant's own checks (their messages are more specific)
  run_config_check_ranges(cfg);   // last: the checks above give the more specific messages
}

}  // namespace dsgd
