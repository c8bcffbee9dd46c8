#!/usr/bin/env bash
# The SVM's step on 2 MiB pages (the default) against 4 KiB pages (DSGD_HUGE_PAGES=0), one
# process per run, interleaved (the order alternates each round), so the process-to-process
# spread shows: a batch reads its rows at random from the 188 MB training set, and on 4 KiB
# pages those reads miss the TLB. Prints each run's mean forward and step (ms, the trainer's
# summary) and, per setting, the median and [min, max].
#   bench/svm_pages.sh [BUILD] [ROUNDS] [BATCH]        e.g. bench/svm_pages.sh build 6 16
set -euo pipefail
BUILD=$(realpath "${1:-build}")
ROUNDS=${2:-6}
BATCH=${3:-16}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
measure() {  # measure SETTING -> "fwd_ms step_ms"
  local env=()
  [ "$1" == 4k ] && env=(DSGD_HUGE_PAGES=0)
  env "${env[@]}" "$BUILD/dsgd-bench" run --workload svm --dataset fashion-mnist --batch "$BATCH" --steps 2000 \
    --workers 1 --db "$work/p.db" > "$work/out" 2>&1 || { cat "$work/out"; exit 1; }
  sqlite3 "$work/p.db" "SELECT printf('%.4f %.4f', 1e3 * fwd_s, 1e3 * step_time_s) FROM summaries
                        WHERE run_id = (SELECT max(id) FROM runs)"
}
declare -A fwd step
for r in $(seq 1 "$ROUNDS"); do
  order="huge 4k"
  [ $((r % 2)) == 0 ] && order="4k huge"
  for s in $order; do
    read -r f t <<<"$(measure "$s")"
    echo "round $r  $s  forward $f ms  step $t ms"
    fwd[$s]+="$f "
    step[$s]+="$t "
  done
done
summary() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{ v[NR] = $1 } END {
  m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
  printf "%.4f [%.4f, %.4f]", m, v[1], v[NR] }'; }
for s in huge 4k; do
  echo "$s pages: forward median $(echo "${fwd[$s]}" | summary) ms, step median $(echo "${step[$s]}" | summary) ms"
done
