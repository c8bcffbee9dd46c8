# The tuning section of the reports (results/report_tuning.hpp, docs/reports.md "trials"):
# `dsgd-bench report --session S --format csv|json` prints one row per stored trial in the order
# the tuner ran them, with the cumulative evaluation cost (the sum of the trials' costs) and the
# best time-to-target so far (the running minimum over the trials that reached the target, never
# rising); the HTML report of the session (and of any selection holding its trials) has the
# tuning section — best-so-far curve, step time against steps to the target, the race per seed,
# the trials table — and loads in headless Chromium without a script error. Bad --session input
# is refused.
source "$(dirname "$0")/common.bash"
TUNE="$(dirname "$BIN")/dsgd-tune"
[ -x "$TUNE" ] || fail "dsgd-tune is not built next to $BIN"
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
[ -n "$CHROMIUM" ] || fail "chromium not found (scripts/install-deps.sh --tests installs it)"

"$TUNE" recommend --dataset "$SMALL" --workers 4 --bandwidth 1Gbps --latency 1ms --lr 0.2 --algos ssgd,localsgd \
  --period 2..8 --batch 16..32 --lr-scaling none --trials 14 --trial-time 1s --race-seeds 2 --max-trial-steps 3000 \
  --target acc=0.8 --db t.db > tune.out 2>&1 || { cat tune.out; fail "recommend failed"; }
S=$(tail -n 1 tune.out | sed -n 's/^session_id=\([0-9]*\)$/\1/p')
n=$(sql t.db "SELECT count(*) FROM trials WHERE session_id=$S")
"$BIN" run --dataset "$SMALL" --steps 20 --db t.db > other.out || fail "a plain run failed"  # not a trial

"$BIN" report --db t.db --session "$S" --format csv > trials.csv || fail "report --session csv failed"
python3 - "$n" <<'PY' || fail "the trials rows are wrong"
import csv, math, sys
rows = list(csv.DictReader(open('trials.csv')))
assert len(rows) == int(sys.argv[1]), (len(rows), sys.argv[1])
cost, best = 0.0, None
for r in rows:
    cost += float(r['cost_s'])
    assert math.isclose(float(r['cumulative_cost_s']), cost, rel_tol=1e-9, abs_tol=1e-12), (r['cumulative_cost_s'], cost)
    assert r['cost_s'] == r['elapsed_s']
    if r['reached'] == '1' and r['status'] == 'completed':
        assert r['time_to_target_s'] == r['elapsed_s']
        t = float(r['time_to_target_s'])
        best = t if best is None else min(best, t)
    else:
        assert r['time_to_target_s'] == ''
    if best is None:
        assert r['best_so_far_s'] == '', r
    else:
        assert math.isclose(float(r['best_so_far_s']), best), (r['best_so_far_s'], best)
ids = [int(r['trial_id']) for r in rows]
assert ids == sorted(ids), 'not in the order the tuner ran them'
assert best is not None, 'no trial reached the target'
assert any(r['phase'] == 'race' for r in rows)
PY
"$BIN" report --db t.db --session "$S" --format json > trials.json || fail "report --session json failed"
jq -e --argjson n "$n" '.table == "trials" and (.rows | length) == $n and .context.selection == "--session '"$S"'"' trials.json > /dev/null ||
  fail "json: not the trials table of session $S"
echo "ok: $n trial rows with the cumulative cost and the best so far"

# HTML: the session's runs and its tuning section; also in a report of every run.
"$BIN" report --db t.db --session "$S" --format html -o session.html || fail "html --session failed"
"$BIN" report --db t.db --format html -o all.html || fail "html of every run failed"
for f in session.html all.html; do
  for id in "tune-$S-best" "tune-$S-scatter" "tune-$S-race"; do
    grep -q "id=\"$id\"" "$f" || fail "$f: no chart $id"
  done
  grep -q "Tuning session $S" "$f" || fail "$f: no tuning section"
  grep -Eq 'https?:|src=|<link' "$f" && fail "$f references something outside the file"
done
[[ $(grep -o '<tr><td class="num">[0-9]*</td><td>\(rung\|race\)' session.html | wc -l) == "$n" ]] || fail "the trials table does not list the $n trials"
other=$(last_run_id other.out)
"$BIN" report --db t.db --runs "$other" --format html -o plain.html || fail "html of a plain run failed"
! grep -q "Tuning session" plain.html || fail "a tuning section for a run that is no trial"

chrome() {
  timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
    --user-data-dir="$WORK/profile" --proxy-server=127.0.0.1:9 --proxy-bypass-list='<-loopback>' \
    --enable-logging=stderr --v=0 --window-size=1280,2400 "$@"
}
chrome --dump-dom "file://$WORK/session.html" > dom.html 2> chrome.log || { tail chrome.log; fail "chromium --dump-dom failed"; }
grep -q 'data-ready="1"' dom.html || { tail -n 20 chrome.log; fail "the report's script did not run to the end"; }
grep -q 'data-errors=' dom.html && { grep -o 'data-errors="[^"]*"' dom.html; fail "script errors in the report"; }
if grep -E 'CONSOLE|Uncaught' chrome.log; then fail "console output or errors while loading the report"; fi
grep -q "id=\"tune-$S-best\"" dom.html || fail "the loaded page has no best-so-far chart"
chrome --screenshot="$WORK/tuning.png" "file://$WORK/session.html" 2> shot.log || { tail shot.log; fail "screenshot failed"; }
[ "$(stat -c %s tuning.png)" -gt 20000 ] || fail "screenshot suspiciously small"

# Bad input.
expect_error "no tuning session 99" "$BIN" report --db t.db --session 99 --format csv
expect_error "cannot be combined with --runs" "$BIN" report --db t.db --session "$S" --runs 1 --format csv
"$BIN" run --dataset "$SMALL" --steps 5 --db plain.db > /dev/null || fail "run failed"
expect_error "no tuning session 1 in" "$BIN" report --db plain.db --session 1 --format csv
echo "ok: report_tuning"
