// See run_json.hpp.
#include "results/run_json.hpp"

namespace dsgd {

namespace {

template <typename T>
nlohmann::json opt(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

nlohmann::json run_to_json(const RunWithSummary& rs) {
  const RunRecord& r = rs.run;
  nlohmann::json j;
  j["run_id"] = r.id;
  j["status"] = r.status;
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
  const Summary* s = rs.summary ? &*rs.summary : nullptr;
  auto num = [&](double Summary::*field) { return s ? nlohmann::json(s->*field) : nlohmann::json(nullptr); };
  j["throughput_samples_per_s"] = num(&Summary::throughput_samples_per_s);
  j["step_time_s"] = num(&Summary::step_time_s);
  j["compute_s"] = num(&Summary::compute_s);
  j["fwd_s"] = num(&Summary::fwd_s);
  j["bwd_s"] = num(&Summary::bwd_s);
  j["opt_s"] = num(&Summary::opt_s);
  j["comm_s"] = num(&Summary::comm_s);
  j["wait_s"] = num(&Summary::wait_s);
  j["overlap_s"] = num(&Summary::overlap_s);
  j["data_s"] = num(&Summary::data_s);
  j["injected_s"] = num(&Summary::injected_s);
  j["bytes_sent_per_step"] = num(&Summary::bytes_sent_per_step);
  j["timed_steps"] = s ? nlohmann::json(s->timed_steps) : nlohmann::json(nullptr);
  j["final_train_loss"] = s ? opt(s->final_train_loss) : nlohmann::json(nullptr);
  j["final_test_loss"] = s ? opt(s->final_test_loss) : nlohmann::json(nullptr);
  j["final_test_acc"] = s ? opt(s->final_test_acc) : nlohmann::json(nullptr);
  j["time_to_target_s"] = s ? opt(s->time_to_target_s) : nlohmann::json(nullptr);
  j["steps_to_target"] = s ? opt(s->steps_to_target) : nlohmann::json(nullptr);
  j["staleness_mean"] = s ? opt(s->staleness_mean) : nlohmann::json(nullptr);
  j["staleness_max"] = s ? opt(s->staleness_max) : nlohmann::json(nullptr);
  j["model_gflops"] = s ? opt(s->model_gflops) : nlohmann::json(nullptr);
  j["peak_gflops"] = s ? opt(s->peak_gflops) : nlohmann::json(nullptr);
  j["mfu"] = s ? opt(s->mfu) : nlohmann::json(nullptr);
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
