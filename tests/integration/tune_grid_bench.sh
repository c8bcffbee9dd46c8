# dsgd-tune grid on a tiny space (every configuration x 2 seeds at R, a session of kind grid;
# resumable: a grid that lost trials runs only those; widened to more seeds with --resume
# --seeds, never narrowed), then dsgd-tune bench replaying the
# strategies against it (no training: no new runs), and bad input: a grid without
# --trial-time, bench on an unknown session, on a session that is not a grid, with --reps 0,
# an unknown strategy, a budget fraction outside (0, 1].
source "$(dirname "$0")/common.bash"
TUNE="$(dirname "$BIN")/dsgd-tune"
[ -x "$TUNE" ] || fail "dsgd-tune is not built next to $BIN"

space=(--dataset "$SMALL" --workers 4 --bandwidth 1Gbps --latency 1ms --lr 0.2 --target acc=0.8
       --algos ssgd,localsgd --period 2,8 --batch 16,32 --lr-scaling none --max-trial-steps 3000)

expect_error "--trial-time" "$TUNE" grid "${space[@]}" --db t.db
[ ! -e t.db ] || fail "a refused grid created the database"

"$TUNE" grid "${space[@]}" --trial-time 0.5s --seeds 2 --db t.db > grid.out 2>&1 || { cat grid.out; fail "grid failed"; }
G=$(tail -n 1 grid.out | sed -n 's/^session_id=\([0-9]*\)$/\1/p')
[ -n "$G" ] || { cat grid.out; fail "no session_id line"; }
[[ $(sql t.db "SELECT kind FROM tune_sessions WHERE id=$G") == grid ]] || fail "session $G is not of kind grid"
[[ $(sql t.db "SELECT count(*) FROM trials WHERE session_id=$G") == 12 ]] || fail "expected 6 configurations x 2 seeds"
[[ $(sql t.db "SELECT count(DISTINCT budget_s) FROM trials WHERE session_id=$G") == 1 ]] || fail "grid trials at several budgets"
"$TUNE" sessions --db t.db | grep -q "grid" || fail "dsgd-tune sessions does not show the kind"

# --jobs 2: the same trials and scores as one at a time (the grid runs on recommend's pool), on a
# copy of the database so both simulate with the same compute profile.
cp t.db j2.db
"$TUNE" grid "${space[@]}" --trial-time 0.5s --seeds 2 --jobs 2 --db j2.db > grid2.out 2>&1 || { cat grid2.out; fail "grid --jobs 2 failed"; }
J=$(tail -n 1 grid2.out | sed -n 's/^session_id=\([0-9]*\)$/\1/p')
gtrials() { sql "$1" "SELECT config_key, seed, budget_s, reached, time_s, progress, steps FROM trials WHERE session_id=$2 ORDER BY id"; }
[[ "$(gtrials t.db "$G")" == "$(gtrials j2.db "$J")" ]] || { diff <(gtrials t.db "$G") <(gtrials j2.db "$J"); fail "grid --jobs 2 ran other trials or scored them differently"; }

# Resume: a grid that lost its last 3 trials (as if killed) runs only those again.
sql t.db "DELETE FROM trials WHERE session_id=$G AND id IN (SELECT id FROM trials WHERE session_id=$G ORDER BY id DESC LIMIT 3);
          UPDATE tune_sessions SET status='running' WHERE id=$G"
"$TUNE" grid --resume "$G" --db t.db > resumed.out 2>&1 || { cat resumed.out; fail "grid --resume failed"; }
grep -q "3 trials run, 9 kept from before" resumed.out || { cat resumed.out; fail "resume did not keep the 9 stored trials"; }
[[ $(sql t.db "SELECT count(*) FROM trials WHERE session_id=$G") == 12 ]] || fail "resumed grid is not complete"
expect_error "already completed" "$TUNE" grid --resume "$G" --db t.db

# Widening a completed grid to 3 seeds runs the third seed's 6 trials only, and the stored spec
# says 3 (a later resume or replay sees them); fewer seeds than it has are refused.
cp t.db w.db
"$TUNE" grid --resume "$G" --seeds 3 --db w.db > widened.out 2>&1 || { cat widened.out; fail "grid --resume --seeds 3 failed"; }
grep -q "6 trials run, 12 kept from before" widened.out || { cat widened.out; fail "widening did not run only the new seed"; }
[[ $(sql w.db "SELECT count(DISTINCT seed) FROM trials WHERE session_id=$G") == 3 ]] || fail "the widened grid lacks a third seed"
[[ "$(gtrials t.db "$G")" == "$(sql w.db "SELECT config_key, seed, budget_s, reached, time_s, progress, steps FROM trials WHERE session_id=$G ORDER BY id LIMIT 12")" ]] ||
  fail "widening changed the stored trials"
"$TUNE" bench --grid "$G" --db w.db --reps 3 --strategies exhaustive --budget-fraction 1 | grep -q "(3 seeds)" ||
  fail "bench does not see the widened grid's 3 seeds"
expect_error "would drop seeds" "$TUNE" grid --resume "$G" --seeds 2 --db w.db
expect_error "already completed" "$TUNE" grid --resume "$G" --seeds 3 --db w.db

runs=$(sql t.db "SELECT count(*) FROM runs")
"$TUNE" bench --grid "$G" --db t.db --reps 4 --strategies tuner,random,hyperband,exhaustive --budget-fraction 0.5,1 \
  > bench.out 2>&1 || { cat bench.out; fail "bench failed"; }
cat bench.out
[[ $(sql t.db "SELECT count(*) FROM runs") == "$runs" ]] || fail "bench trained: the run count changed"
[ "$(grep -cE '^(tuner|random|hyperband|exhaustive) ' bench.out)" -eq 8 ] || fail "expected 4 strategies x 2 budgets"
"$TUNE" bench --grid "$G" --db t.db --reps 2 --format json > bench.json || fail "bench --format json failed"
python3 -c "import json,sys; j=json.load(open('bench.json')); assert len(j['strategies'])==2 and len(j['strategies'][0]['reps'])==2" ||
  fail "bench JSON lacks the strategies or their repetitions"

R=$(sql t.db "SELECT max(id) FROM tune_sessions")
"$TUNE" recommend "${space[@]}" --trials 3 --trial-time 0.5s --race-seeds 1 --db t.db > rec.out 2>&1 || { cat rec.out; fail "recommend failed"; }
REC=$(tail -n 1 rec.out | sed -n 's/^session_id=\([0-9]*\)$/\1/p')
[ "$REC" -gt "$R" ] || fail "no new recommend session"
expect_error "no tuning session 99" "$TUNE" bench --grid 99 --db t.db
expect_error "not a grid" "$TUNE" bench --grid "$REC" --db t.db
expect_error "--reps" "$TUNE" bench --grid "$G" --db t.db --reps 0
expect_error "unknown strategy" "$TUNE" bench --grid "$G" --db t.db --strategies tuner,annealing
expect_error "outside" "$TUNE" bench --grid "$G" --db t.db --budget-fraction 1.5
expect_error "not a number" "$TUNE" bench --grid "$G" --db t.db --budget-fraction 0.1x
echo "PASS"
