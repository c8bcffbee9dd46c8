// See huge_pages.hpp.
#include "core/huge_pages.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace dsgd {

namespace {

// DSGD_HUGE_PAGES=0 turns the advice off, for measuring what it changes (bench/ and
// docs/performance notes); nothing else reads it.
bool huge_pages_wanted() {
  static const bool wanted = [] {
    const char* v = std::getenv("DSGD_HUGE_PAGES");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return wanted;
}

}  // namespace

void* huge_pages_alloc(size_t bytes) {
  if (bytes < kHugePageBytes || !huge_pages_wanted()) {
    void* p = std::malloc(bytes == 0 ? 1 : bytes);
    if (p == nullptr) throw std::bad_alloc();
    return p;
  }
  const size_t rounded = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  void* p = std::aligned_alloc(kHugePageBytes, rounded);
  if (p == nullptr) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  // Before the first touch, so the page faults allocate huge pages directly. An error (a
  // kernel without THP) leaves ordinary pages: the buffer still works.
  (void)madvise(p, rounded, MADV_HUGEPAGE);
#endif
  return p;
}

void huge_pages_free(void* p) noexcept {
  std::free(p);
}

std::string huge_pages_mode() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  if (!in || !std::getline(in, line)) return "unavailable";
  // "always [madvise] never": the bracketed word is the setting.
  const size_t open = line.find('['), close = line.find(']');
  if (open == std::string::npos || close == std::string::npos || close < open) return "unavailable";
  return line.substr(open + 1, close - open - 1);
}

long long huge_pages_backed_bytes_in(std::istream& smaps, uintptr_t lo, size_t bytes) {
  const uintptr_t hi = lo + bytes;
  long long backed = 0;
  uintptr_t begin = 0, end = 0;
  bool overlaps = false;
  std::string line;
  while (std::getline(smaps, line)) {
    // A mapping's header ("7f12a0000000-7f12a8000000 rw-p 00000000 00:00 0 ...") starts with
    // its address range; the field lines after it are "Name:   value kB".
    uintptr_t b = 0, e = 0;
    if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR " ", &b, &e) == 2 && line.find(':') > line.find(' ')) {
      begin = b;
      end = e;
      overlaps = b < hi && e > lo;
      continue;
    }
    if (!overlaps || line.rfind("AnonHugePages:", 0) != 0) continue;
    long long kb = 0;
    std::istringstream(line.substr(std::strlen("AnonHugePages:"))) >> kb;
    // A mapping partly outside the range: count at most its overlap.
    const uintptr_t overlap = std::min(end, hi) - std::max(begin, lo);
    backed += std::min<long long>(kb * 1024, static_cast<long long>(overlap));
  }
  return backed;
}

long long huge_pages_backed_bytes(const void* p, size_t bytes) {
  std::ifstream in("/proc/self/smaps");
  if (!in) return -1;
  return huge_pages_backed_bytes_in(in, reinterpret_cast<uintptr_t>(p), bytes);
}

}  // namespace dsgd
