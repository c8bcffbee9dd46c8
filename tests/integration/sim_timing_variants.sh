# --timing-only for the variants whose timing does not depend on the interleaving, each
# checked against its full simulation (threaded numerics on the virtual clock) with the same
# configuration, 6 workers, a lognormal straggler and a 100 Mbit/s link (docs/sim.md):
# ssgd (blocking, and --overlap with one bucket and one per layer), cocod, dasgd (d = 2 and 0), overlap-local, zero,
# lasgd (2 threads), pdasgd (S = 1 and 2, its forward thread a second core; also under a
# factor and a random-delay straggler, and on ResNet-8) and dreamddp (H = 1 and 4, with and without --dreamddp-fill, on the
# SVM at two compute scales, the larger one leaving idle link time that the fill uses, and on
# ResNet-8 with its 10 layers spread over the slots). Tolerance: the sums over (rank, step) of step_s, comm_s,
# wait_s, overlap_s and bytes_sent within 1e-9 relative (float sums in another order; the
# rules model the points at which the numerics poll their requests).
source "$(dirname "$0")/common.bash"

common=(--dataset "$SMALL" --steps 37 --batch 32 --lr 0.05 --seed 11 --db t.db --eval-every 10)
"$BIN" run --workers 1 --algo ssgd "${common[@]}" > prof.out || fail "profile run failed"
# Compute x100: a step's compute comparable to the link's all-reduce, so that the overlapped
# variants hide part of it and the waits are not all zero.
sim=(--backend sim --profile-from "$(last_run_id prof.out)" --bandwidth 100Mbps --latency 200us --compute-scale 100)
tcommon=(--workers 6 "${common[@]}" "${sim[@]}" --straggler "lognormal:sigma=0.3")

close() {  # close A B TOL
  awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN{d=a-b; if(d<0)d=-d; exit !(d <= t*(a<0?-a:a) + 1e-12)}'
}
check() {  # check "ALGO FLAGS" RUN-OPTIONS...: numerics and timing-only alike
  local algo=$1
  shift
  # shellcheck disable=SC2086
  "$BIN" run --algo $algo "$@" > num.out 2>&1 || { cat num.out; fail "numerics $algo failed"; }
  # shellcheck disable=SC2086
  "$BIN" run --algo $algo "$@" --timing-only true > tim.out 2>&1 || { cat tim.out; fail "timing-only $algo failed"; }
  N=$(last_run_id num.out)
  T=$(last_run_id tim.out)
  for col in step_s comm_s wait_s bytes_sent; do
    a=$(sql t.db "SELECT sum($col) FROM steps WHERE run_id=$N")
    b=$(sql t.db "SELECT sum($col) FROM steps WHERE run_id=$T")
    close "$a" "$b" 1e-9 || fail "timing-only $algo: sum of $col $b differs from the numerics' $a"
  done
  a=$(sql t.db "SELECT sum(overlap_s) FROM steps WHERE run_id=$N")
  b=$(sql t.db "SELECT sum(overlap_s) FROM steps WHERE run_id=$T")
  close "$a" "$b" 1e-9 || fail "timing-only $algo: overlap $b differs from the numerics' $a"
  # And row by row: every (rank, step) and every timed column.
  local off="" c
  for c in step_s data_s fwd_s bwd_s opt_s comm_s wait_s overlap_s injected_s bytes_sent; do
    off+="${off:+ OR }abs(a.$c - b.$c) > 1e-9 * abs(a.$c) + 1e-12"
  done
  [[ $(sql t.db "SELECT count(*) FROM steps WHERE run_id=$N") == $(sql t.db "SELECT count(*) FROM steps WHERE run_id=$T") ]] ||
    fail "timing-only $algo: another number of step rows than the numerics"
  a=$(sql t.db "SELECT count(*) FROM steps a JOIN steps b ON b.run_id=$T AND b.rank=a.rank AND b.step=a.step
    WHERE a.run_id=$N AND ($off)")
  [[ $a == 0 ]] || fail "timing-only $algo: $a (rank, step) rows differ from the numerics'"
  echo "ok: $algo: every row's timings as the numerics' (overlap sum $b)"
}
dream=("dreamddp --period 1" "dreamddp --period 4" "dreamddp --period 4 --dreamddp-fill false"
  "dreamddp --period 1 --dreamddp-fill false")
for algo in "ssgd" "ssgd --overlap true --bucket-mb 1" "ssgd --overlap true" "cocod --period 4" \
  "dasgd --period 4 --delay 2" "dasgd --period 4 --delay 0" "overlap-local --period 4" "zero" \
  "lasgd --period 4 --local-threads 2" "pdasgd --pd-staleness 1" "pdasgd --pd-staleness 2" "${dream[@]}"; do
  check "$algo" "${tcommon[@]}"
done
# pdasgd's forward thread under stragglers with fixed parts (held by the backward's thread only).
check "pdasgd --pd-staleness 1" --workers 6 "${common[@]}" "${sim[@]}" --straggler "fixed:rank=2,factor=2;random:p=0.3,delay=2ms"
# dreamddp with compute x3000: backward hides the link, so the fill adds extra averages
# (H = 4: the second layer again in slots 1-3), which the timing-only rule must launch too.
for algo in "${dream[@]}"; do
  check "$algo" "${tcommon[@]}" --compute-scale 3000
  [[ $algo != "dreamddp --period 4" ]] && continue
  extra=$(sql t.db "SELECT config_json FROM runs WHERE id=$N" | jq '[.["algorithm-details"].schedule[].extra[]] | length')
  [[ $extra -gt 0 ]] || fail "dreamddp at compute x3000: no extra averages, the fill is not exercised"
done

# ResNet-8 (10 layers) on 6 workers, its own profile.
IMAGES="synthetic:shape=3x8x8,classes=4,n=256,test=64,noise=0.5"
rcommon=(--workload resnet --model resnet8 --dataset "$IMAGES" --steps 13 --batch 8 --lr 0.05 --momentum 0.9 --seed 11
  --db t.db --eval-every 10)
"$BIN" run --workers 1 --algo ssgd "${rcommon[@]}" > rprof.out || fail "resnet profile run failed"
rsim=(--workers 6 "${rcommon[@]}" --backend sim --profile-from "$(last_run_id rprof.out)" --bandwidth 100Mbps
  --latency 200us --compute-scale 20 --straggler "lognormal:sigma=0.3")
for algo in "${dream[@]}" "pdasgd --pd-staleness 1"; do
  check "$algo" "${rsim[@]}"
done
check "dreamddp --period 3" "${rsim[@]}" --topology hier:2x3 --inter-bandwidth 20Mbps --inter-latency 1ms
echo PASS
