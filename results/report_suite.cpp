// Suite files (see report_suite.hpp).
#include "results/report_suite.hpp"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/errors.hpp"
#include "core/run_config.hpp"

namespace dsgd {

namespace {

namespace fs = std::filesystem;

nlohmann::json toml_value(const toml::node& node, const std::string& origin, const std::string& key) {
  if (auto v = node.as_string()) return v->get();
  // Non-negative integers as unsigned, so they also fit unsigned keys (seed).
  if (auto v = node.as_integer()) {
    if (v->get() >= 0) return static_cast<uint64_t>(v->get());
    return v->get();
  }
  if (auto v = node.as_floating_point()) return v->get();
  if (auto v = node.as_boolean()) return v->get();
  DSGD_THROW(InputError, "use a string, a number or a boolean", "{}: key '{}' has an unsupported type", origin, key);
}

nlohmann::json toml_table(const toml::table& table, const std::string& origin) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [k, v] : table) out[std::string(k.str())] = toml_value(v, origin, std::string(k.str()));
  return out;
}

std::string normalize(std::string key) {
  for (char& c : key)
    if (c == '_') c = '-';
  return key;
}

void entry_check(const nlohmann::json& entry, const std::string& origin) {
  for (const auto& [key, value] : entry.items()) {
    const std::string k = normalize(key);
    if (k == "db" || k == "tag")
      DSGD_THROW(InputError, "remove it: the suite command sets db (--db) and tag (suite=NAME,rep=R)",
                 "{}: key '{}' may not be set in a suite", origin, key);
  }
  RunConfig cfg;
  run_config_apply_json(cfg, entry, origin);
  for (const auto& [key, value] : entry.items()) run_config_mark_given(cfg, key);
  run_config_validate(cfg);
}

// Removes a [[runs]] entry's `id` (its name for [[claims]]) from `table` and returns it ("" when
// absent); InputError for a non-string, empty or repeated id.
std::string suite_entry_take_id(nlohmann::json& table, const std::vector<std::string>& taken,
                                const std::string& origin) {
  auto it = table.find("id");
  if (it == table.end()) return "";
  if (!it->is_string() || it->get<std::string>().empty())
    DSGD_THROW(InputError, "name the run with a non-empty string, e.g. id = \"ssgd_slow\"",
               "{}: key 'id' must be a non-empty string", origin);
  std::string id = it->get<std::string>();
  if (std::find(taken.begin(), taken.end(), id) != taken.end())
    DSGD_THROW(InputError, "give every named run its own id", "{}: key 'id': '{}' names an earlier run too", origin,
               id);
  table.erase(it);
  return id;
}

// The [[claims]] array as JSON objects, then parsed and checked against the named runs.
std::vector<SuiteClaim> suite_claims_load(const toml::node* node, const std::vector<std::string>& ids,
                                          const std::string& path) {
  const toml::array* claims = node ? node->as_array() : nullptr;
  if (!claims)
    DSGD_THROW(InputError, "write claims as [[claims]] tables", "suite '{}': 'claims' is not an array", path);
  std::vector<nlohmann::json> tables;
  for (const toml::node& item : *claims) {
    const std::string origin = fmt::format("{} [[claims]] #{}", path, tables.size() + 1);
    const toml::table* t = item.as_table();
    if (!t) DSGD_THROW(InputError, "write [[claims]] entries as tables", "{}: not a table", origin);
    tables.push_back(toml_table(*t, origin));
  }
  return suite_claims_parse(tables, ids, path);
}

// The suite file, read (at most 1 MiB, like a run config, nesting checked before the parser
// sees it) and parsed.
toml::table suite_parse(const std::string& path) {
  std::ifstream in(path);
  if (!in) DSGD_THROW(InputError, "check the suite's path", "suite '{}': cannot read the file", path);
  std::string text(kConfigMaxBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  run_config_check_nesting(text, path, true);
  try {
    return toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    DSGD_THROW(InputError, "fix the TOML syntax", "suite '{}': {} (line {})", path, std::string(e.description()),
               e.source().begin.line);
  }
}

void top_level_keys_check(const toml::table& root, const std::string& path) {
  for (const auto& [k, v] : root) {
    const std::string key(k.str());
    if (key != "name" && key != "description" && key != "defaults" && key != "runs" && key != "matrix" &&
        key != "claims")
      DSGD_THROW(InputError, "top-level keys: name, description, [defaults], [[runs]], [[matrix]], [[claims]]",
                 "suite '{}': unknown top-level key '{}'", path, key);
  }
}

// `entry` over the defaults: an entry's key replaces the default however it is spelled
// (weight_decay / weight-decay).
nlohmann::json defaults_merged(const nlohmann::json& defaults, const nlohmann::json& entry) {
  nlohmann::json out = defaults;
  for (const auto& [key, value] : entry.items()) {
    for (auto it = out.begin(); it != out.end();) {
      if (normalize(it.key()) == normalize(key)) {
        it = out.erase(it);
      } else {
        ++it;
      }
    }
    out[key] = value;
  }
  return out;
}

// The [[runs]] entries, each merged over the defaults and checked, with their ids.
void runs_load(const toml::table& root, const std::string& path, Suite& suite) {
  const toml::array* runs = root["runs"].as_array();
  if (!runs) return;
  size_t index = 0;
  for (const toml::node& node : *runs) {
    ++index;
    const std::string origin = fmt::format("{} [[runs]] #{}", path, index);
    const toml::table* t = node.as_table();
    if (!t) DSGD_THROW(InputError, "write [[runs]] entries as tables", "{}: not a table", origin);
    nlohmann::json table = toml_table(*t, origin);
    const std::string id = suite_entry_take_id(table, suite.entry_ids, origin);
    nlohmann::json entry = defaults_merged(suite.defaults, table);
    entry_check(entry, origin);
    suite.entries.push_back(std::move(entry));
    suite.entry_ids.push_back(id);
  }
}

// A [[matrix]] table's axes: each key with its list of values (a single value counts as a list
// of one).
std::vector<std::pair<std::string, std::vector<nlohmann::json>>> matrix_axes(const toml::table& t,
                                                                             const std::string& origin) {
  std::vector<std::pair<std::string, std::vector<nlohmann::json>>> axes;
  for (const auto& [k, v] : t) {
    const std::string key(k.str());
    std::vector<nlohmann::json> values;
    if (const toml::array* list = v.as_array()) {
      for (const toml::node& item : *list) values.push_back(toml_value(item, origin, key));
    } else {
      values.push_back(toml_value(v, origin, key));
    }
    if (values.empty())
      DSGD_THROW(InputError, "give at least one value", "{}: key '{}' has an empty list", origin, key);
    axes.emplace_back(key, std::move(values));
  }
  return axes;
}

// The [[matrix]] entries: each table's Cartesian product (the last key varying fastest), every
// combination merged over the defaults and checked; they have no ids.
void matrices_load(const toml::table& root, const std::string& path, Suite& suite) {
  const toml::array* matrices = root["matrix"].as_array();
  if (!matrices) return;
  size_t index = 0;
  for (const toml::node& node : *matrices) {
    ++index;
    const std::string origin = fmt::format("{} [[matrix]] #{}", path, index);
    const toml::table* t = node.as_table();
    if (!t) DSGD_THROW(InputError, "write [[matrix]] entries as tables", "{}: not a table", origin);
    const auto axes = matrix_axes(*t, origin);
    size_t total = 1;
    for (const auto& axis : axes) total *= axis.second.size();
    if (axes.empty()) total = 0;
    for (size_t combination = 0; combination < total; ++combination) {
      nlohmann::json entry = nlohmann::json::object();
      size_t rest = combination;
      for (size_t a = axes.size(); a-- > 0;) {
        entry[axes[a].first] = axes[a].second[rest % axes[a].second.size()];
        rest /= axes[a].second.size();
      }
      entry = defaults_merged(suite.defaults, entry);
      entry_check(entry, fmt::format("{} ({})", origin, suite_entry_label(entry, suite.defaults)));
      suite.entries.push_back(std::move(entry));
      suite.entry_ids.emplace_back();
    }
  }
}

}  // namespace

Suite suite_load(const std::string& path) {
  Suite suite;
  suite.path = path;
  const toml::table root = suite_parse(path);
  suite.name = root["name"].value_or(fs::path(path).stem().string());
  suite.description = root["description"].value_or(std::string());
  top_level_keys_check(root, path);
  if (const toml::table* t = root["defaults"].as_table()) suite.defaults = toml_table(*t, path + " [defaults]");
  runs_load(root, path, suite);
  matrices_load(root, path, suite);
  if (suite.entries.empty())
    DSGD_THROW(InputError, "add [[runs]] or [[matrix]] entries", "suite '{}' has no runs", path);
  if (root.contains("claims")) suite.claims = suite_claims_load(root["claims"].node(), suite.entry_ids, path);
  return suite;
}

std::string suite_find(const std::string& name, const std::string& executable_dir) {
  if (name.empty()) DSGD_THROW(InputError, "e.g. dsgd-bench suite smoke", "no suite name given");
  std::error_code ec;
  const bool is_path =
      name.find('/') != std::string::npos || (name.size() > 5 && name.compare(name.size() - 5, 5, ".toml") == 0);
  if (is_path) {
    if (fs::is_regular_file(name, ec)) return name;
    DSGD_THROW(InputError, "pass an existing suite file", "no suite file '{}'", name);
  }
  std::vector<fs::path> dirs;
  if (const char* env = std::getenv("DSGD_SUITES_DIR"); env && *env) dirs.emplace_back(env);
  dirs.emplace_back("suites");
  if (!executable_dir.empty()) {
    dirs.push_back(fs::path(executable_dir) / "suites");
    dirs.push_back(fs::path(executable_dir).parent_path() / "suites");
    dirs.push_back(fs::path(executable_dir).parent_path().parent_path() / "suites");
  }
  std::string tried;
  for (const fs::path& dir : dirs) {
    const fs::path file = dir / (name + ".toml");
    if (fs::is_regular_file(file, ec)) return file.string();
    tried += (tried.empty() ? "" : ", ") + file.string();
  }
  DSGD_THROW(InputError,
             "suites shipped: smoke, standard, papers (suites/*.toml); or pass a file path, or set DSGD_SUITES_DIR",
             "unknown suite '{}' (looked for {})", name, tried);
}

std::string suite_tag(const std::string& name, int rep) {
  return fmt::format("suite={},rep={}", name, rep);
}

std::string suite_entry_label(const nlohmann::json& entry, const nlohmann::json& defaults) {
  auto get = [&](const char* key, const char* fallback) -> std::string {
    auto it = entry.find(key);
    if (it == entry.end()) return fallback;
    return it->is_string() ? it->get<std::string>() : it->dump();
  };
  std::string label = fmt::format("{} {}", get("workload", "svm"), get("algo", "ssgd"));
  for (const auto& [key, value] : entry.items()) {
    if (key == "workload" || key == "algo") continue;
    if (defaults.is_object() && defaults.contains(key) && defaults.at(key) == value) continue;
    label += fmt::format(" {}={}", key, value.is_string() ? value.get<std::string>() : value.dump());
  }
  return label;
}

}  // namespace dsgd
