// Run selection for reports and comparisons (see report_select.hpp).
#include "results/report_select.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <regex>
#include <set>

#include "core/errors.hpp"
#include "core/text.hpp"

namespace dsgd {

namespace {

std::vector<std::string> split_items(const std::string& text) {
  std::vector<std::string> items;
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find(',', begin);
    if (end == std::string::npos) end = text.size();
    std::string item = text_trim(text.substr(begin, end - begin));
    if (!item.empty()) items.push_back(item);
    begin = end + 1;
  }
  return items;
}

int64_t parse_id(const std::string& text, const std::string& whole) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value <= 0) {
    DSGD_THROW(InputError, "give run ids as 3,5,9-12 (see dsgd-bench runs)", "--runs: '{}' is not a run id (in '{}')",
               text, whole);
  }
  return value;
}

}  // namespace

std::vector<int64_t> report_parse_ids(const std::string& text) {
  std::vector<int64_t> ids;
  const std::vector<std::string> items = split_items(text);
  if (items.empty()) DSGD_THROW(InputError, "give run ids as 3,5,9-12", "--runs: no run ids in '{}'", text);
  for (const std::string& item : items) {
    const size_t dash = item.find('-', 1);
    if (dash == std::string::npos) {
      ids.push_back(parse_id(item, text));
      continue;
    }
    const int64_t first = parse_id(text_trim(item.substr(0, dash)), text);
    const int64_t last = parse_id(text_trim(item.substr(dash + 1)), text);
    if (last < first || last - first > 1000000)
      DSGD_THROW(InputError, "give ranges as FIRST-LAST with FIRST <= LAST", "--runs: bad range '{}'", item);
    for (int64_t id = first; id <= last; ++id) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

bool report_tag_matches(const std::string& tag, const std::string& wanted) {
  const std::vector<std::string> have = split_items(tag);
  const std::set<std::string> have_set(have.begin(), have.end());
  const std::vector<std::string> want = split_items(wanted);
  if (want.empty()) return text_trim(tag).empty();
  for (const std::string& item : want)
    if (!have_set.count(item)) return false;
  return true;
}

std::string report_parse_since(const std::string& text) {
  static const std::regex date(R"(^(\d{4})-(\d{2})-(\d{2})$)");
  static const std::regex date_time(R"(^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(:(\d{2}))?Z?$)");
  std::smatch m;
  const std::string t = text_trim(text);
  if (std::regex_match(t, m, date)) return fmt::format("{}-{}-{}T00:00:00Z", m[1].str(), m[2].str(), m[3].str());
  if (std::regex_match(t, m, date_time))
    return fmt::format("{}-{}-{}T{}:{}:{}Z", m[1].str(), m[2].str(), m[3].str(), m[4].str(), m[5].str(),
                       m[7].matched ? m[7].str() : "00");
  DSGD_THROW(InputError, "give a UTC date as 2026-11-30 or 2026-11-30T14:00:00Z", "--since: '{}' is not a date", text);
}

std::string report_selection_describe(const ReportSelection& s) {
  std::string out;
  auto add = [&](const char* flag, const std::string& value) {
    if (value.empty()) return;
    if (!out.empty()) out += ' ';
    out += fmt::format("{} {}", flag, value);
  };
  add("--runs", s.runs);
  add("--tag", s.tag);
  add("--since", s.since);
  return out.empty() ? "all runs" : out;
}

std::vector<RunWithSummary> report_select_runs(const Store& store, const ReportSelection& selection) {
  std::vector<int64_t> ids;
  if (!selection.runs.empty()) ids = report_parse_ids(selection.runs);
  const std::string since = selection.since.empty() ? std::string() : report_parse_since(selection.since);

  std::vector<RunWithSummary> all = store.runs_list(0);
  if (all.empty()) {
    DSGD_THROW(InputError, "run `dsgd-bench run` or `dsgd-bench suite smoke` first, or pass another --db",
               "database '{}' has no runs", store.path());
  }
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.run.id < b.run.id; });
  if (!ids.empty()) {
    std::set<int64_t> known;
    for (const auto& r : all) known.insert(r.run.id);
    std::string missing;
    size_t missing_count = 0;
    for (int64_t id : ids) {
      if (known.count(id)) continue;
      missing += (missing.empty() ? "" : ", ") + std::to_string(id);
      ++missing_count;
    }
    if (missing_count > 0) {
      DSGD_THROW(InputError, "`dsgd-bench runs` lists the stored runs", "run{} {} not found in DB '{}'",
                 missing_count > 1 ? "s" : "", missing, store.path());
    }
  }
  const std::set<int64_t> id_set(ids.begin(), ids.end());
  std::vector<RunWithSummary> selected;
  for (RunWithSummary& r : all) {
    if (!id_set.empty() && !id_set.count(r.run.id)) continue;
    if (!selection.tag.empty() && !report_tag_matches(r.run.tag, selection.tag)) continue;
    if (!since.empty() && r.run.created_at < since) continue;
    selected.push_back(std::move(r));
  }
  if (selected.empty()) {
    DSGD_THROW(InputError, "`dsgd-bench runs` lists the stored runs with their tags", "no run in DB '{}' matches {}",
               store.path(), report_selection_describe(selection));
  }
  return selected;
}

}  // namespace dsgd
