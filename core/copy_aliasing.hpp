// Memory copies that run 10-20x slower because of where their buffers sit, found and avoided
// at the start of a process.
//
// Why. glibc's memcpy and memmove (2.36, Debian 12's) copy from 2 KiB up to their non-temporal
// threshold with the `rep movsb` instruction. On AMD Zen cores `rep movsb` slows down 10-20x
// when the destination starts 1-31 bytes after the source modulo 4 KiB (the string copy's 4K
// aliasing): on an AMD EPYC host a 31 KB copy took 10.6 µs at destination − source ≡ 16
// (mod 4096) and 0.65 µs at any other placement. Which case two buffers hit depends on where
// the allocator put them, so the same program was fast in one process and slow in the next.
// Gossip's model copies, MPICH's shared-memory copies and the model pass the simulator charges
// all went through it: the SVM's AD-PSGD step took 65-103 µs with it, 45-46 µs without.
//
// What. copy_aliasing_start() times a 32 KiB memcpy at both placements (interleaved medians,
// well under a millisecond). When the aliased one is kCopyAliasingSlowRatio times slower or
// more, it restarts the program before anything else has run (execv of /proc/self/exe with the
// same arguments) with glibc's tunable glibc.cpu.x86_rep_movsb_threshold above any copy's size
// (GLIBC_TUNABLES), so that glibc copies with vector loads and stores: measured, 0.6-0.9 µs at
// every placement, and within 15 % of `rep movsb` from 4 KiB to 64 MiB. MPI ranks and child
// processes inherit the variable. Each process's finding goes into its run record.
//
// Limits. x86-64 with glibc only (elsewhere nothing is measured: "not applicable"). A
// GLIBC_TUNABLES that already sets the threshold is left as it is ("set by the environment").
// DSGD_COPY_ALIASING=0 in the environment turns the restart off, to measure what it changes.
// Copies shorter than 2 KiB never used `rep movsb` and are not affected.
#pragma once

#include <string>

namespace dsgd {

// The aliased copy this many times slower than the clean one or more: restart with the tunable.
inline constexpr double kCopyAliasingSlowRatio = 3.0;
// The copy measured: 32 KiB, a gossip step's model of the SVM (31 KB) and an L1-sized buffer.
inline constexpr size_t kCopyAliasingBytes = size_t{32} << 10;

struct CopyAliasing {
  // "not applicable" (not x86-64 glibc), "none" (no slow placement on this CPU), "avoided" (the
  // program restarted with the tunable), "set by the environment" (GLIBC_TUNABLES had it),
  // "slow" (found and not avoided: DSGD_COPY_ALIASING=0, or the restart failed).
  std::string state = "not applicable";
  double aliased_s = 0, clean_s = 0;                // this process's copy at each placement; 0: not measured
  double before_aliased_s = 0, before_clean_s = 0;  // measured before the restart; 0: no restart
  std::string why;                                  // "slow" only: why it was not avoided
};

// The 32 KiB copy timed at destination − source ≡ 16 and ≡ 64 (mod 4096): medians of 9
// interleaved repetitions each, after one warm-up. Zeros where not applicable.
void copy_aliasing_measure(double& aliased_s, double& clean_s);

// Call first thing in main, before any thread, output or allocation worth keeping: measures,
// and restarts the program with the tunable when the aliased copy is slow (does not return
// then). Otherwise records what it found for copy_aliasing().
void copy_aliasing_start(char** argv);

// GLIBC_TUNABLES for the restart: `existing` (the environment's; null or empty: none) with
// glibc.cpu.x86_rep_movsb_threshold above any copy's size appended (glibc's ':' separator).
std::string copy_aliasing_tunables(const char* existing);

// What copy_aliasing_start found in this process ("not applicable" when it did not run).
const CopyAliasing& copy_aliasing();

}  // namespace dsgd
