// See validation.hpp.
#include "engine/validation.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "algorithms/config_check.hpp"
#include "algorithms/optimizer.hpp"
#include "algorithms/variant.hpp"
#include "cluster/backends.hpp"
#include "cluster/measured_fabric.hpp"
#include "core/errors.hpp"
#include "core/system_info.hpp"
#include "engine/child_run.hpp"
#include "engine/interrupt.hpp"
#include "engine/sim_run.hpp"
#include "results/row_fields.hpp"

namespace dsgd {

RunConfig validation_config(RunConfig cfg, const std::string& source, ValidationObserver& observer) {
  if (backend_get(cfg.backend).has(cap_virtual_clock) || cfg.timing_only || cfg.profile_from != 0 ||
      cfg.compute_scale != 1.0)
    DSGD_THROW(InputError, "describe the real run in the file; validate adds the simulated one",
               "{}: validate compares a real run with its simulation; drop backend/timing-only/profile-from/"
               "compute-scale",
               source);
  if (cfg.workers < 2) {
    observer.note(
        fmt::format("validate needs at least 2 workers (the file says {}): it runs 2 MPI ranks against 2 "
                    "simulated workers",
                    cfg.workers));
    cfg.workers = 2;
  }
  const int cores = system_info_read().cores;
  if (cfg.hostfile.empty() && cores > 0 && cfg.workers > cores)
    DSGD_THROW(InputError,
               fmt::format("validate with --workers {} or fewer here, or on a machine with more cores", cores),
               "{}: {} workers on this machine's {} cores: the simulator gives every worker its own device, and "
               "ranks that time-share a core are not what it models, so the measured run could not check it",
               source, cfg.workers, cores);
  cfg.backend = "mpi";
  cfg.save_params.clear();
  config_validate(cfg);
  return cfg;
}

bool validation_profile_colocated(const RunConfig& cfg) {
  const Variant& v = variant_get(cfg.algo);
  return std::none_of(v.flags.begin(), v.flags.end(),
                      [](const VariantFlag& f) { return std::string_view(f.key) == "local-threads"; });
}

RunConfig validation_profile_config(const RunConfig& cfg) {
  RunConfig p;
  if (validation_profile_colocated(cfg)) {
    // Every field but the variant's and the cluster's: the same workload, data, batch, steps,
    // seed, threads and optimizer (resolved, so diloco's AdamW stays AdamW under localsgd).
    static const std::vector<std::string> kCluster = {
        "algo",           "period",  "compress",        "topology",      "straggler",
        "bandwidth",      "latency", "inter-bandwidth", "inter-latency", "target",
        "stop-at-target", "tag",     "profile-from",    "save-params"};
    for (const RunConfigField& f : run_config_fields()) {
      const std::string key = f.key;
      if (std::find(kCluster.begin(), kCluster.end(), key) != kCluster.end()) continue;
      if (!variant_flag_owners(key).empty()) continue;
      run_config_copy_field(p, cfg, f);
    }
    p.optimizer = optimizer_resolve_name(cfg);
    p.algo = "localsgd";
    p.period = 1000000;  // the largest period: no average within any run it can time
    p.workers = cfg.workers;
  } else {
    // Variants with their own threads per worker: one worker alone, the variant's own step.
    p = cfg;
    p.workers = 1;
    p.straggler.clear();
    p.bandwidth.clear();
    p.latency.clear();
    p.inter_bandwidth.clear();
    p.inter_latency.clear();
    p.topology = "complete";
    p.target.clear();
  }
  p.backend = "mpi";
  p.db = cfg.db;
  p.tag = "validate:profile";
  config_validate(p);
  return p;
}

std::vector<std::string> validation_notes(const ValidationRecord& v) {
  auto find = [&](std::string_view name) -> const ValidationMetric* {
    for (const ValidationMetric& m : v.metrics)
      if (m.metric == name) return &m;
    return nullptr;
  };
  std::vector<std::string> notes;
  if (const ValidationMetric* f = find(kValidationFabricAllreduce);
      f && f->rel_error && *f->rel_error > kValidationSplitTarget)
    notes.push_back(fmt::format(
        "the host's fabric moved since the calibration the prediction read: an all-reduce of the model's size took "
        "{:.4g} us right after the measured run, {:.4g} us in that calibration ({:.0f} % apart). The comm's error "
        "includes that; on a host whose fabric changes state over minutes, calibrate again right before predicting",
        1e6 * f->measured, 1e6 * f->predicted, 100 * *f->rel_error));
  const ValidationMetric* step = find("step_time_s");
  const ValidationMetric* compute = find("compute_s");
  if (compute && compute->rel_error && *compute->rel_error > kValidationComputeNoise)
    notes.push_back(fmt::format(
        "compute is {:.0f} % off: the measured ranks computed {:.4g} ms per step, the prediction from their "
        "profile run (the same compute side by side) {:.4g} ms. The host's speed changed between the runs "
        "(its load, another tenant) or this configuration slows compute; the step's error includes that, the "
        "prediction from the measured run's own compute does not (`dsgd-bench show RUN` gives each run's host load "
        "and CPU steal)",
        100 * *compute->rel_error, 1e3 * compute->measured, 1e3 * compute->predicted));
  if (const ValidationMetric* own = find(kValidationOwnComputeStep); own && own->rel_error)
    notes.push_back(fmt::format(
        "from the measured run's own compute (each worker its rank's, step by step: the host's speed between the "
        "runs and its ranks' different speeds taken out), the predicted step is {:.4g} ms: {:.1f} % off",
        1e3 * own->predicted, 100 * *own->rel_error));
  if (const ValidationMetric* se = find(kValidationStepStandardError);
      se && step && step->rel_error && step->measured > 0 && step->predicted > 0 && se->measured > 0) {
    const double a = se->measured / step->measured, b = se->predicted / step->predicted;
    if (*step->rel_error <= 2 * std::hypot(a, b))
      notes.push_back(fmt::format(
          "the step's {:.1f} % error is within the two runs' own sampling noise: their mean steps are ±{:.1f} % "
          "(measured) and ±{:.1f} % (predicted), standard errors over their timed steps (batch means); runs with "
          "more steps would tell them apart",
          100 * *step->rel_error, 100 * a, 100 * b));
    else if (*step->rel_error > kValidationStepTarget)
      notes.push_back(fmt::format(
          "the runs' mean steps are ±{:.1f} % (measured) and ±{:.1f} % (predicted), standard errors over their "
          "timed steps (batch means): the step's {:.1f} % error is beyond that noise",
          100 * a, 100 * b, 100 * *step->rel_error));
  }
  if (const ValidationMetric* seeds = find(kValidationSeedSpread); seeds && step && seeds->measured > 0) {
    const double band = (seeds->predicted - seeds->measured) / seeds->measured;
    const bool within = step->measured >= seeds->measured && step->measured <= seeds->predicted;
    notes.push_back(fmt::format(
        "the prediction moves by {:.1f} % between three seeds of the simulated run ({:.4g} to {:.4g} ms): a race "
        "for the one-sided windows' locks whose outcome turns on microseconds of compute; {}",
        100 * band, 1e3 * seeds->measured, 1e3 * seeds->predicted,
        within ? "the measured step is within that band"
               : "read the step's error against that band (the measured step is outside it)"));
  }
  if (const ValidationMetric* spread = find(kValidationRankSpread);
      spread && spread->measured > 1 + kValidationComputeNoise)
    notes.push_back(fmt::format(
        "the measured ranks computed at different speeds: the slowest rank's compute per step was {:.0f} % above "
        "the fastest's for the run (the prediction gives every worker the same compute; the one from the measured "
        "run's own compute gives each its rank's). A host whose cores run "
        "at different speeds or are shared with another tenant; the others wait for that rank at every "
        "synchronisation, and the measured wait includes it",
        100 * (spread->measured - 1)));
  if (const ValidationMetric* outside = find(kValidationOutsidePhases);
      outside && step && step->measured > 0 &&
      std::abs(outside->predicted - outside->measured) >= kValidationSmallShare * step->measured)
    notes.push_back(fmt::format(
        "outside compute, communication and waiting (the variant's copies and mixes of the model, its bookkeeping) "
        "the measured ranks spent {:.4g} ms per step, the prediction {:.4g} ms: {:.2g} % of the measured step. The "
        "simulator charges each pass over the model the profile's model pass, timed with the model in the caches; on "
        "one "
        "host a pass beside an exchange (into a buffer the other rank's core just read) costs about twice that",
        1e3 * outside->measured, 1e3 * outside->predicted,
        100 * std::abs(outside->predicted - outside->measured) / step->measured));
  if (step && step->measured > 0)
    for (const char* name : {"comm_s", "wait_s"}) {
      const ValidationMetric* m = find(name);
      if (!m || !m->rel_error || *m->rel_error <= kValidationSplitTarget ||
          m->measured >= kValidationSmallShare * step->measured ||
          std::abs(m->predicted - m->measured) >= kValidationSmallShare * step->measured)
        continue;
      notes.push_back(fmt::format("{} is {:.2g} % of the measured step: its {:.0f} % error moves the step by {:.2g} %",
                                  std::string_view(name).substr(0, std::string_view(name).size() - 2),
                                  100 * m->measured / step->measured, 100 * *m->rel_error,
                                  100 * std::abs(m->predicted - m->measured) / step->measured));
    }
  return notes;
}

double validation_outside_phases_s(const Summary& s) {
  return std::max(0.0, s.step_time_s - s.compute_s - s.data_s - s.comm_s - s.wait_s - s.injected_s);
}

bool validation_prediction_races(const RunConfig& cfg) {
  const Variant& variant = variant_get(cfg.algo);
  return variant.needs && (variant.needs(cfg) & cap_one_sided_windows) != 0;
}

double validation_compute_rank_spread(const std::vector<StepRow>& steps) {
  std::map<int, std::pair<double, int64_t>> per_rank;  // compute sum, steps
  for (const StepRow& row : steps)
    if (row.timed && row.fwd_s + row.bwd_s > 0) {
      auto& [sum, n] = per_rank[row.rank];
      sum += row.fwd_s + row.bwd_s;
      ++n;
    }
  if (per_rank.size() < 2) return 0;
  double lo = INFINITY, hi = 0;
  for (const auto& [rank, acc] : per_rank) {
    const double mean = acc.first / static_cast<double>(acc.second);
    lo = std::min(lo, mean);
    hi = std::max(hi, mean);
  }
  return lo > 0 ? hi / lo : 0;
}

namespace {

// The all-reduce of `bytes` as the probe's calibration (one size) measured it, back to back or
// after compute; empty when it has no such row.
std::optional<double> probe_allreduce_s(const std::string& db, int64_t bytes, bool after_compute) {
  const Store probe = Store::open_readonly(db);
  const std::optional<int64_t> id = probe.calibration_latest();
  if (!id) return std::nullopt;
  const std::string op = after_compute ? "allreduce_after_compute" : "allreduce";
  for (const CollectiveRow& row : probe.collectives_get(*id))
    if (row.op == op && row.bytes == bytes) return row.time_s;
  return std::nullopt;
}

// The all-reduce of `bytes` on the curve of the host's newest calibration in `store` (the one
// the prediction read), back to back or after compute; empty without one of `workers` ranks.
std::optional<double> calibrated_allreduce_s(const Store& store, int64_t bytes, bool after_compute, int workers) {
  const std::optional<AllreduceFit> fit = store.allreduce_fit_latest(system_info_read().host);
  if (!fit || fit->workers != workers) return std::nullopt;
  MeasuredFabric fabric = sim_calibrated_fabric(store, *fit);
  if (after_compute) fabric = measured_fabric_after_compute(fabric);
  return measured_fabric_time(fabric, CollKind::coll_allreduce, static_cast<double>(bytes));
}

void remove_database(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
}

// The fabric check's temporary database: removed when the validation is done with it, or
// leaves by an error.
struct ProbeDatabase {
  std::string path;
  ~ProbeDatabase() {
    if (!path.empty()) remove_database(path);
  }
};

}  // namespace

bool validation_checks_fabric(const RunConfig& cfg) {
  return cfg.bandwidth.empty() && cfg.fabric.empty();
}

ValidationRecord validation_run(const RunConfig& cfg, Store& store, ValidationObserver& observer) {
  // Without this host's fabric the prediction would take its collectives as free (or, with an
  // emulated link, the measured run would add the link to the real fabric instead of
  // replacing it): measure the fabric first, a few seconds.
  const bool fabric = !store.allreduce_fit_latest(system_info_read().host).has_value();
  const bool races = validation_prediction_races(cfg);
  const bool check_fabric = validation_checks_fabric(cfg);
  const int total = (fabric ? 5 : 4) + (races ? 2 : 0) + (check_fabric ? 1 : 0);
  int index = 0;
  if (fabric) {
    observer.note(
        fmt::format("no calibrated fabric of this host in {}: measuring it first, so the prediction does "
                    "not take communication as free",
                    cfg.db));
    observer.child_begin(
        "fabric",
        fmt::format("calibrate --workers {} --quick --max-size 4MiB --workload {}", cfg.workers, cfg.workload), ++index,
        total);
    child_calibrate_fabric(cfg.db, static_cast<int>(cfg.workers), cfg,
                           [&](const std::string& line) { observer.child_line(line); });
  }
  const RunConfig profile = validation_profile_config(cfg);
  RunConfig measured = cfg;
  measured.tag = "validate:measured";
  auto child = [&](const RunConfig& c, const char* role, const std::string& what) {
    observer.child_begin(role, what, ++index, total);
    return child_run_config(c, fmt::format("validate: {}", role), "",
                            [&](const std::string& line) { observer.child_line(line); });
  };
  ValidationRecord v;
  v.profile_run_id =
      child(profile, "profile",
            profile.workers > 1
                ? fmt::format("{} ranks side by side, no communication, stragglers or emulation", profile.workers)
                : std::string("1 worker, no stragglers or emulation"));
  v.measured_run_id = child(measured, "measured", fmt::format("mpi, {} ranks", cfg.workers));
  // The host's fabric timed again right after the measured run, at the model's size (a host
  // whose fabric moves between states over minutes: the prediction reads the calibration's).
  // A diagnosis: when it cannot be made, the validation stands without it and says why.
  ProbeDatabase probe;
  bool probed = false;
  int64_t model_bytes = 0;
  if (check_fabric) {
    const nlohmann::json mc = nlohmann::json::parse(store.run_get(v.measured_run_id).run.config_json, nullptr, false);
    model_bytes = mc.is_object() ? mc.value("model-bytes", int64_t(0)) : 0;
    probe.path =
        (std::filesystem::temp_directory_path() / fmt::format("dsgd-validate-fabric-{}.db", getpid())).string();
    remove_database(probe.path);
    observer.child_begin("fabric now",
                         fmt::format("calibrate --workers {} --quick at the model's {} B, beside the measured run",
                                     cfg.workers, model_bytes),
                         ++index, total);
    try {
      if (model_bytes <= 0) DSGD_THROW(Error, "", "the measured run does not record its model's size");
      child_calibrate_fabric(
          probe.path, static_cast<int>(cfg.workers), cfg, [&](const std::string& line) { observer.child_line(line); },
          fmt::format("--min-size {} --max-size {}", model_bytes, model_bytes));
      probed = true;
    } catch (const Error& e) {
      interrupt_yield_to_watcher();
      observer.note(fmt::format("no check of the fabric beside the measured run: {}", e.what()));
    }
  }
  RunConfig simulated = cfg;
  simulated.backend = "sim";
  simulated.profile_from = v.profile_run_id;
  simulated.native_floor = true;  // the measured collectives last at least the native fabric's time
  simulated.tag = "validate:simulated";
  v.simulated_run_id = child(simulated, "predicted", fmt::format("sim, {} workers", cfg.workers));
  // The same prediction from the measured run's own compute: what is left of the step's error
  // once the host's speed between the runs is taken out (the simulator's communication, wait
  // and passes).
  RunConfig replayed = simulated;
  replayed.profile_from = v.measured_run_id;
  // Each simulated worker computes at each step what its measured rank did (a rank slower for
  // the whole run, and the ranks' common drift, included), unless the configuration turned
  // the jitter off.
  if (replayed.compute_jitter == "profile") replayed.compute_jitter = "replay";
  replayed.tag = "validate:own-compute";
  // A diagnosis: when it cannot be made, the validation stands without it and says why.
  std::optional<RunWithSummary> r;
  try {
    r = store.run_get(
        child(replayed, "own compute", fmt::format("sim, {} workers, the measured run's compute", cfg.workers)));
  } catch (const Error& e) {
    interrupt_yield_to_watcher();  // a Ctrl-C that ended the child ends validate as well
    observer.note(fmt::format("no prediction from the measured run's own compute: {}", e.what()));
  }

  const RunWithSummary m = store.run_get(v.measured_run_id);
  const RunWithSummary s = store.run_get(v.simulated_run_id);
  if (!m.summary || !s.summary) DSGD_THROW(Error, "", "validate: a run has no summary");
  // The prediction's own spread where it is a race: the same simulated run at two more seeds.
  double seed_low = s.summary->step_time_s, seed_high = seed_low;
  if (races)
    for (int64_t k = 1; k <= 2; ++k) {
      RunConfig seeded = simulated;
      seeded.seed = cfg.seed + k;
      seeded.tag = "validate:seed";
      const RunWithSummary other = store.run_get(
          child(seeded, "seed", fmt::format("sim, {} workers, seed {} (the race's spread)", cfg.workers, seeded.seed)));
      if (!other.summary) DSGD_THROW(Error, "", "validate: run {} has no summary", other.run.id);
      seed_low = std::min(seed_low, other.summary->step_time_s);
      seed_high = std::max(seed_high, other.summary->step_time_s);
    }
  auto add = [&](const char* name, const Summary& predicted, const std::string& stored_as) {
    const RowField<Summary>& f = *row_field_find(summary_fields(), name);
    const double a = row_field_value(f, *m.summary).value_or(NAN);
    const double b = row_field_value(f, predicted).value_or(NAN);
    v.metrics.push_back(ValidationMetric{stored_as, a, b, validation_rel_error(a, b)});
  };
  for (const char* name : {"step_time_s", "compute_s", "comm_s", "wait_s", "injected_s", "throughput_samples_per_s"})
    add(name, *s.summary, name);
  // The step outside every phase: a variant's copies and mixes of the model (model passes),
  // its bookkeeping; the simulator charges its profile's model pass for the passes.
  const double outside_m = validation_outside_phases_s(*m.summary), outside_s = validation_outside_phases_s(*s.summary);
  v.metrics.push_back(
      ValidationMetric{kValidationOutsidePhases, outside_m, outside_s, validation_rel_error(outside_m, outside_s)});
  if (r && r->summary) add("step_time_s", *r->summary, kValidationOwnComputeStep);
  // The measured and simulated runs' slowest rank's compute over the fastest's.
  const double spread_m = validation_compute_rank_spread(store.steps_get(v.measured_run_id));
  const double spread_s = validation_compute_rank_spread(store.steps_get(v.simulated_run_id));
  if (spread_m > 0)
    v.metrics.push_back(
        ValidationMetric{kValidationRankSpread, spread_m, spread_s, validation_rel_error(spread_m, spread_s)});
  // Each run's own sampling noise (its summary's): how far apart the two means may lie by chance.
  v.metrics.push_back(ValidationMetric{kValidationStepStandardError, m.summary->step_time_se_s.value_or(0.0),
                                       s.summary->step_time_se_s.value_or(0.0), std::nullopt});
  if (races) v.metrics.push_back(ValidationMetric{kValidationSeedSpread, seed_low, seed_high, std::nullopt});
  if (probed) {
    // Back to back or after compute, as the prediction read its curves (its stored details).
    const nlohmann::json sc = nlohmann::json::parse(s.run.config_json, nullptr, false);
    const bool after =
        sc.is_object() && sc.value("backend-details", nlohmann::json::object()).value("network-after-compute", false);
    const std::optional<double> now = probe_allreduce_s(probe.path, model_bytes, after);
    const std::optional<double> then = calibrated_allreduce_s(store, model_bytes, after, static_cast<int>(cfg.workers));
    if (now && then)
      v.metrics.push_back(ValidationMetric{kValidationFabricAllreduce, *now, *then, validation_rel_error(*now, *then)});
    else
      observer.note("no check of the fabric beside the measured run: no all-reduce of the model's size to compare");
  }
  v.host = system_info_read().host;
  v.config_json = run_config_to_json(cfg).dump();
  v.id = validation_store(store, v);
  v.created_at = validations_list(store, 1).front().created_at;
  return v;
}

}  // namespace dsgd
