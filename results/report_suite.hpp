// Benchmark suites as data files (suites/*.toml), run by `dsgd-bench suite NAME`.
// A suite file has a name, a description, [defaults] (run keys applied to every entry),
// [[runs]] (one run each) and [[matrix]] tables (every combination of the listed values,
// sweeps by list) and [[claims]] (results/suite_claims.hpp; a [[runs]] entry a claim compares
// is named by its `id` key, which is not a run key). Keys are those of `dsgd-bench run` (the one
// field table, core/run_config.hpp); each expanded entry is checked against it before
// anything runs. `db` and `tag` are set by the suite command (tag: suite=NAME,rep=R), so
// suite files may not set them.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "results/suite_claims.hpp"

namespace dsgd {

struct Suite {
  std::string name, description, path;
  std::vector<nlohmann::json> entries;  // each a complete object of run keys (defaults merged)
  nlohmann::json defaults = nlohmann::json::object();
  std::vector<std::string> entry_ids;  // parallel to entries: a [[runs]] entry's id, else empty
  std::vector<SuiteClaim> claims;
};

// Reads and expands a suite file; InputError naming the file (and entry) on unknown keys,
// wrong types, invalid values, an empty suite, or a db/tag key.
Suite suite_load(const std::string& path);

// Where `dsgd-bench suite NAME` looks: NAME itself when it names a file (ends in .toml or
// contains '/'); else NAME.toml in $DSGD_SUITES_DIR, ./suites, and the suites/ directory
// beside or above the executable's directory. InputError listing what was tried.
std::string suite_find(const std::string& name, const std::string& executable_dir);

// The tag of repetition `rep` (1-based) of suite `name`: "suite=NAME,rep=R".
std::string suite_tag(const std::string& name, int rep);

// A short description of an entry for progress lines: workload, algorithm and the keys
// whose values differ from `defaults` ("svm localsgd period=8").
std::string suite_entry_label(const nlohmann::json& entry, const nlohmann::json& defaults = nlohmann::json::object());

}  // namespace dsgd
