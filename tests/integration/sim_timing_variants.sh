# --timing-only for the variants whose timing does not depend on the interleaving, each
# checked against its full simulation (threaded numerics on the virtual clock) with the same
# configuration, 6 workers, a lognormal straggler and a 100 Mbit/s link (docs/sim.md):
# ssgd (blocking, and --overlap with one bucket and one per layer), cocod, dasgd (d = 2 and 0), overlap-local, zero,
# lasgd (2 threads) and pdasgd. Tolerance: the sums over (rank, step) of step_s, comm_s,
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
for algo in "ssgd" "ssgd --overlap true --bucket-mb 1" "ssgd --overlap true" "cocod --period 4" \
  "dasgd --period 4 --delay 2" "dasgd --period 4 --delay 0" "overlap-local --period 4" "zero" \
  "lasgd --period 4 --local-threads 2" "pdasgd --pd-staleness 2"; do
  # shellcheck disable=SC2086
  "$BIN" run --algo $algo "${tcommon[@]}" > num.out 2>&1 || { cat num.out; fail "numerics $algo failed"; }
  # shellcheck disable=SC2086
  "$BIN" run --algo $algo "${tcommon[@]}" --timing-only true > tim.out 2>&1 || { cat tim.out; fail "timing-only $algo failed"; }
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
  echo "ok: $algo: step, comm, wait, bytes as the numerics; overlap $b vs $a"
done
echo PASS
