// See prior_store.hpp.
#include "tuner/prior_store.hpp"

#include "core/system_info.hpp"
#include "results/sqlite.hpp"

namespace dsgd {

void prior_probe_store(Store& store, int64_t session_id, const PriorProbe& probe) {
  SqlStatement stmt(store.handle(),
                    "INSERT OR REPLACE INTO tune_probes (session_id, created_at, probe_json, cost_s, wall_s) "
                    "VALUES (?, ?, ?, ?, ?)");
  stmt.bind_all(session_id, system_time_iso8601(), prior_probe_to_json(probe).dump(), probe.cost_s, probe.wall_s);
  stmt.run();
}

std::optional<PriorProbe> prior_probe_load(const Store& store, int64_t session_id) {
  if (!sql_table_exists(store.handle(), "tune_probes")) return std::nullopt;
  SqlStatement stmt(store.handle(), "SELECT probe_json FROM tune_probes WHERE session_id = ?");
  stmt.bind(1, session_id);
  if (!stmt.step()) return std::nullopt;
  return prior_probe_from_json(nlohmann::json::parse(stmt.column_text(0)));
}

}  // namespace dsgd
