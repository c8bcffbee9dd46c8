// See optimizer_profile_store.hpp.
#include "results/optimizer_profile_store.hpp"

#include "results/sqlite.hpp"

namespace dsgd {

namespace {

constexpr int kOptimizerProfileSchema = 10;

}  // namespace

void optimizer_profiles_append(Store& store, int64_t calibration_id, const std::vector<OptimizerProfileRow>& rows) {
  if (rows.empty()) return;
  SqlTransaction transaction(store.handle());
  SqlStatement stmt(store.handle(),
                    "INSERT INTO optimizer_profiles (calibration_id, workload, dataset, optimizer, params, opt_s) "
                    "VALUES (?, ?, ?, ?, ?, ?)");
  for (const OptimizerProfileRow& r : rows) {
    stmt.bind_all(calibration_id, r.workload, r.dataset, r.optimizer, r.params, r.opt_s);
    stmt.run();
  }
  transaction.commit();
}

std::vector<OptimizerProfileRow> optimizer_profiles_get(const Store& store, int64_t calibration_id) {
  std::vector<OptimizerProfileRow> rows;
  if (store.user_version() < kOptimizerProfileSchema) return rows;
  SqlStatement stmt(store.handle(),
                    "SELECT workload, dataset, optimizer, params, opt_s FROM optimizer_profiles "
                    "WHERE calibration_id = ? ORDER BY workload, dataset, optimizer");
  stmt.bind(1, calibration_id);
  while (stmt.step()) {
    OptimizerProfileRow& r = rows.emplace_back();
    r.workload = stmt.column_text(0);
    r.dataset = stmt.column_text(1);
    r.optimizer = stmt.column_text(2);
    r.params = stmt.column_int64(3);
    r.opt_s = stmt.column_real(4);
  }
  return rows;
}

}  // namespace dsgd
