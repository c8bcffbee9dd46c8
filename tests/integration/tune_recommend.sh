# dsgd-tune recommend end to end on a small synthetic problem (docs/tuner.md):
#  - with no compute profile in the database it measures one and says so;
#  - prints the ranked table, the verdict and the winner's `dsgd-bench run` command; -o writes
#    a TOML file that `dsgd-bench run --config` loads and runs;
#  - every trial row links to a stored sim run; the session is listed and shown;
#  - the same seed gives the same trials (configuration, budget, outcome, time);
#  - a target nobody reaches ranks every configuration as censored ("not reached by"), with no
#    recommendation, and stores no zero or missing times;
#  - --format json.
source "$(dirname "$0")/common.bash"
TUNE="$(dirname "$BIN")/dsgd-tune"
[ -x "$TUNE" ] || fail "dsgd-tune is not built next to $BIN"

tune=(recommend --dataset "$SMALL" --workers 4 --bandwidth 1Gbps --latency 1ms --lr 0.2 --db t.db
      --algos ssgd,localsgd --period 2..8 --batch 16..32 --lr-scaling none --trials 14 --trial-time 1s
      --race-seeds 2 --max-trial-steps 3000)

"$TUNE" "${tune[@]}" --target acc=0.80 -o best.toml > s1.out 2> s1.err || { cat s1.out s1.err; fail "recommend failed"; }
cat s1.out
grep -q "no compute profile of svm on $SMALL for batch 16, 32 on this host: measured it" s1.out ||
  fail "the missing profile was not measured and reported"
grep -q "^recommended: " s1.out || fail "no recommendation"
grep -q "^  dsgd-bench run .*--backend sim" s1.out || fail "no dsgd-bench run command"
# Censoring in the ranking: every "not reached by" row comes after every reached one.
awk '/^ +[0-9]+  / { if ($0 ~ /not reached by/) c = 1; else if (c) bad = 1 } END { exit bad }' s1.out ||
  fail "a censored configuration is ranked above a reached one"
S1=$(tail -n 1 s1.out | sed -n 's/^session_id=\([0-9]*\)$/\1/p')
[ -n "$S1" ] || fail "last line is not session_id=<id>"
[[ $(sql t.db "SELECT status FROM tune_sessions WHERE id=$S1") == completed ]] || fail "session not completed"
n=$(sql t.db "SELECT count(*) FROM trials WHERE session_id=$S1")
[ "$n" -ge 8 ] || fail "only $n trials stored"
orphans=$(sql t.db "SELECT count(*) FROM trials t LEFT JOIN runs r ON r.id=t.run_id WHERE t.session_id=$S1
                    AND (r.id IS NULL OR r.backend <> 'sim')")
[ "$orphans" == 0 ] || fail "$orphans trials without a stored sim run"
bad=$(sql t.db "SELECT count(*) FROM trials WHERE session_id=$S1 AND (time_s IS NULL OR time_s <= 0)")
[ "$bad" == 0 ] || fail "$bad trials with a zero or missing time"
race=$(sql t.db "SELECT count(DISTINCT seed) FROM trials WHERE session_id=$S1 AND phase='race'")
[ "$race" -ge 1 ] || fail "no final race"

# The TOML file is the winner's configuration; dsgd-bench run loads and runs it.
[ -s best.toml ] || fail "-o best.toml not written"
"$BIN" run --config best.toml --db t.db > best.out 2>&1 || { cat best.toml best.out; fail "dsgd-bench run --config best.toml failed"; }
B=$(last_run_id best.out)
algo=$(sed -n "s/^algo = ['\"]\(.*\)['\"]$/\1/p" best.toml)
[[ $(sql t.db "SELECT backend || ' ' || algorithm FROM runs WHERE id=$B") == "sim $algo" ]] ||
  fail "best.toml ran something else"
grep -q "target .* reached at" best.out || { cat best.out; fail "the recommended configuration did not reach the target"; }

# Determinism: the same seed runs the same trials with the same outcomes.
"$TUNE" "${tune[@]}" --target acc=0.80 > s2.out 2>&1 || { cat s2.out; fail "second recommend failed"; }
S2=$(tail -n 1 s2.out | sed -n 's/^session_id=\([0-9]*\)$/\1/p')
trials() { sql t.db "SELECT phase, config_key, seed, budget_s, reached, time_s, stop_reason FROM trials WHERE session_id=$1 ORDER BY id"; }
[[ "$(trials "$S1")" == "$(trials "$S2")" ]] || { diff <(trials "$S1") <(trials "$S2"); fail "same seed, different trials"; }
grep -q "kept from before" s2.out && fail "a new session reused another session's trials"
echo "ok: same seed, same $(trials "$S1" | wc -l) trials"

# Without --trial-time and --budget (--trials alone), R comes from a pilot trial: at 60 s it
# reaches the target at its first evaluation (0.165 s apart), so it runs again at 10 x that,
# and R = 10 x its time. The pilot's trials are stored (phase 'pilot'); the search at that R
# is not resolution-limited.
auto=()
skip=0
for a in "${tune[@]}"; do
  if ((skip)); then skip=0; continue; fi
  [[ "$a" == --trial-time || "$a" == --trials ]] && { skip=1; continue; }
  auto+=("$a")
done
"$TUNE" "${auto[@]}" --trials 14 --target acc=0.80 > auto.out 2>&1 || { cat auto.out; fail "recommend without --trial-time failed"; }
grep -q "^  pilot .*: target reached in .* at R = 60 s .*then .*; R = 10 x that = " auto.out ||
  { cat auto.out; fail "no pilot line, or the pilot did not refine its own time"; }
grep -q "rerun with --trial-time" auto.out && { cat auto.out; fail "resolution-limited at the pilot's R"; }
SA=$(tail -n 1 auto.out | sed -n 's/^session_id=\([0-9]*\)$/\1/p')
[[ $(sql t.db "SELECT count(*) FROM trials WHERE session_id=$SA AND phase='pilot'") -ge 2 ]] || fail "no pilot trials stored"
R=$(jq -r .trial_time_s <("$TUNE" show "$SA" --db t.db --format json 2>/dev/null) 2>/dev/null || true)
echo "ok: R from the pilot (${R:-see above})"

# With --budget, R = budget / 20: at 1200 s that is 60 s, and the leaders reach the target at
# their first evaluation: the tuner re-measures them at a finer R itself and does not ask the
# user to rerun with --trial-time.
"$TUNE" "${auto[@]}" --budget 1200s --target acc=0.80 > refine.out 2>&1 || { cat refine.out; fail "recommend with --budget 1200s failed"; }
grep -q "re-measured at R = " refine.out || { cat refine.out; fail "no re-measurement of the unresolved leaders"; }
grep -q "rerun with --trial-time" refine.out && { cat refine.out; fail "still resolution-limited after refining"; }
SR=$(tail -n 1 refine.out | sed -n 's/^session_id=\([0-9]*\)$/\1/p')
[[ $(sql t.db "SELECT count(*) FROM trials WHERE session_id=$SR AND phase='refine'") -ge 2 ]] || fail "no refine trials stored"
echo "ok: unresolved leaders re-measured at a finer R"

# Exit 3: searched and stored, but nothing to recommend.
rc=0; "$TUNE" "${tune[@]}" --target acc=0.999 --trials 8 > c.out 2>&1 || rc=$?
[ "$rc" == 3 ] || { cat c.out; fail "censored session: exit $rc, expected 3 (no recommendation)"; }
grep -q "^no configuration reached acc=0.999" c.out || { cat c.out; fail "no 'not reached' verdict"; }
grep -Eq "^ +1  .*not reached by [0-9.]+ s" c.out || { cat c.out; fail "censored rows not shown as 'not reached by T'"; }
S3=$(tail -n 1 c.out | sed -n 's/^session_id=\([0-9]*\)$/\1/p')
bad=$(sql t.db "SELECT count(*) FROM trials WHERE session_id=$S3 AND (reached=1 OR time_s IS NULL OR time_s <= 0)")
[ "$bad" == 0 ] || fail "censored trials stored as reached or without their elapsed time"

# Divergence: an absurd lr makes every trial diverge; they count as not reached, and their runs
# are stored as 'diverged'.
rc=0; "$TUNE" "${tune[@]}" --target acc=0.80 --lr 1e6 --trials 6 > dv.out 2>&1 || rc=$?
[ "$rc" == 3 ] || { cat dv.out; fail "diverging session: exit $rc, expected 3 (no recommendation)"; }
grep -q "^no configuration reached" dv.out || { cat dv.out; fail "a diverged trial counted as reaching the target"; }
grep -Eq "^ +1  .*diverged at " dv.out || { cat dv.out; fail "diverged rows not shown as such"; }
S4=$(tail -n 1 dv.out | sed -n 's/^session_id=\([0-9]*\)$/\1/p')
[[ $(sql t.db "SELECT count(*) FROM trials t JOIN runs r ON r.id=t.run_id WHERE t.session_id=$S4
               AND (t.reached=1 OR r.status <> 'diverged')") == 0 ]] || fail "diverged trials not stored as such"

# sessions / show / json.
"$TUNE" sessions --db t.db > list.out || fail "sessions failed"
grep -Eq "^ +$S1 .*completed" list.out || { cat list.out; fail "session $S1 not listed"; }
"$TUNE" show "$S1" --db t.db > show.out || fail "show failed"
[ "$(grep -Ec '(rung [0-9]|race) ' show.out)" -eq "$n" ] || { cat show.out; fail "show does not list every trial"; }
grep -q "budget of" show.out || grep -q "target acc=0.8 reached" show.out || fail "show has no stop reasons"
# JSON, with a constraint that refuses ssgd (4824 bytes per step per worker here) by formula.
"$TUNE" "${tune[@]}" --target acc=0.80 --trials 8 --max-bytes-per-step 3000 --format json > j.out 2> j.err ||
  { cat j.out j.err; fail "json failed"; }
python3 - <<'PY' || fail "--format json is not the expected JSON, or the constraint was not applied"
import json
d = json.load(open('j.out'))
assert d['ranking'] and 'verdict' in d and d['ranking'][0]['rank'] == 1
assert all(r['algo'] != 'ssgd' for r in d['ranking']), 'ssgd ran despite the constraint'
assert {r['config'].split()[0] for r in d['refused']} == {'ssgd'}, d['refused']
assert all('above --max-bytes-per-step' in r['reason'] for r in d['refused'])
PY
echo "ok: tune_recommend"
