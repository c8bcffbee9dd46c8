// See history_import.hpp.
#include "results/history_import.hpp"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "core/errors.hpp"
#include "core/system_info.hpp"
#include "results/sqlite.hpp"

namespace dsgd {

namespace {

constexpr int import_schema = 17;  // first schema version with imported_points

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// One CSV line's fields: commas separate, a field in double quotes may hold commas and "" for
// a quote. Throws on an unterminated quote.
std::vector<std::string> csv_fields(const std::string& line, const std::string& where) {
  std::vector<std::string> out;
  std::string field;
  bool quoted = false, was_quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"' && trim(field).empty()) {
      quoted = was_quoted = true;
      field.clear();
    } else if (c == ',') {
      out.push_back(was_quoted ? field : trim(field));
      field.clear();
      was_quoted = false;
    } else {
      field += c;
    }
  }
  if (quoted) DSGD_THROW(InputError, "close the quoted field", "{}: a quoted field is not closed", where);
  out.push_back(was_quoted ? field : trim(field));
  return out;
}

std::optional<double> finite_number(const std::string& text) {
  if (text.empty()) return std::nullopt;
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used != text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::vector<ImportedPoint> parse_csv(const std::string& text, const std::string& name, const ImportOptions& o) {
  const std::string format_hint =
      "each line: series,commit,date,value[,unit] (a header line and '#' comments are allowed)";
  std::vector<ImportedPoint> out;
  size_t line_no = 0, begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(begin, end - begin);
    begin = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (trim(line).empty() || trim(line)[0] == '#') continue;
    const std::string where = fmt::format("{}:{}", name, line_no);
    std::vector<std::string> f = csv_fields(line, where);
    if (out.empty() && lower(f[0]) == "series" && f.size() >= 4 && lower(f[3]) == "value") continue;  // header
    if (f.size() < 4 || f.size() > 5)
      DSGD_THROW(InputError, format_hint, "{}: {} field(s), expected 4 or 5", where, f.size());
    ImportedPoint p;
    p.series = f[0];
    p.commit = f[1];
    p.date = f[2];
    if (p.series.empty() || p.commit.empty())
      DSGD_THROW(InputError, format_hint, "{}: the {} is empty", where, p.series.empty() ? "series" : "commit");
    const std::optional<double> v = finite_number(f[3]);
    if (!v) DSGD_THROW(InputError, format_hint, "{}: value '{}' is not a finite number", where, f[3]);
    p.value = *v;
    if (f.size() == 5) p.unit = f[4];
    p.bigger_is_better = o.bigger_is_better.value_or(unit_bigger_is_better(p.unit));
    out.push_back(std::move(p));
  }
  return out;
}

// Milliseconds since the epoch as ISO 8601 UTC.
std::string iso_of_epoch_ms(double ms) {
  const std::time_t t = static_cast<std::time_t>(std::floor(ms / 1000));
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::vector<ImportedPoint> parse_gab(const std::string& text, const std::string& name, const ImportOptions& o) {
  const std::string hint =
      "pass github-action-benchmark's data.js (window.BENCHMARK_DATA = {...}) or its JSON: "
      "{\"entries\": {\"suite\": [{\"commit\": {\"id\": ...}, \"date\": ms, \"benches\": [{\"name\", \"value\", "
      "\"unit\"}]}]}}";
  const size_t open = text.find('{');
  const size_t close = text.rfind('}');
  if (open == std::string::npos || close == std::string::npos || close < open)
    DSGD_THROW(InputError, hint, "{}: no JSON object found", name);
  const nlohmann::json doc = nlohmann::json::parse(text.substr(open, close - open + 1), nullptr, false);
  if (doc.is_discarded()) DSGD_THROW(InputError, hint, "{}: not valid JSON", name);
  if (!doc.is_object() || !doc.contains("entries") || !doc["entries"].is_object())
    DSGD_THROW(InputError, hint, "{}: no \"entries\" object", name);
  std::vector<ImportedPoint> out;
  for (const auto& [suite, runs] : doc["entries"].items()) {
    if (!runs.is_array()) DSGD_THROW(InputError, hint, "{}: entries.\"{}\" is not an array", name, suite);
    for (size_t i = 0; i < runs.size(); ++i) {
      const nlohmann::json& run = runs[i];
      const std::string where = fmt::format("{}: entries.\"{}\"[{}]", name, suite, i);
      if (!run.is_object() || !run.contains("commit") || !run["commit"].is_object() || !run["commit"].contains("id") ||
          !run["commit"]["id"].is_string())
        DSGD_THROW(InputError, hint, "{}: no commit.id", where);
      if (!run.contains("benches") || !run["benches"].is_array())
        DSGD_THROW(InputError, hint, "{}: no \"benches\" array", where);
      std::string date;
      if (run["commit"].contains("timestamp") && run["commit"]["timestamp"].is_string())
        date = run["commit"]["timestamp"].get<std::string>();
      else if (run.contains("date") && run["date"].is_number())
        date = iso_of_epoch_ms(run["date"].get<double>());
      const std::string tool = run.contains("tool") && run["tool"].is_string() ? run["tool"].get<std::string>() : "";
      for (size_t j = 0; j < run["benches"].size(); ++j) {
        const nlohmann::json& b = run["benches"][j];
        const std::string bwhere = fmt::format("{}.benches[{}]", where, j);
        if (!b.is_object() || !b.contains("name") || !b["name"].is_string())
          DSGD_THROW(InputError, hint, "{}: no \"name\"", bwhere);
        if (!b.contains("value") || !b["value"].is_number() || !std::isfinite(b["value"].get<double>()))
          DSGD_THROW(InputError, hint, "{}: \"value\" is not a finite number", bwhere);
        ImportedPoint p;
        p.series = suite + "/" + b["name"].get<std::string>();
        p.commit = run["commit"]["id"].get<std::string>();
        p.date = date;
        p.value = b["value"].get<double>();
        p.unit = b.contains("unit") && b["unit"].is_string() ? b["unit"].get<std::string>() : "";
        p.bigger_is_better = tool == "customBiggerIsBetter"    ? true
                             : tool == "customSmallerIsBetter" ? false
                                                               : unit_bigger_is_better(p.unit);
        if (o.bigger_is_better) p.bigger_is_better = *o.bigger_is_better;
        out.push_back(std::move(p));
      }
    }
  }
  return out;
}

}  // namespace

bool unit_bigger_is_better(const std::string& unit) {
  const std::string u = lower(trim(unit));
  return ends_with(u, "/s") || ends_with(u, "/sec") || ends_with(u, "/second") || ends_with(u, "per second") ||
         ends_with(u, "hz");
}

std::vector<ImportedPoint> history_import_parse(const std::string& text, const std::string& name,
                                                const ImportOptions& o) {
  std::string format = o.format;
  if (format == "auto") {
    const size_t first = text.find_first_not_of(" \t\r\n");
    const bool json = first != std::string::npos && (text[first] == '{' || text.compare(first, 6, "window") == 0);
    format = json ? "gab" : "csv";
  }
  std::vector<ImportedPoint> points;
  if (format == "csv")
    points = parse_csv(text, name, o);
  else if (format == "gab")
    points = parse_gab(text, name, o);
  else
    DSGD_THROW(InputError, "pass --format auto, csv or gab", "unknown import format '{}'", o.format);
  if (points.empty())
    DSGD_THROW(InputError, "a CSV needs lines series,commit,date,value[,unit]; a data.js needs benches",
               "{}: no points to import", name);
  return points;
}

ImportSummary history_import_store(Store& store, const std::vector<ImportedPoint>& points, const ImportOptions& o,
                                   const std::string& source) {
  if (o.machine.empty()) DSGD_THROW(InputError, "pass --machine NAME", "import: the machine name is empty");
  ImportSummary summary;
  summary.points = points.size();
  std::set<std::string> names;
  // The k-th identical (series, commit, date, value) line is repetition k: a file imported
  // twice finds every key stored, while true repetitions of one value stay distinct.
  std::map<std::tuple<std::string, std::string, std::string, double>, int64_t> seen;
  sqlite3* db = store.handle();
  const std::string now = system_time_iso8601();
  SqlTransaction transaction(db);
  SqlStatement insert(db,
                      "INSERT OR IGNORE INTO imported_points (series, machine, git_commit, date, value, unit, "
                      "bigger_is_better, repetition, source, imported_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  for (const ImportedPoint& p : points) {
    names.insert(p.series);
    const int64_t repetition = seen[{p.series, p.commit, p.date, p.value}]++;
    insert.reset();
    insert.bind_all(p.series, o.machine, p.commit, p.date, p.value, p.unit, p.bigger_is_better, repetition, source,
                    now);
    insert.run();
    if (sqlite3_changes(db) > 0)
      ++summary.added;
    else
      ++summary.duplicates;
  }
  transaction.commit();
  summary.series = names.size();
  return summary;
}

std::vector<HistorySeries> history_imported_series(const Store& store, const HistoryOptions& options) {
  std::vector<HistorySeries> out;
  if (store.user_version() < import_schema) return out;
  // Dates order the points; ties keep the order they were imported in.
  SqlStatement stmt(store.handle(),
                    "SELECT series, machine, git_commit, date, value, unit, bigger_is_better FROM imported_points "
                    "ORDER BY series, machine, date, id");
  struct Building {
    HistorySeries series;
    std::map<std::string, size_t> point_of;
    std::vector<std::vector<double>> values;
  };
  std::map<std::pair<std::string, std::string>, Building> by_key;
  while (stmt.step()) {
    Building& b = by_key[{stmt.column_text(0), stmt.column_text(1)}];
    if (b.series.label.empty()) {
      b.series.label = stmt.column_text(0);
      b.series.machine = stmt.column_text(1);
      b.series.metric = kImportedMetric;
      b.series.unit = stmt.column_text(5);
      b.series.bigger_is_better = stmt.column_int64(6) != 0;
    }
    const std::string commit = stmt.column_text(2);
    auto [it, fresh] = b.point_of.try_emplace(commit, b.series.points.size());
    if (fresh) {
      HistoryPoint& p = b.series.points.emplace_back();
      p.commit = commit;
      p.date = stmt.column_text(3);
      b.values.emplace_back();
    }
    b.values[it->second].push_back(stmt.column_real(4));
  }
  for (auto& [key, b] : by_key) {
    HistorySeries& s = b.series;
    if (history_series_finish(s, std::move(b.values), options)) out.push_back(std::move(s));
  }
  return out;
}

}  // namespace dsgd
