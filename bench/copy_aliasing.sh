#!/usr/bin/env bash
# Memory copies slowed by where their buffers sit (core/copy_aliasing.hpp): the SVM's gossip
# steps on 2 MPI ranks with the start-up's fix (the default) against DSGD_COPY_ALIASING=0, one
# process per run, interleaved (the order alternates each round). Prints each run's step and
# its part outside compute, communication and waiting (the variant's model copies and mixes;
# ms, the trainer's summary), the 32 KiB copy the run's start timed at an aliased and a clean
# placement (µs), and per setting the median and [min, max]. On a CPU without the slow case both
# settings are alike (state "none").
#   bench/copy_aliasing.sh [BUILD] [ROUNDS] [ALGOS]     e.g. bench/copy_aliasing.sh build 4 "adpsgd dpsgd"
set -euo pipefail
BUILD=$(realpath "${1:-build}")
ROUNDS=${2:-4}
ALGOS=${3:-adpsgd dpsgd}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
measure() {  # measure SETTING ALGO -> "step_ms outside_ms aliased_us clean_us state"
  local flag=1
  [ "$1" == off ] && flag=0
  DSGD_COPY_ALIASING=$flag "$BUILD/dsgd-bench" run --workload svm --dataset fashion-mnist --batch 64 --steps 400 \
    --warmup 20 --algo "$2" --topology ring --workers 2 --db "$work/c.db" > "$work/out" 2>&1 || { cat "$work/out"; exit 1; }
  sqlite3 -separator ' ' "$work/c.db" "SELECT printf('%.4f', 1e3 * s.step_time_s),
      printf('%.4f', 1e3 * max(0, s.step_time_s - s.compute_s - s.data_s - s.comm_s - s.wait_s - s.injected_s)),
      printf('%.2f', 1e6 * json_extract(r.config_json, '$.\"copy-aliasing\".\"aliased-s\"')),
      printf('%.2f', 1e6 * json_extract(r.config_json, '$.\"copy-aliasing\".\"clean-s\"')),
      json_extract(r.config_json, '$.\"copy-aliasing\".state')
    FROM summaries s JOIN runs r ON r.id = s.run_id WHERE r.id = (SELECT max(id) FROM runs)"
}
summary() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{ v[NR] = $1 } END {
  m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
  printf "%.4f [%.4f, %.4f]", m, v[1], v[NR] }'; }
for a in $ALGOS; do
  declare -A step=() outside=()
  for r in $(seq 1 "$ROUNDS"); do
    order="on off"
    [ $((r % 2)) == 0 ] && order="off on"
    for s in $order; do
      read -r t o ca cc state <<<"$(measure "$s" "$a")"
      echo "$a round $r  fix $s ($state)  step $t ms  outside phases $o ms  32 KiB copy: aliased $ca µs, clean $cc µs"
      step[$s]+="$t "
      outside[$s]+="$o "
    done
  done
  for s in on off; do
    echo "$a fix $s: step median $(echo "${step[$s]}" | summary) ms, outside phases $(echo "${outside[$s]}" | summary) ms"
  done
done
