// Large buffers on 2 MiB pages: an allocator that asks the kernel for transparent huge pages
// (madvise MADV_HUGEPAGE before the first touch), and what the machine allows.
// Why: a training batch reads rows at random from a dataset of hundreds of MB. On 4 KiB
// pages nearly every row misses the TLB, the CPU drops the software prefetches that miss it,
// and the step streams the rows from memory one cache line at a time: the SVM's forward took
// 10x longer, and whether a process got the slow case depended on where its memory landed.
// On 2 MiB pages the same rows stay within a few hundred TLB entries and the prefetches work.
// Limits: Linux transparent huge pages only. Where they are "never" (or absent) the buffers
// are ordinary 4 KiB pages; huge_pages_mode() says so and the run reports it. Small
// allocations (under 2 MiB) take the ordinary path. DSGD_HUGE_PAGES=0 in the environment turns
// the advice off, to measure what it changes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <istream>
#include <new>
#include <string>
#include <vector>

namespace dsgd {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// Memory for `bytes` bytes: 2 MiB-aligned and advised as huge pages when bytes >= 2 MiB,
// else plain malloc. Never returns null (throws std::bad_alloc). Free with huge_pages_free.
void* huge_pages_alloc(size_t bytes);
void huge_pages_free(void* p) noexcept;

// The machine's transparent-huge-page setting: "always", "madvise", "never", or
// "unavailable" (no /sys/kernel/mm/transparent_hugepage on this kernel).
std::string huge_pages_mode();

// Bytes of [p, p + bytes) that the kernel currently backs with huge pages, from
// /proc/self/smaps (AnonHugePages of the mappings that overlap the range, counted within
// it). -1 when smaps cannot be read.
long long huge_pages_backed_bytes(const void* p, size_t bytes);
// The same from an smaps text, for [lo, lo + bytes) (exposed for tests).
long long huge_pages_backed_bytes_in(std::istream& smaps, uintptr_t lo, size_t bytes);

template <class T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() noexcept = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) noexcept {}  // NOLINT(google-explicit-constructor): allocator rebind
  T* allocate(size_t n) {
    if (n > static_cast<size_t>(-1) / sizeof(T)) throw std::bad_alloc();
    return static_cast<T*>(huge_pages_alloc(n * sizeof(T)));
  }
  void deallocate(T* p, size_t) noexcept { huge_pages_free(p); }
  template <class U>
  bool operator==(const HugePageAllocator<U>&) const noexcept {
    return true;
  }
  template <class U>
  bool operator!=(const HugePageAllocator<U>&) const noexcept {
    return false;
  }
};

// A std::vector whose storage is huge_pages_alloc's: for large buffers read at random.
template <class T>
using HugePageVector = std::vector<T, HugePageAllocator<T>>;

}  // namespace dsgd
