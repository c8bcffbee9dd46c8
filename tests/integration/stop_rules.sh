# The run's stop rules (docs/cli.md, "Stop rules"): --stop-at-target ends a run at the first
# evaluation that reaches --target and --time-limit at the first evaluation at or past that much
# training time, on 2 MPI ranks (rank 0 decides, both stop after the same step: the run
# completes instead of hanging) and on the simulator; the run is completed and says why it
# stopped; without a rule the same run goes on to its last step; --stop-at-target without a
# target is refused.
source "$(dirname "$0")/common.bash"

common=(--dataset "$SMALL" --batch 32 --lr 0.2 --steps 4000 --eval-every 20 --db t.db)
evals() { sql t.db "SELECT count(*) || ' ' || max(step) || ' ' || max(time_s) FROM evals WHERE run_id=$1"; }

for backend in mpi sim; do
  "$BIN" run "${common[@]}" --workers 2 --backend "$backend" --target acc=0.7 --stop-at-target > t.out 2>&1 ||
    { cat t.out; fail "$backend: --stop-at-target failed"; }
  id=$(last_run_id t.out)
  grep -Eq "^stopped: target acc=0.7 reached at [0-9.e-]+ s \\(step [0-9]+\\)" t.out || { cat t.out; fail "$backend: no stop line"; }
  [[ $(sql t.db "SELECT status FROM runs WHERE id=$id") == completed ]] || fail "$backend: run not completed"
  last=$(sql t.db "SELECT max(step) FROM evals WHERE run_id=$id")
  [ "$last" -lt 4000 ] || fail "$backend: the run did not stop at the target (last evaluation at step $last)"
  # The last evaluation is the first that reached the target; none before it did.
  [[ $(sql t.db "SELECT count(*) FROM evals WHERE run_id=$id AND test_acc >= 0.7") == 1 ]] ||
    fail "$backend: evaluations past the first that reached the target"
  [[ $(sql t.db "SELECT steps_to_target FROM summaries WHERE run_id=$id") == "$last" ]] || fail "$backend: summary's steps to target"
  echo "ok: $backend --stop-at-target stopped at step $last"

  "$BIN" run "${common[@]}" --workers 2 --backend "$backend" --steps 1000000 --time-limit 0.05 > l.out 2>&1 ||
    { cat l.out; fail "$backend: --time-limit failed"; }
  id=$(last_run_id l.out)
  grep -Eq "^stopped: time limit of 0.05 s reached at [0-9.e-]+ s" l.out || { cat l.out; fail "$backend: no time-limit line"; }
  python3 - "$(sql t.db "SELECT time_s FROM evals WHERE run_id=$id ORDER BY step")" <<'PY' || fail "$backend: did not stop at the first evaluation past 0.05 s"
import sys
t = [float(x) for x in sys.argv[1].split()]
assert t[-1] >= 0.05 and all(x < 0.05 for x in t[:-1]), t
PY
  echo "ok: $backend --time-limit stopped at $(evals "$id")"
done

# Without a rule: every step.
"$BIN" run "${common[@]}" --steps 400 --target acc=0.7 > n.out 2>&1 || { cat n.out; fail "run without a rule failed"; }
[[ $(sql t.db "SELECT max(step) FROM evals WHERE run_id=$(last_run_id n.out)") == 400 ]] || fail "a run without a stop rule stopped early"
! grep -q "^stopped:" n.out || fail "stop line without a rule"
expect_error "--stop-at-target.*needs --target" "$BIN" run "${common[@]}" --stop-at-target
expect_error "--time-limit: must be in" "$BIN" run "${common[@]}" --time-limit -1
echo "ok: stop_rules"
