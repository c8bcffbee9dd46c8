#!/usr/bin/env bash
# Builds the unit and integration tests with the sanitizers and runs them:
#   asan  AddressSanitizer + UndefinedBehaviorSanitizer + LeakSanitizer (-DDSGD_SANITIZE=ON),
#         in build-asan/;
#   tsan  ThreadSanitizer (-DDSGD_TSAN=ON, without oneDNN/OpenMP), in build-tsan/.
# Both at -O1 -g with assertions on. Every sanitizer report, from any process (the MPI ranks
# and dsgd-tune's children included), is written to build-SAN/sanitizer-logs/ and fails the
# run, whatever the test made of the process's exit; known reports inside third-party
# libraries are suppressed by tests/sanitizers/*.supp (one reason per entry).
#   scripts/sanitize.sh [asan|tsan|all] [CTEST ARGS...]     default: all; e.g. asan -L unit
# DSGD_SANITIZE_JOBS: build jobs (default: nproc). DSGD_SANITIZE_TARGETS: build only these
# targets (default: all), with CTEST ARGS selecting their tests, e.g. the threaded code alone:
#   DSGD_SANITIZE_TARGETS="dsgd-bench dsgd-tune test_sim_world" scripts/sanitize.sh tsan \
#     -R 'SimWorld|integration.(sim_backend|tune_jobs)$'
# Measured times: docs/contributing.md.
set -euo pipefail
cd "$(dirname "$0")/.."
which="${1:-all}"
shift || true
case "$which" in
  asan) kinds=(asan) ;;
  tsan) kinds=(tsan) ;;
  all) kinds=(asan tsan) ;;
  *) echo "usage: scripts/sanitize.sh [asan|tsan|all] [CTEST ARGS...]" >&2; exit 2 ;;
esac
supp="$PWD/tests/sanitizers"
status=0
for kind in "${kinds[@]}"; do
  dir="build-$kind"
  flag=$([ "$kind" = asan ] && echo -DDSGD_SANITIZE=ON || echo -DDSGD_TSAN=ON)
  start=$(date +%s)
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" "$flag" -DDSGD_BUILD_BENCH=OFF -DDSGD_WITH_CUDA=OFF > /dev/null
  logs="$PWD/$dir/sanitizer-logs"
  rm -rf "$logs" && mkdir -p "$logs"
  common="log_path=$logs/$kind:exitcode=66:print_stacktrace=1:strip_path_prefix=$PWD/"
  if [ "$kind" = asan ]; then
    export ASAN_OPTIONS="$common:detect_leaks=1:abort_on_error=0:detect_stack_use_after_return=0"
    export LSAN_OPTIONS="$common:suppressions=$supp/lsan.supp:print_suppressions=0"
    export UBSAN_OPTIONS="$common:halt_on_error=1:suppressions=$supp/ubsan.supp"
    unset TSAN_OPTIONS
  else
    export TSAN_OPTIONS="$common:halt_on_error=0:second_deadlock_stack=1:suppressions=$supp/tsan.supp"
    # UCX (MPICH's transport) hooks madvise through libucm; glibc calls madvise as a thread
    # exits, after TSan has torn down that thread's state, and TSan's rwlock interceptor
    # then dereferences it: SIGSEGV at the exit of every process with threads. Turning
    # UCX's memory events off removes the hook (it only serves UCX's registration cache).
    export UCX_MEM_EVENTS=no
    unset ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS
  fi
  # The build runs the unit-test binaries too (gtest test discovery): same options.
  # shellcheck disable=SC2086
  cmake --build "$dir" -j "${DSGD_SANITIZE_JOBS:-$(nproc)}" ${DSGD_SANITIZE_TARGETS:+--target $DSGD_SANITIZE_TARGETS}
  built=$(date +%s)
  rc=0
  (cd "$dir" && ctest --output-on-failure -j 2 "$@") || rc=$?
  end=$(date +%s)
  unset ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS TSAN_OPTIONS UCX_MEM_EVENTS
  reports=$(find "$logs" -type f | wc -l)
  echo "sanitize.sh: $kind: build $((built - start)) s, tests $((end - built)) s, ctest exit $rc, $reports report file(s) in $logs"
  if [ "$reports" -gt 0 ]; then
    for f in "$logs"/*; do
      echo "---- $f"
      head -n 60 "$f"
    done
    status=1
  fi
  [ "$rc" -eq 0 ] || status=1
done
exit "$status"
