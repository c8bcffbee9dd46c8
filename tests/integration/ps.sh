# ps (parameter server, algorithms/ps.cpp): sync with 2 workers + 1 dedicated server (3
# ranks) equals ssgd on 2 workers bit for bit (the data is sharded among workers only), every
# mode on 1 worker equals serial SGD, async and ssp finish under a straggler and record
# staleness (steps.staleness, summaries), the bytes per step follow docs/algorithms.md, and
# bad input is refused with a message naming the flag; the push inside the optimizer step is
# comm, not optimizer time (simulated: opt_s is the profile's).
source "$(dirname "$0")/common.bash"

common=(--dataset "$SMALL" --steps 40 --batch 32 --lr 0.05 --seed 5 --db t.db --eval-every 20)
last() { sql t.db "select $1 from summaries order by run_id desc limit 1"; }
last_id() { sql t.db "select max(id) from runs"; }

# Server placement: dedicated (3 ranks: workers 0 and 1, server 2; the data is sharded among
# the workers only) and colocated (2 ranks, each trains and serves one shard: every rank opens
# epochs on its own window and on the other's; lost pushes would break the equality with ssgd
# or hang sync mode; docs/cluster.md, one-sided windows).
ded=(--workers 3 --algo ps --ps-placement dedicated)
near() { awk -v a="$1" -v b="$2" 'BEGIN{d=a-b; if(d<0)d=-d; exit !(d <= 1e-6 * (1 + (b<0?-b:b)))}'; }

# Equivalences.
"$BIN" run --workers 2 --algo ssgd "${common[@]}" --momentum 0.9 --save-params ssgd.bin > /dev/null || fail "ssgd failed"
timeout 300 "$BIN" run "${ded[@]}" --ps-mode sync "${common[@]}" --momentum 0.9 --save-params ps_sync.bin > out.txt 2>&1 ||
  { cat out.txt; fail "ps sync failed"; }
cmp ssgd.bin ps_sync.bin || fail "ps sync (2 workers + 1 dedicated server) differs from ssgd on 2 workers"
grep -q "ps rank 2: server only" out.txt || fail "rank 2 did not report serving only"
id=$(last_id)
[ "$(sql t.db "select json_extract(config_json, '$.\"compute-workers\"') from runs where id=$id")" = "2" ] ||
  fail "dedicated run did not store compute-workers = 2"
[ "$(sql t.db "select count(*) from steps where run_id=$id and rank=2 and staleness is not null")" = "0" ] ||
  fail "the dedicated server recorded staleness"
[ "$(last staleness_max)" = "0.0" ] || fail "ps sync recorded staleness $(last staleness_max), expected 0"
bytes=$(last bytes_sent_per_step)
# 804 parameters, K = 1 shard of m = 804; each worker's push puts header 2 + params +
# velocity + accumulator to the server; mean over the 3 ranks.
near "$bytes" "$(awk 'BEGIN{printf "%.10f", 2 * 4 * (2 + 3 * 804) / 3}')" || fail "ps sync recorded $bytes bytes per step, formula 2·4·(2+3·804)/3"
echo "ok: ps sync (dedicated) = ssgd (bit-identical), $bytes bytes per step"

# Colocated on 2 MPI ranks (K = 2 shards, one per rank): sync = ssgd bit for bit, three runs.
for i in 1 2 3; do
  timeout 300 "$BIN" run --workers 2 --algo ps --ps-placement colocated --ps-mode sync "${common[@]}" --momentum 0.9 \
    --save-params ps_col.bin > out.txt 2>&1 || { cat out.txt; fail "ps sync colocated on 2 ranks failed or hung (run $i)"; }
  cmp ssgd.bin ps_col.bin || fail "ps sync colocated (2 ranks, 2 shards) differs from ssgd on 2 workers (run $i)"
done
[ "$(last staleness_max)" = "0.0" ] || fail "ps sync colocated recorded staleness $(last staleness_max), expected 0"
bytes=$(last bytes_sent_per_step)
# 804 parameters, K = 2 shards of m = 402; each rank pushes to the other's shard: K(n−1) = 2 pairs.
near "$bytes" "$(awk 'BEGIN{printf "%.10f", 2 * 4 * (2 + 3 * 402) / 2}')" || fail "ps sync colocated recorded $bytes bytes per step, formula 2·4·(2+3·402)/2"
echo "ok: ps sync (colocated, 2 ranks) = ssgd (bit-identical, 3 runs), $bytes bytes per step"

"$BIN" run --workers 1 --algo ssgd "${common[@]}" --momentum 0.9 --save-params one.bin > /dev/null || fail "serial failed"
for mode in "sync" "async" "ssp --ps-staleness 0"; do
  # shellcheck disable=SC2086
  "$BIN" run --workers 1 --algo ps --ps-mode $mode "${common[@]}" --momentum 0.9 --save-params one_ps.bin > out.txt 2>&1 ||
    { cat out.txt; fail "ps $mode on 1 worker failed"; }
  cmp one.bin one_ps.bin || fail "ps $mode on 1 worker differs from serial SGD"
done
timeout 300 "$BIN" run --workers 2 --algo ps --ps-placement dedicated --ps-mode async "${common[@]}" --momentum 0.9 \
  --save-params ded.bin > out.txt 2>&1 || { cat out.txt; fail "ps dedicated 1+1 failed"; }
cmp one.bin ded.bin || fail "ps dedicated (1 worker + 1 server) differs from serial SGD"
echo "ok: 1 worker = serial SGD (sync, async, ssp colocated; async 1 worker + 1 dedicated server)"

# Asynchronous modes under a straggler on worker 1 (5 ms per step): no deadlock, staleness seen.
timeout 300 "$BIN" run "${ded[@]}" --ps-mode async "${common[@]}" --straggler "fixed:rank=1,delay=5ms" > out.txt 2>&1 ||
  { cat out.txt; fail "ps async with a straggler failed or hung"; }
grep -E "ps staleness rank 1: mean [0-9.]+, max [0-9.]+" out.txt || fail "no staleness printed"
id=$(last_id)
slow=$(sql t.db "select max(staleness) from steps where run_id=$id and rank=1")
awk -v s="$slow" 'BEGIN{exit !(s > 0)}' || fail "async: the slow rank recorded staleness $slow, expected > 0 (the fast rank pushes meanwhile)"
smax=$(last staleness_max)
awk -v s="$smax" -v t="$slow" 'BEGIN{exit !(s >= t)}' || fail "summary staleness_max $smax below the slow rank's $slow"
acc=$(last final_test_acc)
awk -v a="$acc" 'BEGIN{exit !(a >= 0.6)}' || fail "ps async accuracy $acc below 0.6"
bytes=$(last bytes_sent_per_step)
near "$bytes" "$(awk 'BEGIN{printf "%.10f", 2 * 4 * (2 + 804) / 3}')" || fail "ps async recorded $bytes bytes per step, formula 2·4·(2+804)/3"
echo "ok: async with straggler: slow rank staleness max $slow, accuracy $acc, $bytes bytes per step"

# Colocated async on 2 ranks under the same straggler: finishes, the slow rank sees staleness.
timeout 300 "$BIN" run --workers 2 --algo ps --ps-placement colocated --ps-mode async "${common[@]}" \
  --straggler "fixed:rank=1,delay=5ms" > out.txt 2>&1 || { cat out.txt; fail "ps async colocated with a straggler failed or hung"; }
id=$(last_id)
slow=$(sql t.db "select max(staleness) from steps where run_id=$id and rank=1")
awk -v s="$slow" 'BEGIN{exit !(s > 0)}' || fail "async colocated: the slow rank recorded staleness $slow, expected > 0"
acc=$(last final_test_acc)
awk -v a="$acc" 'BEGIN{exit !(a >= 0.6)}' || fail "ps async colocated accuracy $acc below 0.6"
echo "ok: async colocated with straggler: slow rank staleness max $slow, accuracy $acc"

s=1
timeout 300 "$BIN" run "${ded[@]}" --ps-mode ssp --ps-staleness $s "${common[@]}" --straggler "fixed:rank=1,delay=5ms" > out.txt 2>&1 ||
  { cat out.txt; fail "ps ssp with a straggler failed or hung"; }
grep -E "ps staleness rank 0: .*clock gap c - min clock at a step start max [0-9]+ \(bound $s\)" out.txt ||
  { cat out.txt; fail "no ssp clock gap printed"; }
gap=$(sed -nE "s/^ps staleness rank 0: .*max ([0-9]+) \(bound $s\), ([0-9]+) waits/\1/p" out.txt)
waits=$(sed -nE "s/^ps staleness rank 0: .*max ([0-9]+) \(bound $s\), ([0-9]+) waits/\2/p" out.txt)
[ "$gap" -le $s ] || fail "ssp: clock gap $gap above the bound $s"
[ "$waits" -gt 0 ] || fail "ssp: the fast rank never waited for the straggler"
smax=$(last staleness_max)
# Per shard V − v ≤ (2s+1)(W−1) updates (docs/metrics.md), W = 2.
awk -v m="$smax" -v s=$s 'BEGIN{exit !(m >= 0 && m <= 2 * s + 1)}' || fail "ssp staleness max $smax above (2s+1)(W-1)"
echo "ok: ssp s=$s with straggler: clock gap $gap, $waits waits, staleness max $smax"

timeout 300 "$BIN" run "${ded[@]}" --ps-mode sync --ps-one-step-delay true "${common[@]}" > out.txt 2>&1 ||
  { cat out.txt; fail "ps sync with one-step delay failed"; }
id=$(last_id)
[ "$(sql t.db "select min(staleness) || ',' || max(staleness) from steps where run_id=$id and step >= 1")" = "1.0,1.0" ] ||
  fail "sync + one-step delay: staleness is not 1 on every step after the first"
acc=$(last final_test_acc)
awk -v a="$acc" 'BEGIN{exit !(a >= 0.6)}' || fail "ps sync + one-step delay accuracy $acc below 0.6"
echo "ok: OD-SGD (sync, one-step delay): staleness 1, accuracy $acc"

# Bad input: each refused (exit 2 from the configuration check; a model too small for K is
# found at setup, where every rank stops) with a message naming the flag.
refuse() {
  local pattern="$1"
  shift
  set +e
  "$BIN" run "$@" --dataset "$SMALL" --steps 2 --db bad.db > bad.txt 2>&1
  local rc=$?
  set -e
  [ $rc -ne 0 ] || { cat bad.txt; fail "accepted: $*"; }
  grep -q -- "$pattern" bad.txt || { cat bad.txt; fail "message for '$*' lacks '$pattern'"; }
}
refuse "--ps-staleness: applies to --ps-mode ssp only" --workers 2 --algo ps --ps-mode sync --ps-staleness 2
refuse "--ps-staleness: applies to --algo ps" --workers 2 --algo ssgd --ps-staleness 2
refuse "--ps-staleness: is required with --ps-mode ssp" --workers 2 --algo ps --ps-mode ssp
refuse "colocated placement serves one shard per rank" --workers 2 --algo ps --ps-placement colocated --ps-shards 3
refuse "leaves no worker" --workers 2 --algo ps --ps-shards 2
refuse "leaves no worker" --workers 2 --algo ps --ps-placement dedicated --ps-shards 2
refuse "--ps-mode: unknown mode" --workers 2 --algo ps --ps-mode bsp
refuse "adamw does not apply to --algo ps" --workers 2 --algo ps --optimizer adamw
# The push happens inside the optimizer step: its time is comm (and wait), not optimizer
# compute. Simulated over a 100 Mbit/s, 1 ms link from the ssgd run's profile, jitter off:
# every step's opt_s is the profile's optimizer time exactly, and step = compute + comm + wait.
P=$(sql t.db "select min(id) from runs where algorithm='ssgd' and workers=2 and backend='mpi'")
timeout 300 "$BIN" run --workers 2 --algo ps --backend sim --profile-from "$P" --compute-jitter off \
  --ps-placement colocated --bandwidth 100Mbps --latency 1ms "${common[@]}" > sim_push.out 2>&1 || { cat sim_push.out; fail "sim ps failed"; }
S=$(last_id)
bad=$(sql t.db "select count(*) from steps s, summaries p where s.run_id=$S and s.timed and p.run_id=$P and
  (abs(s.opt_s - p.opt_s) > 1e-12 or s.comm_s < 1e-3 or
   abs(s.step_s - s.data_s - s.fwd_s - s.bwd_s - s.opt_s - s.comm_s - s.wait_s) > 1e-6)")
[ "$bad" = 0 ] || fail "$bad simulated ps steps count the push in opt_s or break step = compute + comm + wait"
echo PASS
