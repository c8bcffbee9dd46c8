// See run_json.hpp. The summary keys are the stored fields of summary_fields().
#include "results/run_json.hpp"

#include "results/row_fields.hpp"

namespace dsgd {

nlohmann::json run_to_json(const RunWithSummary& rs) {
  const RunRecord& r = rs.run;
  nlohmann::json j;
  j["run_id"] = r.id;
  j["status"] = run_status_text(r.status);
  j["created_at"] = r.created_at;
  j["finished_at"] = r.finished_at.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.finished_at);
  j["workload"] = r.workload;
  j["dataset"] = r.dataset;
  j["algorithm"] = r.algorithm;
  j["backend"] = r.backend;
  j["workers"] = r.workers;
  j["batch"] = r.batch;
  j["period"] = r.period;
  j["steps"] = r.steps;
  j["warmup"] = r.warmup;
  j["seed"] = r.seed;
  j["tag"] = r.tag;
  j["target"] = r.target.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.target);
  if (rs.summary) {
    j.update(row_to_json(summary_fields(), *rs.summary));
  } else {
    for (const RowField<Summary>& f : summary_fields())
      if (f.stored()) j[f.column] = nullptr;
  }
  j["error"] = r.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.error);
  nlohmann::json context;
  context["tool_version"] = r.tool_version;
  context["git_commit"] = r.git_commit;
  context["host"] = r.host;
  context["cpu_model"] = r.cpu_model;
  context["mpi_version"] = r.mpi_version;
  context["build_type"] = r.build_type;
  j["context"] = context;
  j["config"] = r.config_json.empty() ? nlohmann::json(nullptr) : nlohmann::json::parse(r.config_json, nullptr, false);
  return j;
}

}  // namespace dsgd
