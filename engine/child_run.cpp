// See child_run.hpp.
#include "engine/child_run.hpp"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/errors.hpp"

namespace dsgd {

namespace {

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

// The configuration file: beside the database, named for this process and the role.
std::string config_write(const RunConfig& cfg, const std::string& role) {
  static int serial = 0;
  std::string tag;
  for (char c : role) tag += std::isalnum(static_cast<unsigned char>(c)) ? c : '-';
  const std::filesystem::path dir = std::filesystem::absolute(cfg.db).parent_path();
  std::string path = (dir / fmt::format("dsgd-child-{}-{}-{}.json", getpid(), ++serial, tag)).string();
  std::ofstream out(path);
  out << run_config_to_json(cfg).dump(2) << "\n";
  if (!out) DSGD_THROW(InputError, "pass a --db in a writable directory", "cannot write '{}'", path);
  return path;
}

}  // namespace

std::string child_run_binary() {
  if (const char* env = std::getenv("DSGD_BENCH"); env && *env) return env;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe");
  if (self.filename() == "dsgd-bench") return self.string();
  const std::filesystem::path sibling = self.parent_path() / "dsgd-bench";
  if (std::filesystem::exists(sibling)) return sibling.string();
  DSGD_THROW(Error, "install dsgd-bench beside dsgd-tune, or set DSGD_BENCH to its path",
             "no dsgd-bench executable next to {}", self.string());
}

int64_t child_run_config(const RunConfig& cfg, const std::string& role, const std::string& extra_args,
                         const std::function<void(const std::string& line)>& on_line) {
  const std::string path = config_write(cfg, role);
  const std::string command = fmt::format("{} run --config {}{}{} 2>&1", shell_quote(child_run_binary()),
                                          shell_quote(path), extra_args.empty() ? "" : " ", extra_args);
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) {
    std::filesystem::remove(path);
    DSGD_THROW(Error, "", "cannot start '{}'", command);
  }
  std::string last, line;
  char buf[4096];
  while (std::fgets(buf, sizeof(buf), pipe)) {
    line += buf;
    if (line.empty() || line.back() != '\n') continue;
    line.pop_back();
    if (on_line) on_line(line);
    if (!line.empty()) last = line;
    line.clear();
  }
  const int status = pclose(pipe);
  std::filesystem::remove(path);
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  int64_t id = 0;
  if (code == 0 && last.rfind("run_id=", 0) == 0) id = std::stoll(last.substr(7));
  if (id <= 0) {
    if (code == 2)
      DSGD_THROW(InputError, "fix the configuration (the message above names the problem)",
                 "the {} run refused the configuration", role);
    DSGD_THROW(Error, "see the run's message above", "the {} run failed (exit code {})", role, code);
  }
  return id;
}

}  // namespace dsgd
