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
#include <utility>

#include "core/errors.hpp"
#include "workloads/workload.hpp"

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

namespace {

// Runs `command` (stdout and stderr together), passing each line to on_line; returns the exit
// code and the id on its last `key=<id>` line (0 when there is none). Not the last line: under
// mpiexec another rank's stderr (a warning) can arrive after rank 0's final stdout line.
std::pair<int, int64_t> child_command(const std::string& command, const std::string& key,
                                      const std::function<void(const std::string& line)>& on_line) {
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) DSGD_THROW(Error, "", "cannot start '{}'", command);
  const std::string prefix = key + "=";
  int64_t id = 0;
  std::string line;
  char buf[4096];
  while (std::fgets(buf, sizeof(buf), pipe)) {
    line += buf;
    if (line.empty() || line.back() != '\n') continue;
    line.pop_back();
    if (on_line) on_line(line);
    if (line.rfind(prefix, 0) == 0) {
      try {
        id = std::stoll(line.substr(prefix.size()));
      } catch (const std::exception&) {
        id = 0;
      }
    }
    line.clear();
  }
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 1, id};
}

}  // namespace

int64_t child_run_config(const RunConfig& cfg, const std::string& role, const std::string& extra_args,
                         const std::function<void(const std::string& line)>& on_line) {
  const std::string path = config_write(cfg, role);
  const std::string command = fmt::format("{} run --config {}{}{} 2>&1", shell_quote(child_run_binary()),
                                          shell_quote(path), extra_args.empty() ? "" : " ", extra_args);
  std::pair<int, int64_t> result;
  try {
    result = child_command(command, "run_id", on_line);
  } catch (...) {
    std::filesystem::remove(path);
    throw;
  }
  std::filesystem::remove(path);
  const auto [code, printed_id] = result;
  const int64_t id = code == 0 ? printed_id : 0;
  if (id <= 0) {
    if (code == 2)
      DSGD_THROW(InputError, "fix the configuration (the message above names the problem)",
                 "the {} run refused the configuration", role);
    DSGD_THROW(Error, "see the run's message above", "the {} run failed (exit code {})", role, code);
  }
  return id;
}

int64_t child_calibrate_fabric(const std::string& db, int workers, const RunConfig& model,
                               const std::function<void(const std::string& line)>& on_line, const std::string& sizes) {
  // --quick: every octave, 2 repetitions; by default up to 4 MiB rather than --quick's 1 MiB,
  // so that the gradients of the deep workloads (ResNet-20 1.1 MB, the small GPT 1.7 MB) are
  // measured, not extrapolated from the last segment; the model's own size is added to the
  // sweep; --batches 1 keeps the compute profile (which calibrate always takes) to a few
  // milliseconds.
  std::string shape;
  for (const auto& [flag, value] : workload_shape_flags(model))
    shape += fmt::format(" --{} {}", flag, shell_quote(value));
  const std::string command =
      fmt::format("{} calibrate --workers {} --quick {} --batches 1 --workload {} --dataset {}{} --db {} 2>&1",
                  shell_quote(child_run_binary()), workers, sizes, shell_quote(model.workload),
                  shell_quote(model.dataset), shape, shell_quote(db));
  const auto [code, printed_id] = child_command(command, "calibration_id", on_line);
  const int64_t id = code == 0 ? printed_id : 0;
  if (id <= 0)
    DSGD_THROW(Error, "see the calibration's message above, or run `dsgd-bench calibrate --workers 2` yourself",
               "the fabric calibration failed (exit code {})", code);
  return id;
}

}  // namespace dsgd
