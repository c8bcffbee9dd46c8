#!/usr/bin/env bash
# Before/after comparison of two Release builds of dsgd-bench on this machine, interleaved:
# each round runs every measurement once with build A and once with build B, in alternating
# order (A first in odd rounds, B first in even ones), so a noisy neighbour hits both alike.
# Prints per measurement the median and [min, max] of A and of B, and the median and range of
# the per-round ratio B/A (> 1: B is slower).
#   bench/ab_compare.sh BUILD_A BUILD_B [ROUNDS]    e.g. bench/ab_compare.sh /tmp/old/build build 7
# AB_ONLY="run_svm_step instr_on" measures only those (instr_on gives instr_overhead too).
# Each BUILD is a build directory with dsgd-bench and bench/{bench_instrumentation,bench_svm,
# bench_gpt_step,bench_resnet} built (cmake --build BUILD --target ...).
# The measurements (one number each, seconds or percent):
#   run_svm_step   dsgd-bench run, 1 worker on the mpi backend, SVM on synthetic 20000x784,
#                  batch 64, 600 steps: its "step" line (mean timed step through the trainer)
#   instr_on       bench_instrumentation: median step with timers on (1-worker SVM run)
#   instr_overhead bench_instrumentation: timers on vs off, percent
#   svm_epoch      bench_svm BM_SvmEpochDense/fused: one Fashion-MNIST epoch (real time)
#   gpt_step       bench_gpt_step L2 d128 h4 s64 b8: median training step
#   resnet_step    bench_resnet resnet20 b32 3x32x32, 1 thread: median training step
set -euo pipefail
A=$(realpath "$1")
B=$(realpath "$2")
ROUNDS=${3:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1

measure() {  # measure BUILD NAME -> prints one number
  local b=$1 name=$2
  case $name in
    run_svm_step)
      rm -f "$work/r.db"
      "$b/dsgd-bench" run --workers 1 --dataset synthetic:n=20000,d=784,classes=10,test=1000 --batch 64 \
        --steps 600 --eval-every 600 --db "$work/r.db" 2>/dev/null |
        awk '$1 == "step" && NF == 3 { print $2 / 1000; exit }' ;;
    svm_epoch)
      "$b/bench/bench_svm" --benchmark_filter='BM_SvmEpochDense/fused/' --benchmark_min_time=0.5 \
        --benchmark_format=json 2>/dev/null >"$work/s.json"
      python3 -c "import json; print(json.load(open('$work/s.json'))['benchmarks'][0]['real_time']/1e3)" ;;
    gpt_step)
      "$b/bench/bench_gpt_step" --layers 2 --d-model 128 --heads 4 --seq 64 --batch 8 --steps 20 --warmup 3 \
        --threads 1 2>/dev/null | python3 -c "import json,sys; print(json.loads(sys.stdin.readlines()[-1])['step_median_s'])" ;;
    resnet_step)
      "$b/bench/bench_resnet" --model resnet20 --batch 32 --shape 3x32x32 --threads 1 --steps 7 --warmup 2 \
        2>/dev/null | python3 -c "import json,sys; print(json.loads(sys.stdin.readlines()[-1])['median_s'])" ;;
  esac
}

read -r -a names <<<"${AB_ONLY:-run_svm_step instr_on svm_epoch gpt_step resnet_step}"
: >"$work/rows"
for ((r = 1; r <= ROUNDS; r++)); do
  for name in "${names[@]}"; do
    order=("A $A" "B $B")
    ((r % 2 == 0)) && order=("B $B" "A $A")
    for entry in "${order[@]}"; do
      side=${entry%% *}
      dir=${entry#* }
      if [ "$name" = instr_on ]; then
        "$dir/bench/bench_instrumentation" --benchmark_format=json 2>/dev/null >"$work/i.json"
        python3 -c "import json; c=json.load(open('$work/i.json'))['benchmarks'][0]; \
print('$r $side instr_on', c['step_us_timers_on']/1e6); print('$r $side instr_overhead', c['overhead_pct'])" >>"$work/rows"
      else
        echo "$r $side $name $(measure "$dir" "$name")" >>"$work/rows"
      fi
    done
  done
  echo "round $r of $ROUNDS done" >&2
done

python3 - "$work/rows" <<'EOF'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
names = []
vals = {}
for row in rows:
    if len(row) != 4:
        print(f"ab_compare: no number from: {' '.join(row)}", file=sys.stderr)
        continue
    r, side, name, v = row
    if name not in names: names.append(name)
    vals.setdefault((name, side), {})[int(r)] = float(v)
print(f"{'measurement':<15} {'A median [min, max]':>30} {'B median [min, max]':>30} {'B/A median [min, max]':>24}")
for n in names:
    a, b = vals[(n, 'A')], vals[(n, 'B')]
    def fmt(d):
        x = list(d.values()); return f"{st.median(x):.4g} [{min(x):.4g}, {max(x):.4g}]"
    if n == 'instr_overhead':
        print(f"{n:<15} {fmt(a) + ' %':>30} {fmt(b) + ' %':>30} {'(percent points)':>24}")
        continue
    ratios = [b[r] / a[r] for r in a if r in b and a[r] > 0]
    print(f"{n:<15} {fmt(a) + ' s':>30} {fmt(b) + ' s':>30} "
          f"{st.median(ratios):>8.3f} [{min(ratios):.3f}, {max(ratios):.3f}]")
EOF
