#!/usr/bin/env bash
# The simulator against real MPI runs, case by case: `dsgd-bench validate` over a matrix of
# workloads x variants x links, in one fresh database (its first validate measures the fabric).
# Prints one line per case: the measured and predicted step, and the relative error of step,
# compute, comm and wait, and of the step predicted from the measured run's own compute (own%:
# the simulator's error with the host's change of speed between the runs and the ranks' own speeds taken out), and the
# measured ranks' compute spread (the slowest rank's mean compute over the fastest's), and on the
# native fabric how far an all-reduce of the model's size right after the measured run was from
# the calibration the prediction read (fabric%); then the
# median and worst step error, and the cases whose compute moved more than 10 % between the
# profile and the measured run (noise) named, with the median and worst of the others. Targets on a quiet machine:
# step within 10 % in every case, median within 5 %, compute within 10 %, comm and wait within
# 20 % (docs/sim.md, "Validation"). validate runs 2 ranks (VM_WORKERS; at most one per core).
#   bench/validate_matrix.sh [BUILD] [OUT_DIR]      e.g. bench/validate_matrix.sh build /tmp/vm
# VM_WORKERS=2 (ranks per case; validate refuses more than the machine's cores),
# VM_WORKLOADS="svm resnet8 gpt" VM_ALGOS="ssgd localsgd dpsgd adpsgd" VM_LINKS="native slow"
# choose the cases (defaults: these; VM_ALGOS may also name ps: asynchronous, colocated servers). OUT_DIR keeps the database and each case's output.
# VM_ALONE=1 adds, per case, the step and compute error of the prediction made from a profile
# of one worker alone (what validate used before it profiled its ranks side by side), against
# the same measured run: an interleaved A/B of the two profiles.
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
    ps) printf 'algo = "ps"\nps-mode = "async"\nps-placement = "colocated"\n' ;;  # not in the default set
  esac
}
link_keys() {
  case $1 in
    native) ;;
    slow) printf 'bandwidth = "100Mbps"\nlatency = "1ms"\n' ;;
  esac
}

printf '%-8s %-9s %-7s %10s %10s %7s %8s %7s %15s %5s %6s %6s%s\n' workload algo link "meas(ms)" "pred(ms)" step% compute% \
  comm% "wait meas/pred" own% spread fabric% "${VM_ALONE:+  alone: step% compute%}"
errors=() alone_errors=() steady_errors=() moved=() own_errors=() spread=() fabric_moved=()
# The prediction from a 1-worker profile measured alone, against measured run $2; prints
# "step% compute%" and appends the step error to alone_errors.
alone_prediction() {
  local name=$1 measured=$2 p s
  { workload_keys "$w"; algo_keys "$a"; } > "$OUT/$name.alone.toml"
  "$B" run --config "$OUT/$name.alone.toml" --workers 1 --db "$DB" --tag vm:alone > "$OUT/$name.alone.out" 2>&1 ||
    { printf '  alone: failed'; return; }
  p=$(sed -n 's/^run_id=\([0-9]*\)$/\1/p' "$OUT/$name.alone.out")
  "$B" run --config "$OUT/$name.toml" --backend sim --workers "${VM_WORKERS:-2}" --profile-from "$p" --native-floor true --db "$DB" \
    --tag vm:alone-sim > "$OUT/$name.alone-sim.out" 2>&1 || { printf '  alone: sim failed'; return; }
  s=$(sed -n 's/^run_id=\([0-9]*\)$/\1/p' "$OUT/$name.alone-sim.out")
  read -r se ce <<<"$(sqlite3 "$DB" "SELECT printf('%.4f %.4f', abs(s.step_time_s - m.step_time_s) / m.step_time_s,
      abs(s.compute_s - m.compute_s) / m.compute_s) FROM summaries s, summaries m WHERE s.run_id = $s AND m.run_id = $measured")"
  alone_errors+=("$se")
  printf '  alone: %5.1f %6.1f' "$(awk -v e="$se" 'BEGIN { print 100 * e }')" "$(awk -v e="$ce" 'BEGIN { print 100 * e }')"
}
for w in ${VM_WORKLOADS:-svm resnet8 gpt}; do
  for a in ${VM_ALGOS:-ssgd localsgd dpsgd adpsgd}; do
    for l in ${VM_LINKS:-native slow}; do
      name="$w-$a-$l"
      { workload_keys "$w"; algo_keys "$a"; link_keys "$l"; printf 'workers = %s\n' "${VM_WORKERS:-2}"; } > "$OUT/$name.toml"
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
      read -r _ _ oe <<<"$(row step_time_s.own_compute)"
      # The host's fabric at the model's size right after the measured run against the
      # calibration the prediction read (native fabric only; validate's note above 20 %).
      read -r _ _ fe <<<"$(row fabric_allreduce_s)"
      # The measured ranks' compute spread (slowest rank's mean compute over the fastest's).
      rs=$(sqlite3 "$DB" "SELECT printf('%.2f', measured) FROM validation_metrics WHERE validation_id = $id
                          AND metric = 'compute_rank_spread'")
      pct() { awk -v e="$1" 'BEGIN { if (e == "" || e < 0) print "-"; else printf "%.1f", 100 * e }'; }
      printf '%-8s %-9s %-7s %10.4g %10.4g %7s %8s %7s %15s %5s %6s %6s' "$w" "$a" "$l" "$sm" "$sp" "$(pct "$se")" \
        "$(pct "$ce")" "$(pct "$me")" "$(printf '%.3g/%.3g' "$wm" "$wp")" "$(pct "$oe")" "${rs:--}" "$(pct "$fe")"
      grep -q "note: the host's fabric moved" "$OUT/$name.out" && fabric_moved+=("$name")
      errors+=("$se")
      [ -n "$oe" ] && own_errors+=("$oe")
      # validate's rank-spread note: one rank computed more than 10 % slower for the whole run.
      grep -q "note: the measured ranks computed at different speeds" "$OUT/$name.out" && spread+=("$name")
      # validate's own note (engine/validation.hpp): compute more than 10 % off, the host's speed
      # moved between the profile run and the measured one.
      if grep -q "note: compute is" "$OUT/$name.out"; then moved+=("$name"); else steady_errors+=("$se"); fi
      [ -n "${VM_ALONE:-}" ] && alone_prediction "$name" "$(sqlite3 "$DB" "SELECT measured_run_id FROM validations WHERE id = $id")"
      printf '\n'
    done
  done
done
summary() {  # LABEL ERRORS...
  local label=$1
  shift
  printf '%s\n' "$@" | sort -g | awk -v label="$label" '{ e[NR] = $1 } END {
    m = (NR % 2) ? e[(NR + 1) / 2] : (e[NR / 2] + e[NR / 2 + 1]) / 2
    printf "%s over %d cases: median %.1f %%, worst %.1f %%\n", label, NR, 100 * m, 100 * e[NR] }'
}
[ ${#errors[@]} -gt 0 ] && summary "step error" "${errors[@]}"
if [ ${#moved[@]} -gt 0 ]; then
  echo "compute moved more than 10 % between the profile and the measured run (the host's speed; validate's note): ${moved[*]}"
  [ ${#steady_errors[@]} -gt 0 ] && summary "step error of the other cases" "${steady_errors[@]}"
fi
[ ${#own_errors[@]} -gt 0 ] && summary "step error from the measured run's own compute (own%)" "${own_errors[@]}"
[ ${#spread[@]} -gt 0 ] &&
  echo "one measured rank computed more than 10 % slower than another for the whole run (spread; validate's note): ${spread[*]}"
[ ${#fabric_moved[@]} -gt 0 ] &&
  echo "the host's fabric moved more than 20 % since its calibration (fabric%; validate's note): ${fabric_moved[*]}"
[ ${#alone_errors[@]} -gt 0 ] && summary "step error from a profile alone" "${alone_errors[@]}"
echo "load average now: $(cut -d' ' -f1-3 /proc/loadavg); database and outputs in $OUT"
