// See run_record.hpp.
#include "engine/run_record.hpp"

#include "algorithms/optimizer.hpp"
#include "core/system_info.hpp"

namespace dsgd {

RunRecord run_record_from_config(const RunConfig& cfg, int workers, int64_t steps, int64_t warmup, int64_t eval_every,
                                 const std::string& library_version, nlohmann::json& config) {
  const SystemInfo sys = system_info_read();
  RunRecord r;
  r.status = RunStatus::run_running;
  r.workload = cfg.workload;
  r.dataset = cfg.dataset;
  r.algorithm = cfg.algo;
  r.backend = cfg.backend;
  r.workers = workers;
  r.batch = cfg.batch;
  r.period = cfg.period;
  r.steps = steps;
  r.warmup = warmup;
  r.seed = cfg.seed;
  r.tag = cfg.tag;
  r.target = cfg.target;
  config = run_config_to_json(cfg);
  config["lr"] = optimizer_base_lr(cfg);  // the effective rate when --lr was not given
  config["steps"] = steps;
  config["warmup"] = warmup;
  config["eval-every"] = eval_every;
  r.config_json = config.dump();
  r.tool_version = sys.tool_version;
  r.git_commit = sys.git_commit;
  r.host = sys.host;
  r.cpu_model = sys.cpu_model;
  r.mpi_version = library_version;
  r.build_type = sys.build_type;
  return r;
}

}  // namespace dsgd
