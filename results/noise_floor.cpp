// See noise_floor.hpp.
#include "results/noise_floor.hpp"

#include <cmath>

#include "core/system_info.hpp"
#include "results/sqlite.hpp"

namespace dsgd {

namespace {
constexpr int noise_floor_schema = 17;
constexpr size_t kMinRuns = 3;
}  // namespace

std::vector<NoiseFloor> noise_floor_measure(const std::vector<RunWithSummary>& runs,
                                            const std::vector<std::string>& metrics) {
  std::vector<NoiseFloor> out;
  for (const std::string& metric : metrics) {
    HistoryOptions options;
    options.metric = metric;
    for (const HistorySeries& s : history_build(runs, options)) {
      if (s.points.empty()) continue;
      const HistoryPoint& p = s.points.back();
      if (p.values.size() < kMinRuns) continue;
      double mean = 0, var = 0;
      for (double v : p.values) mean += v;
      mean /= double(p.values.size());
      for (double v : p.values) var += (v - mean) * (v - mean);
      if (!(mean > 0)) continue;  // a relative spread needs a positive scale
      NoiseFloor& f = out.emplace_back();
      f.series = s.label;
      f.metric = s.metric;
      f.machine = s.machine;
      f.commit = p.commit;
      f.cv = std::sqrt(var / double(p.values.size() - 1)) / mean;
      f.runs = p.values.size();
    }
  }
  return out;
}

void noise_floor_store(Store& store, const std::vector<NoiseFloor>& floors) {
  sqlite3* db = store.handle();
  const std::string now = system_time_iso8601();
  SqlTransaction transaction(db);
  SqlStatement upsert(db,
                      "INSERT INTO noise_floors (series, metric, machine, git_commit, cv, runs, created_at) "
                      "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (series, metric, machine) DO UPDATE SET "
                      "git_commit = excluded.git_commit, cv = excluded.cv, runs = excluded.runs, "
                      "created_at = excluded.created_at");
  for (const NoiseFloor& f : floors) {
    upsert.reset();
    upsert.bind_all(f.series, f.metric, f.machine, f.commit, f.cv, static_cast<int64_t>(f.runs), now);
    upsert.run();
  }
  transaction.commit();
}

std::vector<NoiseFloor> noise_floors_list(const Store& store) {
  std::vector<NoiseFloor> out;
  if (store.user_version() < noise_floor_schema) return out;
  SqlStatement stmt(store.handle(),
                    "SELECT series, metric, machine, git_commit, cv, runs, created_at FROM noise_floors ORDER BY id");
  while (stmt.step()) {
    NoiseFloor& f = out.emplace_back();
    f.series = stmt.column_text(0);
    f.metric = stmt.column_text(1);
    f.machine = stmt.column_text(2);
    f.commit = stmt.column_text(3);
    f.cv = stmt.column_real(4);
    f.runs = static_cast<size_t>(stmt.column_int64(5));
    f.created_at = stmt.column_text(6);
  }
  return out;
}

double noise_floor_of_median(double cv, size_t k) {
  const double n = double(k == 0 ? 1 : k);
  return k <= 2 ? 2 * cv / std::sqrt(n) : 2 * cv * std::sqrt(M_PI / (2 * n));
}

}  // namespace dsgd
