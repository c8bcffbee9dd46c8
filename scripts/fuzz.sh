#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz (clang, -DDSGD_FUZZ=ON, in build-fuzz/) and
# runs each for N seconds (default 60) from its seed corpus (tests/fuzz/corpus/NAME, copied:
# the seeds in the repository stay as they are). A crash leaves crash-* / leak-* / timeout-*
# files in build-fuzz/findings/NAME and makes the script exit 1.
#   scripts/fuzz.sh [SECONDS] [TARGET...]      targets: config libsvm idx cifar text specs chakra
#                                               (chakra: in a build with protobuf; by default then)
# scripts/test.sh (CI) runs every target for 20 s. The build compiles only the ~25 parser
# sources the targets need, at -O1 with line tables (enough for the sanitizers' stacks).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
targets=("$@")
defaults=0
[ ${#targets[@]} -gt 0 ] || { targets=(config libsvm idx cifar text specs); defaults=1; }
command -v clang++ > /dev/null || { echo "fuzz.sh: needs clang++ (apt-get install -y clang libclang-rt-14-dev)" >&2; exit 2; }
start=$(date +%s)
cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
  -DDSGD_FUZZ=ON -DDSGD_BUILD_TESTS=OFF -DDSGD_BUILD_BENCH=OFF -DDSGD_WITH_CUDA=OFF > /dev/null
# The Chakra trace reader's target exists where protobuf was found (CMake says so).
if [ "$defaults" = 1 ] && cmake --build build-fuzz --target help | grep -c "fuzz_chakra" > /dev/null; then targets+=(chakra); fi
cmake --build build-fuzz -j "${JOBS:-$(nproc)}" --target "${targets[@]/#/fuzz_}"
echo "fuzz.sh: built in $(($(date +%s) - start)) s"
status=0
for t in "${targets[@]}"; do
  work="build-fuzz/findings/$t"
  rm -rf "$work" && mkdir -p "$work/corpus"
  cp tests/fuzz/corpus/"$t"/* "$work/corpus/"
  echo "== fuzz_$t: ${seconds}s"
  if ! (cd "$work" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
        ../../tests/fuzz/fuzz_"$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -max_len=65536 \
        -print_final_stats=1 corpus > log.txt 2>&1); then
    status=1
    echo "fuzz_$t: FOUND A CRASH (build-fuzz/findings/$t; tail of its log:)"
    tail -n 40 "$work/log.txt"
  else
    runs=$(awk '/stat::number_of_executed_units/ {print $2}' "$work/log.txt")
    rss=$(awk '/stat::peak_rss_mb/ {print $2}' "$work/log.txt")
    echo "fuzz_$t: ${runs:-?} inputs in ${seconds} s ($(( ${runs:-0} / seconds )) exec/s), peak RSS ${rss:-?} MB, no crash"
  fi
done
exit "$status"
