// See validation.hpp.
#include "engine/validation.hpp"

#include <fmt/format.h>

#include <cmath>

#include "algorithms/config_check.hpp"
#include "cluster/backends.hpp"
#include "core/errors.hpp"
#include "core/system_info.hpp"
#include "engine/child_run.hpp"
#include "results/row_fields.hpp"

namespace dsgd {

RunConfig validation_config(RunConfig cfg, const std::string& source, ValidationObserver& observer) {
  if (backend_get(cfg.backend).has(cap_virtual_clock) || cfg.timing_only || cfg.profile_from != 0 ||
      cfg.compute_scale != 1.0)
    DSGD_THROW(InputError, "describe the real run in the file; validate adds the simulated one",
               "{}: validate compares a real run with its simulation; drop backend/timing-only/profile-from/"
               "compute-scale",
               source);
  if (cfg.workers != 2 && cfg.workers != 1)
    observer.note(fmt::format("validate runs 2 MPI ranks against 2 simulated workers (the file says {})", cfg.workers));
  cfg.backend = "mpi";
  cfg.workers = 2;
  cfg.save_params.clear();
  config_validate(cfg);
  return cfg;
}

ValidationRecord validation_run(const RunConfig& cfg, Store& store, ValidationObserver& observer) {
  // Without this host's fabric the prediction would take its collectives as free (or, with an
  // emulated link, the measured run would add the link to the real fabric instead of
  // replacing it): measure the fabric first, a few seconds.
  const bool fabric = !store.allreduce_fit_latest(system_info_read().host).has_value();
  const int total = fabric ? 4 : 3;
  int index = 0;
  if (fabric) {
    observer.note(
        fmt::format("no calibrated fabric of this host in {}: measuring it first, so the prediction does "
                    "not take communication as free",
                    cfg.db));
    observer.child_begin("fabric", "calibrate --workers 2 --quick", ++index, total);
    child_calibrate_fabric(cfg.db, 2, [&](const std::string& line) { observer.child_line(line); });
  }
  RunConfig profile = cfg;
  profile.workers = 1;
  profile.straggler.clear();
  profile.bandwidth.clear();
  profile.latency.clear();
  profile.inter_bandwidth.clear();
  profile.inter_latency.clear();
  profile.topology = "complete";
  profile.target.clear();
  profile.tag = "validate:profile";
  RunConfig measured = cfg;
  measured.tag = "validate:measured";
  auto child = [&](const RunConfig& c, const char* role, const char* what) {
    observer.child_begin(role, what, ++index, total);
    return child_run_config(c, fmt::format("validate: {}", role), "",
                            [&](const std::string& line) { observer.child_line(line); });
  };
  ValidationRecord v;
  v.profile_run_id = child(profile, "profile", "1 worker, no stragglers or emulation");
  v.measured_run_id = child(measured, "measured", "mpi, 2 ranks");
  RunConfig simulated = cfg;
  simulated.backend = "sim";
  simulated.profile_from = v.profile_run_id;
  simulated.native_floor = true;  // the measured collectives last at least the native fabric's time
  simulated.tag = "validate:simulated";
  v.simulated_run_id = child(simulated, "predicted", "sim, 2 workers");

  const RunWithSummary m = store.run_get(v.measured_run_id);
  const RunWithSummary s = store.run_get(v.simulated_run_id);
  if (!m.summary || !s.summary) DSGD_THROW(Error, "", "validate: a run has no summary");
  for (const char* name : {"step_time_s", "compute_s", "comm_s", "wait_s", "injected_s", "throughput_samples_per_s"}) {
    const RowField<Summary>& f = *row_field_find(summary_fields(), name);
    const double a = row_field_value(f, *m.summary).value_or(NAN);
    const double b = row_field_value(f, *s.summary).value_or(NAN);
    v.metrics.push_back(ValidationMetric{name, a, b, validation_rel_error(a, b)});
  }
  v.host = system_info_read().host;
  v.config_json = run_config_to_json(cfg).dump();
  v.id = validation_store(store, v);
  v.created_at = validations_list(store, 1).front().created_at;
  return v;
}

}  // namespace dsgd
