// See git_order.hpp.
#include "results/git_order.hpp"

#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <memory>

namespace dsgd {

namespace {

// Single-quoted for the shell.
std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

bool hex_prefix(const std::string& s) {
  return s.size() >= 7 &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

}  // namespace

std::optional<GitLine> GitLine::read(const std::string& dir, const std::string& ref, std::string* why) {
  const std::string command =
      "git -C " + shell_quote(dir) + " rev-list --first-parent --reverse " + shell_quote(ref) + " -- 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) {
    if (why) *why = "could not start git";
    return std::nullopt;
  }
  GitLine line;
  char buf[128];
  std::string current;
  while (fgets(buf, sizeof buf, pipe)) {
    current += buf;
    if (!current.empty() && current.back() == '\n') {
      current.pop_back();
      if (!current.empty()) line.commits_.push_back(current);
      current.clear();
    }
  }
  const int status = pclose(pipe);
  if (status != 0 || line.commits_.empty()) {
    if (why) *why = "'" + dir + "' is not in a git repository with a commit '" + ref + "' (or git is not installed)";
    return std::nullopt;
  }
  for (size_t i = 0; i < line.commits_.size(); ++i) line.index_[line.commits_[i]] = i;
  line.sorted_ = line.commits_;
  std::sort(line.sorted_.begin(), line.sorted_.end());
  return line;
}

std::optional<double> GitLine::position(const std::string& commit) const {
  std::string hash = commit;
  double offset = 0;
  if (hash.size() > 6 && hash.compare(hash.size() - 6, 6, "-dirty") == 0) {
    hash.resize(hash.size() - 6);
    offset = 0.5;
  }
  for (char& c : hash) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (const auto it = index_.find(hash); it != index_.end()) return double(it->second) + offset;
  if (!hex_prefix(hash)) return std::nullopt;
  const auto lo = std::lower_bound(sorted_.begin(), sorted_.end(), hash);
  if (lo == sorted_.end() || lo->compare(0, hash.size(), hash) != 0) return std::nullopt;
  if (lo + 1 != sorted_.end() && (lo + 1)->compare(0, hash.size(), hash) == 0) return std::nullopt;  // ambiguous
  return double(index_.at(*lo)) + offset;
}

}  // namespace dsgd
