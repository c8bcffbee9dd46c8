// Which runs a report or a comparison covers: `--runs 3,5,9-12`, `--tag T`, `--since DATE`
// (combinable: a run must pass every filter given; none given: every run). Tags match as
// sets of comma-separated items: `--tag suite=smoke` selects "suite=smoke,rep=2", and a
// tag without commas must equal one item ("h16" selects "h16" and "h16,x" but not "h1").
// Unknown ids, a tag or date that selects nothing and an empty database are InputErrors
// that name what was asked for (exit code 2).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "results/store.hpp"

namespace dsgd {

struct ReportSelection {
  std::string runs;   // "3,5,9-12"; empty: no id filter
  std::string tag;    // tag items that must all be present; empty: no tag filter
  std::string since;  // "2026-11-30" or "2026-11-30T02:00:00Z"; runs created at or after
};

// "3,5,9-12" -> {3, 5, 9, 10, 11, 12}; InputError on malformed text or a range over 1e6 ids.
std::vector<int64_t> report_parse_ids(const std::string& text);
// True when every comma-separated item of `wanted` is an item of `tag` (items trimmed).
bool report_tag_matches(const std::string& tag, const std::string& wanted);
// A date or date-time normalized to the stored created_at form (ISO 8601 UTC, "Z").
std::string report_parse_since(const std::string& text);
// Human-readable form for the context header: "--runs 3,5 --tag x" or "all runs".
std::string report_selection_describe(const ReportSelection& selection);

// The selected runs, oldest first (by id). Throws InputError as described above.
std::vector<RunWithSummary> report_select_runs(const Store& store, const ReportSelection& selection);

}  // namespace dsgd
