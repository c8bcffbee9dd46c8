#!/usr/bin/env bash
# dreamddp vs localsgd (same H) vs ssgd on 2 MPI ranks: ResNet on Fashion-MNIST at a fixed
# sample budget, under an emulated slow link (default 1 Gbit/s, 1 ms). First calibrates this
# host's per-layer compute profile of the model at the batch (so dreamddp's schedule uses
# measured backward times), then prints one row per variant: throughput, step, compute,
# comm, wait and overlap per step (ms, docs/metrics.md), bytes per step, final test accuracy,
# and dreamddp's schedule. The claim under test (Tang et al. 2025): dreamddp hides more
# communication (overlap) than localsgd at the same H. The figures depend on the machine
# and its load: compare within one run of the script.
# The model is ResNet-20, the one `calibrate` profiles for --workload resnet.
# Usage: scripts/dreamddp_compare.sh [BIN] [STEPS] [H] [BANDWIDTH] [LATENCY]
set -euo pipefail
BIN="${1:-./build/dsgd-bench}"
STEPS="${2:-120}"
H="${3:-4}"
BW="${4:-1Gbps}"
LAT="${5:-1ms}"
BATCH=32
DIR="$(mktemp -d)"
DB="$DIR/compare.db"
model=(--workload resnet --dataset fashion-mnist)
"$BIN" calibrate --workers 2 "${model[@]}" --batches "$BATCH" --quick --db "$DB" > "$DIR/calibrate.txt" 2>&1 ||
  { cat "$DIR/calibrate.txt"; exit 1; }
variants=(
  "ssgd|--algo ssgd"
  "ssgd-overlap|--algo ssgd --overlap true"
  "localsgd-H$H|--algo localsgd --period $H"
  "dreamddp-H$H|--algo dreamddp --period $H --schedule true"
)
printf "%-14s %9s %8s %8s %8s %8s %8s %11s %7s\n" variant samples/s step_ms cmp_ms comm_ms wait_ms ovl_ms bytes/step acc
for v in "${variants[@]}"; do
  name="${v%%|*}"
  read -r -a flags <<< "${v#*|}"
  "$BIN" run --workers 2 "${model[@]}" --steps "$STEPS" --batch "$BATCH" --lr 0.05 --momentum 0.9 --seed 3 \
    --eval-every "$STEPS" --bandwidth "$BW" --latency "$LAT" --db "$DB" "${flags[@]}" > "$DIR/$name.txt"
  id=$(tail -n 1 "$DIR/$name.txt" | sed 's/run_id=//')
  "$BIN" show "$id" --db "$DB" --format json |
    jq -r --arg name "$name" \
      '[$name, .throughput_samples_per_s, .step_time_s*1e3, (.fwd_s+.bwd_s+.opt_s+.data_s)*1e3, .comm_s*1e3, .wait_s*1e3, .overlap_s*1e3, .bytes_sent_per_step, .final_test_acc] | @tsv' |
    awk -F'\t' '{printf "%-14s %9.1f %8.2f %8.2f %8.2f %8.2f %8.2f %11.0f %7.4f\n", $1, $2, $3, $4, $5, $6, $7, $8, $9}'
done
echo
grep "^#\|^  " "$DIR/dreamddp-H$H.txt" | head -40
