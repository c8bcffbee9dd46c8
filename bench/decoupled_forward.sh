#!/usr/bin/env bash
# pdasgd's decoupled forward (a forward thread one step ahead of the backward) against ssgd on
# real MPI ranks, interleaved: each round runs ssgd and pdasgd --pd-staleness 1 on the same
# configuration in alternating order (ssgd first in odd rounds), so a noisy neighbour hits both
# alike. Prints per configuration the median and [min, max] of each variant's mean timed step
# (the trainer's summary, ms), the exposed forward of pdasgd, and the median and range of the
# per-round ratio pdasgd/ssgd (< 1: pdasgd is faster).
#   bench/decoupled_forward.sh [BUILD] [ROUNDS]        e.g. bench/decoupled_forward.sh build 5
# DF_ONLY="resnet1 gpt1" measures only those. The configurations (--threads 1 per rank):
#   resnet1  ResNet-20 on Fashion-MNIST, 1 rank, batch 32, 40 steps (the forward thread takes
#            the second core)
#   gpt1     GPT L4 d256 h4 s128 on fortunes, 1 rank, batch 8, 30 steps
#   resnet2  ResNet-20, 2 ranks on the 2 cores, batch 32, 40 steps (each rank's forward thread
#            competes with the other rank for a core)
set -euo pipefail
BUILD=$(realpath "${1:-build}")
ROUNDS=${2:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1

config() {  # config NAME -> the run flags
  case $1 in
    resnet1) echo "--workload resnet --dataset fashion-mnist --workers 1 --batch 32 --steps 40" ;;
    gpt1) echo "--workload transformer --dataset fortunes --workers 1 --batch 8 --steps 30" ;;
    resnet2) echo "--workload resnet --dataset fashion-mnist --workers 2 --batch 32 --steps 40" ;;
  esac
}
measure() {  # measure NAME ALGO... -> "step_ms fwd_ms"
  local name=$1
  shift
  rm -f "$work/r.db"
  # shellcheck disable=SC2046
  "$BUILD/dsgd-bench" run $(config "$name") --warmup 5 --eval-every 1000 --db "$work/r.db" --algo "$@" >/dev/null 2>&1
  sqlite3 "$work/r.db" "SELECT step_time_s * 1e3, fwd_s * 1e3 FROM summaries" | tr '|' ' '
}

read -r -a names <<<"${DF_ONLY:-resnet1 gpt1 resnet2}"
: >"$work/rows"
for ((r = 1; r <= ROUNDS; r++)); do
  for name in "${names[@]}"; do
    order=(ssgd pdasgd)
    ((r % 2 == 0)) && order=(pdasgd ssgd)
    for side in "${order[@]}"; do
      if [ "$side" = ssgd ]; then
        read -r step fwd < <(measure "$name" ssgd)
      else
        read -r step fwd < <(measure "$name" pdasgd --pd-staleness 1)
      fi
      echo "$r $name $side $step $fwd" >>"$work/rows"
    done
  done
done
python3 - "$work/rows" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
for name in dict.fromkeys(r[1] for r in rows):
    by = {(int(r[0]), r[2]): (float(r[3]), float(r[4])) for r in rows if r[1] == name}
    rounds = sorted({k[0] for k in by})
    s = [by[(k, 'ssgd')][0] for k in rounds]
    p = [by[(k, 'pdasgd')][0] for k in rounds]
    f = [by[(k, 'pdasgd')][1] for k in rounds]
    fs = [by[(k, 'ssgd')][1] for k in rounds]
    ratio = [b / a for a, b in zip(s, p)]
    fmt = lambda v: f"{statistics.median(v):8.1f} [{min(v):.1f}, {max(v):.1f}]"
    print(f"{name:8s} ssgd step {fmt(s)} ms (fwd {statistics.median(fs):.1f})   pdasgd S=1 step {fmt(p)} ms "
          f"(exposed fwd {statistics.median(f):.1f})   pdasgd/ssgd {statistics.median(ratio):.3f} "
          f"[{min(ratio):.3f}, {max(ratio):.3f}]  ({len(rounds)} rounds)")
EOF
