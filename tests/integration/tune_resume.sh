# dsgd-tune recommend --resume SESSION after a SIGKILL: the trials finished before the kill are
# kept and not run again (each (configuration, seed, budget) has one trial row and one run, plus
# at most the one run the kill interrupted), the session completes, and its trials are the ones
# an uninterrupted session with the same seed runs. The killed session's private trial
# databases (--jobs 2) are left in $TMPDIR and removed when the session is resumed; a SIGTERM
# removes them at once and leaves the session 'interrupted' (exit 143), and it resumes too.
source "$(dirname "$0")/common.bash"
TUNE="$(dirname "$BIN")/dsgd-tune"
[ -x "$TUNE" ] || fail "dsgd-tune is not built next to $BIN"
mkdir -p tmp
export TMPDIR="$PWD/tmp"

tune=(recommend --dataset "$SMALL" --workers 4 --bandwidth 1Gbps --latency 1ms --lr 0.2 --target acc=0.8
      --algos ssgd,localsgd --period 2..8 --batch 16..32 --lr-scaling none --trials 14 --trial-time 1s
      --race-seeds 2 --max-trial-steps 3000 --jobs 2)

# The profile first, so the killed session spends its time in trials.
"$TUNE" "${tune[@]}" --db t.db --trials 1 > /dev/null 2>&1 || fail "profile session failed"

"$TUNE" "${tune[@]}" --db t.db > killed.out 2>&1 &
pid=$!
S=""
for _ in $(seq 1 600); do
  S=$(sql t.db "SELECT max(id) FROM tune_sessions WHERE status='running'" 2>/dev/null || true)
  if [ -n "$S" ] && [ "$(sql t.db "SELECT count(*) FROM trials WHERE session_id=$S" 2>/dev/null || echo 0)" -ge 3 ]; then
    break
  fi
  sleep 0.05
done
kill -KILL "$pid" 2>/dev/null || fail "the session ended before it could be killed (make it longer)"
wait "$pid" 2>/dev/null || true
[ -n "$S" ] || fail "no running session found"
before=$(sql t.db "SELECT count(*) FROM trials WHERE session_id=$S")
[ "$before" -ge 3 ] || fail "killed before 3 trials were stored ($before)"
[[ $(sql t.db "SELECT status FROM tune_sessions WHERE id=$S") == running ]] || fail "killed session not left running"
echo "killed session $S after $before trials"
left=$(ls tmp | grep -c "^dsgd-tune-s$S-.*-slot[0-9]*\.db$" || true)
[ "$left" -ge 1 ] || { ls tmp; fail "the SIGKILL left no private database (the test does not test the cleanup)"; }

"$TUNE" recommend --resume "$S" --db t.db > resumed.out 2>&1 || { cat resumed.out; fail "resume failed"; }
grep -q "session $S (resumed)" resumed.out || fail "resume did not continue session $S"
grep -q "$before kept from before" resumed.out || { cat resumed.out; fail "the $before finished trials were not kept"; }
[[ $(sql t.db "SELECT status FROM tune_sessions WHERE id=$S") == completed ]] || fail "resumed session not completed"
grep -q "removed $left private trial databases\? that a killed earlier run of this session left" resumed.out ||
  { cat resumed.out; fail "resume did not say it removed the $left private databases"; }
[ -z "$(ls tmp)" ] || { ls tmp; fail "private databases left after the resumed session"; }
after=$(sql t.db "SELECT count(*) FROM trials WHERE session_id=$S")
dups=$(sql t.db "SELECT count(*) FROM (SELECT config_key, seed, budget_s FROM trials WHERE session_id=$S
                 GROUP BY 1, 2, 3 HAVING count(*) > 1)")
[ "$dups" == 0 ] || fail "$dups trials ran twice"
runs=$(sql t.db "SELECT count(*) FROM runs WHERE tag='tune-session=$S'")
[ "$runs" -le $((after + 1)) ] || fail "$runs runs for $after trials: some trial ran twice"
echo "ok: $after trials, $runs runs (at most one interrupted by the kill)"

expect_error "session $S is already completed" "$TUNE" recommend --resume "$S" --db t.db

# The same trials as a session that was never killed.
"$TUNE" "${tune[@]}" --db t.db > fresh.out 2>&1 || { cat fresh.out; fail "fresh session failed"; }
F=$(tail -n 1 fresh.out | sed -n 's/^session_id=\([0-9]*\)$/\1/p')
trials() { sql t.db "SELECT phase, config_key, seed, budget_s, reached, time_s FROM trials WHERE session_id=$1 ORDER BY config_key, seed, budget_s"; }
[[ "$(trials "$S")" == "$(trials "$F")" ]] || { diff <(trials "$S") <(trials "$F"); fail "resumed session differs from a fresh one"; }

# SIGTERM: the private databases go at once, the session is 'interrupted', resume finishes it.
"$TUNE" "${tune[@]}" --db t.db --seed 7 > term.out 2>&1 &
pid=$!
T=""
for _ in $(seq 1 600); do
  T=$(sql t.db "SELECT max(id) FROM tune_sessions WHERE status='running'" 2>/dev/null || true)
  if [ -n "$T" ] && [ "$(sql t.db "SELECT count(*) FROM trials WHERE session_id=$T" 2>/dev/null || echo 0)" -ge 2 ]; then
    break
  fi
  sleep 0.05
done
ls tmp | grep -q "^dsgd-tune-s$T-" || fail "no private databases while session $T runs"
kill -TERM "$pid" 2>/dev/null || fail "the session ended before SIGTERM"
rc=0
wait "$pid" || rc=$?
[ "$rc" == 143 ] || { cat term.out; fail "SIGTERM: exit $rc, expected 143"; }
grep -q "interrupted by SIGTERM (Terminated); session $T kept as 'interrupted'" term.out || { cat term.out; fail "no interruption message"; }
[ -z "$(ls tmp)" ] || { ls tmp; fail "SIGTERM left private databases"; }
[[ $(sql t.db "SELECT status FROM tune_sessions WHERE id=$T") == interrupted ]] || fail "session $T not 'interrupted'"
"$TUNE" recommend --resume "$T" --db t.db > term_resumed.out 2>&1 || { cat term_resumed.out; fail "resume after SIGTERM failed"; }
[[ $(sql t.db "SELECT status FROM tune_sessions WHERE id=$T") == completed ]] || fail "session $T not completed after resume"
echo "ok: tune_resume"
