// The stored identity of a run (results' RunRecord) built from its configuration, the same
// way for every backend: real runs (trainer.cpp) and simulated ones (sim_run.cpp) differ
// only in the extra keys they add to the returned config JSON before storing it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "core/run_config.hpp"
#include "results/store.hpp"

namespace dsgd {

// A RunRecord with status "running", the configuration's identity fields, the effective
// step counts, this host's system info and `library_version` as mpi_version. `config`
// receives run_config_to_json(cfg) with the effective steps, warmup and eval-every; the
// caller adds its keys and stores config.dump() in record.config_json.
RunRecord run_record_from_config(const RunConfig& cfg, int workers, int64_t steps, int64_t warmup, int64_t eval_every,
                                 const std::string& library_version, nlohmann::json& config);

}  // namespace dsgd
