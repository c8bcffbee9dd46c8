# dsgd-tune recommend --backend mpi (docs/tuner.md, "Trials on MPI"): every trial is a real
# `dsgd-bench run --backend mpi` on 2 ranks of this machine with the configured emulated link,
# stopped by its own rules (--stop-at-target, --time-limit = the trial's budget in seconds of
# training time); the search is the simulator's (rungs at equal time, censoring, the race), the
# budget is the trials' wall-clock training time, every trial links to its stored MPI run, the
# winner's command runs on MPI, and a session killed with SIGKILL resumes without running a
# finished trial again. Timings are real, so only their consistency is asserted (a trial that
# stopped at its budget ran at least that long; one that reached the target stopped there).
source "$(dirname "$0")/common.bash"
TUNE="$(dirname "$BIN")/dsgd-tune"
[ -x "$TUNE" ] || fail "dsgd-tune is not built next to $BIN"
mkdir -p tmp
export TMPDIR="$PWD/tmp"  # the private trial databases and the child runs' config files

tune=(recommend --backend mpi --dataset "$SMALL" --workers 2 --bandwidth 100Mbps --latency 1ms --lr 0.2
      --algos ssgd,localsgd --period 2..4 --batch 32 --lr-scaling none --trial-time 0.3s --budget 3s
      --race-seeds 2 --max-trial-steps 20000 --target acc=0.75)

"$TUNE" "${tune[@]}" --trials 10 --db t.db --format json > s.json 2> s.err || { cat s.json s.err; fail "recommend --backend mpi failed"; }
S=$(jq -r .session s.json)
[[ $(jq -r .backend s.json) == mpi ]] || fail "the session's backend is not mpi"
n=$(sql t.db "SELECT count(*) FROM trials WHERE session_id=$S")
[ "$n" -ge 3 ] || fail "only $n trials"
# The budget is evaluation (training) seconds of real runs: never more than --budget.
jq -e '.used_s > 0 and .used_s <= 3 * (1 + 1e-9)' s.json > /dev/null || fail "used $(jq .used_s s.json) s of a 3 s budget"
# Every completed trial is an MPI run of 2 ranks with the emulated link, tagged for the session.
bad=$(sql t.db "SELECT count(*) FROM trials t LEFT JOIN runs r ON r.id = t.run_id WHERE t.session_id=$S AND t.status='completed'
               AND (r.id IS NULL OR r.backend <> 'mpi' OR r.workers <> 2 OR r.tag <> 'tune-session=$S')")
[ "$bad" == 0 ] || fail "$bad trials without their MPI run of 2 ranks"
run=$(sql t.db "SELECT run_id FROM trials WHERE session_id=$S AND status='completed' LIMIT 1")
"$BIN" show "$run" --db t.db --format json > run.json
jq -e '.config["emulated-network"] | test("100 Mbit/s")' run.json > /dev/null || fail "trial run $run has no emulated link: $(jq .config run.json)"
# A trial that stopped at its budget trained at least that long (its time limit), one that
# reached the target stopped at the evaluation that reached it; the runs say so.
sql t.db "SELECT t.reached, t.time_s, t.budget_s, t.stop_reason, r.status, coalesce(r.error, ''),
                 (SELECT max(e.time_s) FROM evals e WHERE e.run_id = r.id)
          FROM trials t JOIN runs r ON r.id = t.run_id WHERE t.session_id=$S AND t.status='completed'" |
while IFS='|' read -r reached time budget reason status error last; do
  [ "$status" == stopped ] || [[ "$reason" == end-of-steps* ]] || fail "trial run is '$status' ($reason)"
  if [ "$reached" == 1 ]; then
    [[ "$reason" == target:* && "$error" == "stopped by dsgd-tune: target"* ]] || fail "reached, but: $reason / $error"
    python3 -c "import sys; t, l = map(float, sys.argv[1:]); assert abs(t - l) < 1e-9, (t, l)" "$time" "$last" ||
      fail "a reached trial went on after its target ($time s, last evaluation $last s)"
  elif [[ "$reason" == budget:* ]]; then
    python3 -c "import sys; t, b = map(float, sys.argv[1:]); assert t >= b, (t, b)" "$time" "$budget" ||
      fail "a trial stopped at its budget before it ($time < $budget s)"
  fi
done
echo "ok: $n MPI trials, $(jq .used_s s.json) s of a 3 s budget"
if jq -e '.command' s.json > /dev/null; then
  # mpi is dsgd-bench run's default backend: the command names no other.
  jq -r .command s.json | grep -q -- "--backend" && fail "the winner's command does not run on MPI: $(jq -r .command s.json)"
  jq -r .command s.json | grep -q -- "--workers 2 .*--bandwidth 100Mbps" || fail "the winner's command lacks the cluster: $(jq -r .command s.json)"
  jq -r .command s.json | grep -Eq -- "--stop-at-target|--time-limit" && fail "the winner's command keeps the trial's stop rules"
fi
[ -z "$(ls tmp)" ] || { ls tmp; fail "private databases or config files left behind"; }

# Resume after SIGKILL: the finished trials are kept and not run again.
"$TUNE" "${tune[@]}" --trials 8 --db k.db > killed.out 2>&1 &
pid=$!
K=""
for _ in $(seq 1 1200); do
  K=$(sql k.db "SELECT max(id) FROM tune_sessions WHERE status='running'" 2>/dev/null || true)
  if [ -n "$K" ] && [ "$(sql k.db "SELECT count(*) FROM trials WHERE session_id=$K" 2>/dev/null || echo 0)" -ge 2 ]; then break; fi
  sleep 0.05
done
kill -KILL "$pid" 2>/dev/null || fail "the session ended before it could be killed"
wait "$pid" 2>/dev/null || true
# The trial running at the kill is a child process of its own: let it end (its time limit).
for _ in $(seq 1 600); do pgrep -f "$PWD/tmp" > /dev/null || break; sleep 0.1; done
before=$(sql k.db "SELECT count(*) FROM trials WHERE session_id=$K")
"$TUNE" recommend --resume "$K" --db k.db > resumed.out 2>&1 || { cat resumed.out; fail "resume failed"; }
grep -q "$before kept from before" resumed.out || { cat resumed.out; fail "the $before finished trials were not kept"; }
grep -q "removed [0-9]* private trial database" resumed.out || { cat resumed.out; ls tmp; fail "the killed run's private database was not removed"; }
dups=$(sql k.db "SELECT count(*) FROM (SELECT config_key, seed, budget_s FROM trials WHERE session_id=$K GROUP BY 1, 2, 3 HAVING count(*) > 1)")
[ "$dups" == 0 ] || fail "$dups trials ran twice"
[[ $(sql k.db "SELECT status FROM tune_sessions WHERE id=$K") == completed ]] || fail "resumed session not completed"
[ -z "$(ls tmp)" ] || { ls tmp; fail "files left behind after the resumed session"; }
echo "ok: tune_mpi"
