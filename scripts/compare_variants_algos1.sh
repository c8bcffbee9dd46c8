#!/usr/bin/env bash
# Side-by-side comparison of the SGD variants of algorithms/ on 2 MPI ranks, the Fashion-MNIST
# SVM at a fixed sample budget, with and without an emulated slow link. Prints one table row
# per (network, variant): throughput, compute/comm/wait/overlap per step, bytes per step,
# final accuracy. Usage: scripts/compare_variants_algos1.sh [BIN] [EPOCHS]
# The figures depend on the machine and its load; compare ratios within one run of the script.
set -euo pipefail
BIN="${1:-./build/dsgd-bench}"
EPOCHS="${2:-0.5}"
DB="$(mktemp -d)/compare.db"
variants=(
  "ssgd|--algo ssgd --lr 0.4 --lr-schedule cosine"
  "ssgd-overlap|--algo ssgd --overlap true --bucket-mb 1 --lr 0.4 --lr-schedule cosine"
  "localsgd-H8|--algo localsgd --period 8 --lr 0.4 --lr-schedule cosine"
  "diloco-H8|--algo diloco --period 8 --lr 0.02"
  "cocod-k8|--algo cocod --period 8 --lr 0.4 --lr-schedule cosine"
  "dasgd-H8-d4|--algo dasgd --period 8 --delay 4 --lr 0.4 --lr-schedule cosine"
  "overlap-local-H8|--algo overlap-local --period 8 --lr 0.4 --lr-schedule cosine"
)
printf "%-8s %-17s %10s %9s %9s %9s %9s %11s %8s\n" network variant samples/s step_ms comm_ms wait_ms ovl_ms bytes/step acc
for net in native "1Gbps,1ms"; do
  netflags=()
  [ "$net" = native ] || netflags=(--bandwidth "${net%,*}" --latency "${net#*,}")
  for v in "${variants[@]}"; do
    name="${v%%|*}"
    read -r -a flags <<< "${v#*|}"
    id=$("$BIN" run --workers 2 --dataset fashion-mnist --epochs "$EPOCHS" --batch 64 --seed 3 --db "$DB" \
      "${netflags[@]}" "${flags[@]}" | tail -n 1 | sed 's/run_id=//')
    "$BIN" show "$id" --db "$DB" --format json |
      jq -r --arg net "$net" --arg name "$name" \
        '[$net, $name, .throughput_samples_per_s, .step_time_s*1e3, .comm_s*1e3, .wait_s*1e3, .overlap_s*1e3, .bytes_sent_per_step, .final_test_acc] | @tsv' |
      awk -F'\t' '{printf "%-8s %-17s %10.0f %9.3f %9.3f %9.3f %9.3f %11.0f %8.4f\n", $1, $2, $3, $4, $5, $6, $7, $8, $9}'
  done
done
