# adpsgd (asynchronous, one-sided windows) on 2 MPI ranks: finishes without deadlock under an
# injected straggler on either rank, prints the staleness it saw, learns, and sends
# ⌈n/2⌉/n · 4|x| bytes per step (only the active rank puts); on 1 worker it is serial SGD.
source "$(dirname "$0")/common.bash"

common=(--dataset "$SMALL" --steps 40 --batch 32 --lr 0.05 --seed 5 --db t.db --eval-every 20)
for slow in 0 1; do
  timeout 300 "$BIN" run --workers 2 --algo adpsgd "${common[@]}" --straggler "fixed:rank=$slow,delay=5ms" > out.txt 2>&1 ||
    { cat out.txt; fail "adpsgd with straggler on rank $slow failed or hung"; }
  grep -E "adpsgd staleness rank 1 \(passive\): mean [0-9.]+, max [0-9]+" out.txt || fail "no staleness reported"
  grep -E "adpsgd rank 0 \(active\): 40 averagings" out.txt > /dev/null || fail "active rank did not average every step"
  acc=$(sql t.db "select final_test_acc from summaries order by run_id desc limit 1")
  awk -v a="$acc" 'BEGIN{exit !(a >= 0.6)}' || fail "adpsgd accuracy $acc below 0.6"
  bytes=$(sql t.db "select bytes_sent_per_step from summaries order by run_id desc limit 1")
  awk -v b="$bytes" 'BEGIN{exit !(b == 1608)}' || fail "adpsgd recorded $bytes bytes per step, formula 1/2 · 3216 = 1608"
  echo "ok: straggler on rank $slow: accuracy $acc, $bytes bytes per step"
done

"$BIN" run --workers 1 --algo ssgd "${common[@]}" --momentum 0.9 --save-params one.bin > /dev/null || fail "serial failed"
"$BIN" run --workers 1 --algo adpsgd "${common[@]}" --momentum 0.9 --save-params one_ad.bin > /dev/null || fail "adpsgd 1 failed"
cmp one.bin one_ad.bin || fail "adpsgd on 1 worker differs from serial SGD"

set +e
"$BIN" run --workers 2 --algo adpsgd "${common[@]}" --topology random-perm > out.txt 2> err.txt
rc=$?
set -e
[ $rc -ne 0 ] && grep -q -- "--topology random-perm" err.txt || { cat err.txt; fail "adpsgd accepted a time-varying topology"; }
echo PASS
