#!/usr/bin/env bash
# Side-by-side comparison of the part-2 variants (and ssgd/localsgd as references) on 2 MPI
# ranks: the SVM on Fashion-MNIST for a fixed sample budget, with an emulated slow link and
# without emulation. Prints one row per (network, variant): throughput, the per-step split,
# bytes per step, final accuracy, from the summaries table.
# Usage: scripts/compare_algos2.sh [BIN] [DB] [STEPS]
set -euo pipefail
BIN="${1:-./build/dsgd-bench}"
DB="${2:-./compare_algos2.db}"
STEPS="${3:-300}"
common=(--workers 2 --dataset fashion-mnist --steps "$STEPS" --batch 64 --lr 0.01 --momentum 0.9 --seed 1 --db "$DB")
variants=("ssgd" "localsgd --period 4" "dpsgd" "dpsgd --dpsgd-delay 1" "adpsgd" "zero" "zero --zero-bits 4"
  "ssgd --compress topk:0.01" "ssgd --compress qsgd:bits=4" "ssgd --compress powersgd:rank=2")
for net in "native" "1Gbps/1ms"; do
  emu=()
  [ "$net" = native ] || emu=(--bandwidth 1Gbps --latency 1ms)
  for v in "${variants[@]}"; do
    # shellcheck disable=SC2086
    "$BIN" run --algo $v "${common[@]}" "${emu[@]}" --tag "$net|$v" > /dev/null
  done
done
sqlite3 -header -column "$DB" "
  select r.tag as 'network|variant',
         printf('%.0f', s.throughput_samples_per_s) as 'samples/s',
         printf('%.2f', 1000*s.step_time_s) as step_ms,
         printf('%.2f', 1000*s.compute_s) as compute_ms,
         printf('%.2f', 1000*s.comm_s) as comm_ms,
         printf('%.2f', 1000*s.wait_s) as wait_ms,
         printf('%.2f', 1000*s.overlap_s) as overlap_ms,
         printf('%.0f', s.bytes_sent_per_step) as bytes_per_step,
         printf('%.4f', s.final_test_acc) as acc
  from runs r join summaries s on s.run_id = r.id order by r.id"
