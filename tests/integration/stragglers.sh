# Stragglers are measured where they belong: with `fixed:rank=1,delay=20ms` on ssgd, the
# injected time is recorded on rank 1, rank 0 *waits* 20 ms ± 15 % per step for it, rank
# 1 waits ~0, and comm does not absorb the delay (same as without the straggler, ± noise).
source "$(dirname "$0")/common.bash"

common=(--workers 2 --dataset "$SMALL" --algo ssgd --steps 50 --batch 32 --db t.db)
"$BIN" run "${common[@]}" > base.txt || fail "baseline run failed"
base=$(last_run_id base.txt)
"$BIN" run "${common[@]}" --straggler "fixed:rank=1,delay=20ms" > slow.txt || fail "straggler run failed"
slow=$(last_run_id slow.txt)

ms() { sqlite3 t.db "select printf('%.3f', 1e3 * avg($2)) from steps where run_id=$1 and timed and rank=$3"; }
w0=$(ms "$slow" wait_s 0)
w1=$(ms "$slow" wait_s 1)
i1=$(ms "$slow" injected_s 1)
i0=$(ms "$slow" injected_s 0)
c0=$(ms "$slow" comm_s 0)
c0_base=$(ms "$base" comm_s 0)
echo "rank 0 wait ${w0} ms, rank 1 wait ${w1} ms, rank 1 injected ${i1} ms, rank 0 injected ${i0} ms"
echo "rank 0 comm ${c0} ms with the straggler, ${c0_base} ms without"
awk -v w="$w0" 'BEGIN{exit !(w >= 17 && w <= 23)}' || fail "rank 0 wait ${w0} ms is not 20 ms ± 15%"
awk -v w="$w1" 'BEGIN{exit !(w < 2)}' || fail "rank 1 wait ${w1} ms is not near zero"
awk -v i="$i1" 'BEGIN{exit !(i >= 20 && i <= 21.5)}' || fail "rank 1 injected ${i1} ms is not 20 ms"
awk -v i="$i0" 'BEGIN{exit !(i == 0)}' || fail "rank 0 got injected delay"
awk -v a="$c0" -v b="$c0_base" 'BEGIN{d=a-b; if(d<0)d=-d; exit !(d < 5)}' ||
  fail "comm changed by more than 5 ms (a quarter of the delay): ${c0} vs ${c0_base}"
jq -e '.injected_s > 0.009' <("$BIN" show "$slow" --db t.db --format json) > /dev/null ||
  fail "summary injected_s missing (mean over both ranks should be ~10 ms)"

# Every model parses and runs; bad specs are refused with one clear message.
"$BIN" run "${common[@]}" --steps 20 \
  --straggler "fixed:rank=0,factor=2;random:p=0.1,delay=1ms;lognormal:sigma=0.3;pareto:alpha=3,scale=100us;periodic:rank=1,every=5,delay=2ms" \
  > all.txt || fail "combined straggler models failed"
for bad in "fixed:rank=7,delay=1ms" "fixed:rank=1,delay=-5ms" "fixed:rank=1" "wobbly:x=1" "random:p=2,delay=1ms" \
  "fixed:rank=1,delay=20" "periodic:rank=0,every=0,delay=1ms"; do
  set +e
  "$BIN" run "${common[@]}" --straggler "$bad" > out.txt 2> err.txt
  rc=$?
  set -e
  [ $rc -ne 0 ] || fail "accepted --straggler $bad"
  grep -q -- "--straggler" err.txt || { cat err.txt; fail "no clear message for --straggler $bad"; }
  echo "ok: --straggler $bad -> $(head -n 1 err.txt)"
done
echo PASS
