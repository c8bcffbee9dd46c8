# dsgd-tune recommend --jobs (tuner/trial_pool.hpp): trials run two at a time give the same
# trials, in the same order, with the same scores and the same stored runs as one at a time,
# from the same seed and the same compute profile — also when the budget runs out mid-rung
# (a trial started ahead is dropped: checked to happen with --trials 4, and its run is not
# stored); the session reports the tuner's own share of its real
# time, in the table and in JSON; only the session database is left (no private databases).
source "$(dirname "$0")/common.bash"
TUNE="$(dirname "$BIN")/dsgd-tune"
[ -x "$TUNE" ] || fail "dsgd-tune is not built next to $BIN"
mkdir -p tmp
export TMPDIR="$PWD/tmp"  # where the sessions' private trial databases go (and must be gone from)

# One measured profile for both sessions (a profile is a measurement: two would differ).
for b in 16 32; do
  "$BIN" run --backend sim --dataset "$SMALL" --workers 1 --steps 2 --batch "$b" --db base.db > /dev/null ||
    fail "profiling run of batch $b failed"
done

tune=(recommend --dataset "$SMALL" --workers 4 --bandwidth 1Gbps --latency 1ms --lr 0.2
      --algos ssgd,localsgd --period 2..8 --batch 16..32 --lr-scaling none --trial-time 1s
      --race-seeds 2 --max-trial-steps 3000 --target acc=0.80)
trials() { sql "$1" "SELECT phase, config_key, seed, budget_s, reached, time_s, progress, steps, stop_reason FROM trials ORDER BY id"; }
# Each trial's stored run: its step and evaluation rows and the last evaluation's accuracy.
runs() {
  sql "$1" "SELECT t.config_key, t.seed, t.budget_s, r.status, (SELECT count(*) FROM steps s WHERE s.run_id = r.id),
            (SELECT count(*) || ':' || max(step) || ':' || sum(test_acc) FROM evals e WHERE e.run_id = r.id)
            FROM trials t JOIN runs r ON r.id = t.run_id ORDER BY t.id"
}

for limit in "--trials 14" "--trials 4" "--budget 2.5s"; do
  # shellcheck disable=SC2086
  for j in 1 2; do
    rm -f "j$j.db"
    cp base.db "j$j.db"
    "$TUNE" "${tune[@]}" $limit --db "j$j.db" --jobs "$j" > "j$j.out" 2>&1 || { cat "j$j.out"; fail "--jobs $j ($limit) failed"; }
  done
  grep -q "trials at a time: 2 (--jobs)" j2.out || { cat j2.out; fail "--jobs 2 not reported"; }
  [ "$(trials j1.db | wc -l)" -ge 4 ] || fail "too few trials ($limit)"
  [[ "$(trials j1.db)" == "$(trials j2.db)" ]] || { diff <(trials j1.db) <(trials j2.db); fail "--jobs 2 ran other trials or scored them differently ($limit)"; }
  [[ "$(runs j1.db)" == "$(runs j2.db)" ]] || { diff <(runs j1.db) <(runs j2.db); fail "--jobs 2 stored other runs ($limit)"; }
  grep -q "^recommended: " j1.out && { [[ "$(grep '^recommended: ' j1.out)" == "$(grep '^recommended: ' j2.out)" ]] ||
    fail "--jobs 2 recommends something else ($limit)"; }
  grep -Eq "the tuner itself [0-9.]+ s \([0-9.]+ % of the session\)" j2.out || { cat j2.out; fail "no overhead share ($limit)"; }
  echo "ok: --jobs 1 and 2 agree on $(trials j1.db | wc -l) trials ($limit)"
  # --trials 4 runs out in the middle of a list of independent trials: the 4th is decided while
  # the 5th, started ahead beside it, runs; that one is dropped (no trial row, no run: the
  # tables above are the same as one at a time).
  if [ "$limit" == "--trials 4" ]; then
    grep -Eq "[0-9]+ started ahead and dropped \(the budget ran out first\)" j2.out ||
      { cat j2.out; fail "--jobs 2 --trials 4: no trial was started ahead and dropped"; }
    ! grep -q "started ahead and dropped" j1.out || fail "--jobs 1 dropped a trial"
    [[ $(sql j2.db "SELECT count(*) FROM runs WHERE tag LIKE 'tune-session=%'") == $(sql j2.db "SELECT count(*) FROM trials WHERE run_id IS NOT NULL") ]] ||
      fail "a dropped trial's run was stored"
  fi
done
grep -q "the budget ran out" j2.out || echo "note: the budget did not run out mid-rung in the --budget case"

# JSON: the overhead share and the jobs.
cp base.db js.db
"$TUNE" "${tune[@]}" --trials 8 --db js.db --jobs 2 --format json > js.out 2> js.err || { cat js.out js.err; fail "json failed"; }
python3 - <<'PY' || fail "--format json lacks jobs / overhead_share"
import json
d = json.load(open('js.out'))
assert d['jobs'] == 2, d['jobs']
assert 0 <= d['overhead_share'] < 1 and d['overhead_s'] >= 0, (d['overhead_share'], d['overhead_s'])
assert d['busy_wall_s'] > 0 and d['busy_wall_s'] <= d['wall_s'] + 1e-6
PY
[ -z "$(ls tmp)" ] || { ls tmp; fail "private trial databases left behind"; }
echo "ok: tune_jobs"
