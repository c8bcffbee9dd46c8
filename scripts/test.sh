#!/usr/bin/env bash
# Installs the dependencies, builds (Release, with tests and benchmarks) and runs the
# whole test suite with ctest; then the portable pass (below). This is what CI runs (.ci/run).
# Arguments go to both ctest calls (e.g. -R Conv). DSGD_SKIP_PORTABLE=1 skips the portable
# pass, for quick local runs only: CI always runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --tests
# Formatting first (seconds): every C++ file as .clang-format says (clang-format -i FILE fixes one).
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git ls-files -z '*.cpp' '*.hpp' '*.cu' '*.cuh'
else
  find . \( -path './build*' -o -path './.git' \) -prune -o \( -name '*.cpp' -o -name '*.hpp' \) -print0
fi | xargs -0 clang-format --dry-run --Werror
# The builds must be warning-free (GCC 12's known false positives are silenced in
# CMakeLists.txt, each with its reason): a warning fails CI. ccache replays a cached
# compile's warnings, so a warm cache still shows every one.
build_without_warnings() {  # build_without_warnings COMMAND...: runs it, fails on a compiler warning
  local log
  log=$(mktemp)
  "$@" 2>&1 | tee "$log"
  if grep -E "warning[: ]" "$log" >/dev/null; then
    echo "test.sh: the build printed compiler warnings:" >&2
    grep -E "warning[: ]" "$log" | sort | uniq -c | sort -rn | head -20 >&2
    echo "test.sh: fix them (or, for a compiler's false positive, silence it where it fires, with the reason, as CMakeLists.txt does)" >&2
    rm -f "$log"
    exit 1
  fi
  rm -f "$log"
}
build_without_warnings bash scripts/build.sh
# Timing assertions (stragglers, emulated links, overlap) compare measured milliseconds on
# a shared 2-core machine; a test that fails is run once more before it counts as failed
# (ctest prints both attempts), so one preempted run does not fail CI, and a real defect,
# which fails both times, still does. --no-tests=error: a build without its tests (GoogleTest
# missing) fails here instead of passing with nothing run.
(cd build && ctest --no-tests=error --output-on-failure --timeout 600 --repeat until-pass:2 "$@")

# Fuzzing: every libFuzzer target of tests/fuzz (the parsers a user feeds) for a short time
# from its seed corpus, built with clang + ASan + UBSan (only the parsers' sources; about 2
# minutes to build on 2 cores, then 20 s a target). A crash, sanitizer report, hang or
# memory blow-up fails CI and leaves the input in build-fuzz/findings/ (it becomes a
# regression test). DSGD_FUZZ_SECONDS changes the time per target (0 skips, local runs only).
if [[ "${DSGD_FUZZ_SECONDS:-20}" != 0 ]]; then
  bash scripts/fuzz.sh "${DSGD_FUZZ_SECONDS:-20}"
fi

# Portable pass: a build for any x86-64 (-DDSGD_NATIVE=OFF: no -march=native, so no FMA
# contraction and no AVX code outside the run-time-dispatched direct 3x3 kernels), without
# the benchmarks, and its unit tests (ctest label "unit") with oneDNN limited to its AVX2
# kernels. It checks that nothing assumes the CPU the build ran on and that the numeric
# tolerances hold for other kernels' rounding. Up to ~15 minutes on 2 cores (mostly the build).
if [[ "${DSGD_SKIP_PORTABLE:-0}" == 1 ]]; then
  echo "test.sh: DSGD_SKIP_PORTABLE=1: skipping the portable pass (CI runs it)"
  exit 0
fi
cmake -S . -B build-portable -DCMAKE_BUILD_TYPE=Release -DDSGD_NATIVE=OFF -DDSGD_BUILD_BENCH=OFF >/dev/null
build_without_warnings cmake --build build-portable -j"$(nproc)" --target dsgd_unit_tests
(cd build-portable && ONEDNN_MAX_CPU_ISA=AVX2 ctest --no-tests=error -L unit --output-on-failure --timeout 600 --repeat until-pass:2 "$@")

# Then the numeric unit tests of that build on an emulated x86-64 without AVX (qemu-user's
# Nehalem model, SSE4.2 at most): the direct 3x3 kernels must step aside there and oneDNN
# takes its SSE4.1 kernels, and a binary with one AVX instruction outside the run-time
# dispatch dies with SIGILL. Emulation is ~9x slower, so the ResNet tests are the three that
# pick backends and check gradients (not the training runs), and the transformer's layers
# are covered by test_attention_layers: ~1.5 minutes. Runs where qemu-x86_64 is installed
# (Debian package qemu-user); says so and skips it elsewhere.
# The environment: some machines set OPENBLAS_CORETYPE (and OPENBLAS_L2_SIZE) for their own
# CPU, e.g. Haswell. Inherited here, OpenBLAS would run that core's AVX2 kernels on the
# emulated CPU and die with SIGILL. So this step alone names the emulated CPU's core and lets
# OpenBLAS read the emulated cache sizes; every other step keeps the environment as it is
# (docs/ci.md, "Environment variables"). test_blas_core runs first: if the step's OpenBLAS core
# still needs instructions the emulated CPU lacks, it fails with a message saying so.
emulated=(env -u OPENBLAS_L2_SIZE OPENBLAS_CORETYPE=Nehalem qemu-x86_64 -cpu Nehalem)
if command -v qemu-x86_64 >/dev/null; then
  for spec in test_blas_core test_conv test_blocked_layout test_layers test_attention_layers test_svm test_optimizer \
    test_algos2 "test_resnet ResNet.ConvBackends*:ResNet.ActivationLayouts*:ResNet.Gradient*"; do
    read -r t filter <<<"$spec"
    echo "test.sh: $t on an emulated CPU without AVX (${emulated[*]})"
    (cd build-portable && "${emulated[@]}" "tests/$t" --gtest_brief=1 --gtest_filter="${filter:-*}")
  done
else
  echo "test.sh: qemu-x86_64 not found (Debian package qemu-user): skipping the run without AVX"
fi
