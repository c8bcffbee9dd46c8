#!/usr/bin/env bash
# The measured comparison of the variants: every SGD variant side by side on 2 MPI ranks, for a
# fixed sample budget, without emulation and on an emulated slow link. One row per
# (network, variant): throughput, the per-step compute / comm / wait / overlap split
# (docs/metrics.md), bytes per step, final test accuracy; read from the summaries table.
#
# Usage: scripts/compare_variants.sh [--bin B] [--db F] [--steps N] [--workload svm|resnet20]
#                                    [--networks "native 1Gbps/1ms"] [--only "ssgd localsgd-H4"]
#                                    [--backend mpi|sim]
# (--only: variant names as in the table below, exactly; --backend sim: the same runs on the
# simulated cluster, with the compute times of the db's latest calibration of this host and
# the network on a virtual clock: throughput is then independent of the host's load, and
# accuracy is the real numerics. "native" is not a network in sim: give bandwidth/latency.)
# Default: ResNet-20 on Fashion-MNIST, batch 64 per worker, 60 steps (7,680 samples),
# native and 1 Gbit/s with 1 ms latency. Runs are tagged "compare|BACKEND|NETWORK|VARIANT" in the db,
# so `dsgd-bench report --tag ...` and `compare` work on them too.
set -euo pipefail
BIN=./build/dsgd-bench
DB=./compare_variants.db
STEPS=60
WORKLOAD=resnet20
NETWORKS="native 1Gbps/1ms"
ONLY=""
BACKEND=mpi
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) BIN="$2"; shift 2 ;;
    --db) DB="$2"; shift 2 ;;
    --steps) STEPS="$2"; shift 2 ;;
    --workload) WORKLOAD="$2"; shift 2 ;;
    --networks) NETWORKS="$2"; shift 2 ;;
    --only) ONLY="$2"; shift 2 ;;
    --backend) BACKEND="$2"; shift 2 ;;
    *) echo "unknown option '$1' (see the usage at the top of $0)" >&2; exit 2 ;;
  esac
done
case "$WORKLOAD" in
  resnet20) work=(--workload resnet --model resnet20 --dataset fashion-mnist --batch 64)
            sgd=(--lr 0.05 --momentum 0.9) adam=(--optimizer adamw --lr 0.002) ;;
  svm) work=(--workload svm --dataset fashion-mnist --batch 64)
       sgd=(--lr 0.01 --momentum 0.9) adam=(--optimizer adamw --lr 0.001) ;;
  *) echo "--workload: unknown '$WORKLOAD' (available: resnet20, svm)" >&2; exit 2 ;;
esac
if [ ! -x "$BIN" ]; then
  echo "no dsgd-bench program at $BIN: run from the repository root after building, or pass --bin PATH" >&2
  exit 2
fi
case "$BACKEND" in
  mpi|sim) ;;
  *) echo "--backend: unknown '$BACKEND' (available: mpi, sim)" >&2; exit 2 ;;
esac
if [ "$BACKEND" = sim ] && [[ " $NETWORKS " == *" native "* ]]; then
  echo "--backend sim: 'native' is not a simulated network; give --networks as BANDWIDTH/LATENCY, e.g. 1Gbps/1ms" >&2
  exit 2
fi
common=(--workers 2 --steps "$STEPS" --seed 1 --db "$DB" --eval-every "$STEPS" --backend "$BACKEND" "${work[@]}")
# dreamddp's schedule uses this host's measured per-layer backward times (engine/layer_costs):
# calibrate once into the db (ResNet-20 is the model calibrate profiles for --workload resnet).
if [ "$WORKLOAD" = resnet20 ] && [ -z "$(sqlite3 "$DB" "select 1 from profiles limit 1" 2>/dev/null)" ]; then
  echo "== calibrate (per-layer profile at batch 64, for dreamddp's schedule)" >&2
  "$BIN" calibrate --workers 2 --workload resnet --dataset fashion-mnist --batches 64 --quick --db "$DB" > /dev/null
fi
# name|flags (the optimizer flags are appended: SGD with momentum, AdamW for diloco's inner steps)
variants=(
  "ssgd|--algo ssgd"
  "ssgd-overlap|--algo ssgd --overlap true"
  "localsgd-H4|--algo localsgd --period 4"
  "dreamddp-H4|--algo dreamddp --period 4"
  "diloco-H4|--algo diloco --period 4"
  "cocod-k4|--algo cocod --period 4"
  "dasgd-H4-d2|--algo dasgd --period 4 --delay 2"
  "overlap-local-H4|--algo overlap-local --period 4"
  "dpsgd|--algo dpsgd"
  "adpsgd|--algo adpsgd"
  "ps-async|--algo ps --ps-mode async"
  "zero|--algo zero"
  "zero-4bit|--algo zero --zero-bits 4"
  "ssgd-topk0.01|--algo ssgd --compress topk:0.01"
  "ssgd-qsgd4|--algo ssgd --compress qsgd:bits=4"
  "ssgd-powersgd2|--algo ssgd --compress powersgd:rank=2"
  "localsgd-H4-qsgd4|--algo localsgd --period 4 --compress qsgd:bits=4"
  "dreamddp-H4-topk0.01|--algo dreamddp --period 4 --compress topk:0.01"
  "dreamddp-H4-qsgd4|--algo dreamddp --period 4 --compress qsgd:bits=4"
  "dreamddp-H4-powersgd4|--algo dreamddp --period 4 --compress powersgd:rank=4"
)
for net in $NETWORKS; do
  emu=()
  if [ "$net" != native ]; then emu=(--bandwidth "${net%/*}" --latency "${net#*/}"); fi
  for v in "${variants[@]}"; do
    name="${v%%|*}"
    flags="${v#*|}"
    if [ -n "$ONLY" ] && ! [[ " $ONLY " == *" $name "* ]]; then continue; fi
    opt=("${sgd[@]}")
    [[ "$flags" == *diloco* ]] && opt=("${adam[@]}")
    echo "== $net $name" >&2
    # shellcheck disable=SC2086
    if ! "$BIN" run $flags "${opt[@]}" "${common[@]}" "${emu[@]}" --tag "compare|$BACKEND|$net|$name" > /dev/null; then
      echo "   (failed: $name on $net; see the message above)" >&2
    fi
  done
done
sqlite3 -header -column "$DB" "
  select r.tag as 'compare|backend|network|variant',
         printf('%.1f', s.throughput_samples_per_s) as 'samples/s',
         printf('%.1f', 1000*s.step_time_s) as step_ms,
         printf('%.1f', 1000*s.compute_s) as compute_ms,
         printf('%.1f', 1000*s.comm_s) as comm_ms,
         printf('%.1f', 1000*s.wait_s) as wait_ms,
         printf('%.1f', 1000*s.overlap_s) as overlap_ms,
         printf('%.0f', s.bytes_sent_per_step) as bytes_per_step,
         printf('%.4f', s.final_test_acc) as acc,
         printf('%.3f', s.mfu) as mfu
  from runs r join summaries s on s.run_id = r.id where r.tag like 'compare|%' order by r.id"
