#!/usr/bin/env bash
# The simulator against real MPI runs, case by case: `dsgd-bench validate` over a matrix of
# workloads x variants x links, in one fresh database (its first validate measures the fabric).
# Prints one line per case: the measured and predicted step, and the relative error of step,
# compute, comm and wait; then the median and worst step error. Targets on a quiet machine:
# step within 10 % in every case, median within 5 %, compute within 10 %, comm and wait within
# 20 % (docs/sim.md, "Validation"). validate runs 2 ranks (this machine has 2 cores).
#   bench/validate_matrix.sh [BUILD] [OUT_DIR]      e.g. bench/validate_matrix.sh build /tmp/vm
# VM_WORKLOADS="svm resnet8 gpt" VM_ALGOS="ssgd localsgd dpsgd adpsgd" VM_LINKS="native slow"
# choose the cases (defaults: all). OUT_DIR keeps the database and each case's output.
set -euo pipefail
BUILD=$(realpath "${1:-build}")
OUT=${2:-$(mktemp -d)}
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
DB="$OUT/validate_matrix.db"
B="$BUILD/dsgd-bench"
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1

workload_keys() {  # the run keys of a workload: a compute-bound SVM, ResNet-8, a small GPT
  case $1 in
    svm) printf 'workload = "svm"\ndataset = "fashion-mnist"\nbatch = 64\nsteps = 400\nwarmup = 20\n' ;;
    resnet8) printf 'workload = "resnet"\nmodel = "resnet8"\ndataset = "fashion-mnist"\nbatch = 32\nsteps = 40\nwarmup = 5\neval-every = 40\n' ;;
    gpt) printf 'workload = "transformer"\nmodel = "gpt"\ndataset = "fortunes"\nlayers = 2\nd-model = 128\nheads = 4\nseq = 64\nbatch = 8\nsteps = 40\nwarmup = 5\neval-every = 40\n' ;;
  esac
}
algo_keys() {
  case $1 in
    ssgd) printf 'algo = "ssgd"\n' ;;
    localsgd) printf 'algo = "localsgd"\nperiod = 8\n' ;;
    dpsgd) printf 'algo = "dpsgd"\ntopology = "ring"\n' ;;
    adpsgd) printf 'algo = "adpsgd"\n' ;;
  esac
}
link_keys() {
  case $1 in
    native) ;;
    slow) printf 'bandwidth = "100Mbps"\nlatency = "1ms"\n' ;;
  esac
}

printf '%-8s %-9s %-7s %10s %10s %7s %8s %7s %15s\n' workload algo link "meas(ms)" "pred(ms)" step% compute% comm% "wait meas/pred"
errors=()
for w in ${VM_WORKLOADS:-svm resnet8 gpt}; do
  for a in ${VM_ALGOS:-ssgd localsgd dpsgd adpsgd}; do
    for l in ${VM_LINKS:-native slow}; do
      name="$w-$a-$l"
      { workload_keys "$w"; algo_keys "$a"; link_keys "$l"; } > "$OUT/$name.toml"
      if ! "$B" validate --config "$OUT/$name.toml" --db "$DB" > "$OUT/$name.out" 2>&1; then
        printf '%-8s %-9s %-7s failed: %s\n' "$w" "$a" "$l" "$(tail -n 2 "$OUT/$name.out" | tr '\n' ' ')"
        continue
      fi
      id=$(sed -n 's/^validation_id=\([0-9]*\)$/\1/p' "$OUT/$name.out")
      # Times in ms; the relative errors in %; wait as measured/predicted ms (its relative
      # error means little when the measured wait is a sliver of the step).
      row() { sqlite3 "$DB" "SELECT printf('%.6f %.6f %.4f', 1e3 * measured, 1e3 * predicted, coalesce(rel_error, -1))
                             FROM validation_metrics WHERE validation_id = $id AND metric = '$1'"; }
      read -r sm sp se <<<"$(row step_time_s)"
      read -r _ _ ce <<<"$(row compute_s)"
      read -r _ _ me <<<"$(row comm_s)"
      read -r wm wp _ <<<"$(row wait_s)"
      pct() { awk -v e="$1" 'BEGIN { if (e < 0) print "-"; else printf "%.1f", 100 * e }'; }
      printf '%-8s %-9s %-7s %10.4g %10.4g %7s %8s %7s %15s\n' "$w" "$a" "$l" "$sm" "$sp" "$(pct "$se")" "$(pct "$ce")" \
        "$(pct "$me")" "$(printf '%.3g/%.3g' "$wm" "$wp")"
      errors+=("$se")
    done
  done
done
if [ ${#errors[@]} -gt 0 ]; then
  printf '%s\n' "${errors[@]}" | sort -g | awk '{ e[NR] = $1 } END {
    m = (NR % 2) ? e[(NR + 1) / 2] : (e[NR / 2] + e[NR / 2 + 1]) / 2
    printf "step error over %d cases: median %.1f %%, worst %.1f %%\n", NR, 100 * m, 100 * e[NR] }'
fi
echo "load average now: $(cut -d' ' -f1-3 /proc/loadavg); database and outputs in $OUT"
