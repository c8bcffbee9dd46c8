// The order of commits in a git repository for a benchmark's history (docs/reports.md,
// "History and change points"): the first-parent line of a ref, oldest first, as
// `git rev-list --first-parent --reverse REF` prints it. On a pull request's merge commit or a
// branch, the line is the ancestors the candidate is compared with; commits on other branches
// are not on it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace dsgd {

class GitLine {
 public:
  // The line of `ref` in the repository at `dir`; nullopt when `dir` is not in a git
  // repository, git is missing, or the ref does not resolve (`why` says which).
  static std::optional<GitLine> read(const std::string& dir, const std::string& ref, std::string* why = nullptr);

  // The position of a commit on the line (0: the oldest): a full hash, or a prefix of at least
  // 7 hex digits that names one commit; a "-dirty" suffix (uncommitted changes on top of a
  // commit) is placed just after its commit. nullopt when it is not on the line.
  std::optional<double> position(const std::string& commit) const;

  size_t size() const { return commits_.size(); }

 private:
  std::vector<std::string> commits_;  // oldest first
  std::vector<std::string> sorted_;   // for prefix lookups
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace dsgd
