// See tune_output.hpp.
#include "tuner/tune_output.hpp"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <sstream>
#include <type_traits>

namespace dsgd {

namespace {

bool skipped(const std::string& key) {
  return key == "db" || key == "tag";
}

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.,:=/+@%") ==
                        std::string::npos)
    return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::string tune_run_command(const RunConfig& cfg) {
  const RunConfig def;
  std::string out = "dsgd-bench run";
  for (const auto& f : run_config_fields()) {
    if (skipped(f.key)) continue;
    std::visit(
        [&](auto member) {
          if (cfg.*member == def.*member) return;
          out += fmt::format(" --{} {}", f.key, shell_quote(fmt::format("{}", cfg.*member)));
        },
        f.member);
  }
  return out;
}

std::string tune_config_toml(const RunConfig& cfg) {
  const RunConfig def;
  toml::table t;
  for (const auto& f : run_config_fields()) {
    if (skipped(f.key)) continue;
    std::visit(
        [&](auto member) {
          using T = std::remove_cv_t<std::remove_reference_t<decltype(cfg.*member)>>;
          if (cfg.*member == def.*member) return;
          if constexpr (std::is_same_v<T, uint64_t>)
            t.insert(f.key, static_cast<int64_t>(cfg.*member));
          else
            t.insert(f.key, cfg.*member);
        },
        f.member);
  }
  std::ostringstream os;
  os << "# written by dsgd-tune: the recommended configuration; run it with\n"
     << "#   dsgd-bench run --config FILE\n"
     << t << "\n";
  return os.str();
}

}  // namespace dsgd
