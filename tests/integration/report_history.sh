# `dsgd-bench report --format html --history` end to end: 8 commits x 2 repetitions of a
# timing-only sim case whose compute gets 30 % slower from the 5th commit (--compute-scale, as
# in history.sh), and a steady case; the commits are set in the database as CI would have
# recorded them, one commit is annotated. The report holds one trend chart per case, the change
# point marked at commit 5 with its change, the annotation's line and note, the detector's
# parameters, the compute / comm / wait chart, the regressions-only filter marking only the
# changing case, and the grouped configurations (the steady case's 16 runs are one bar, n = 16). The
# page loads in headless Chromium without script errors. A run stopped at a trial budget is shown as
# stopped with its reason, never as interrupted. Bad input: --history with another
# format, and a history flag without --history, are exit 2.
source "$(dirname "$0")/common.bash"

commit_history_fixture 8 5
"$BIN" track annotate commit3 --kind outlier --note 'noisy neighbour on the runner' --db t.db > /dev/null ||
  fail "track annotate failed"

"$BIN" report --db t.db --format html --history --metric step_time -o h.html || fail "report --history failed"
grep -Eq 'https?:|src=|<link' h.html && fail "the report references something outside the file"
grep -q '<section id="history"><h2>History: step_time_s across commits (3 series, 1 with a regression)' h.html ||
  fail "history section heading"
# The changing case: its chart has the change point at commit5 (+20..39 %), marked as a regression.
grep -Eq '<g class="cp bad" data-commit="commit5"><line [^>]*/><text [^>]*>\+[23][0-9]\.[0-9] % \(p = ' h.html ||
  fail "no change point marker at commit5"
[ "$(grep -o 'class="cp ' h.html | wc -l)" = 1 ] || fail "expected exactly one change point marker"
[ "$(grep -o '<div class="case" data-regressed="1">' h.html | wc -l)" = 1 ] || fail "one regressed case expected"
[ "$(grep -o '<div class="case"' h.html | wc -l)" = 3 ] || fail "three cases (w4, w2, the profile run) expected"
grep -q 'One commit so far (profile, median ' h.html || fail "the profile run's series of one commit is not a line"
grep -q '<g class="ann ann-outlier" data-commit="commit3">' h.html || fail "annotation line missing"
grep -q 'noisy neighbour on the runner' h.html || fail "annotation note missing"
grep -q 'class="params"[^>]*>E-Divisive means + Student&#39;s t: window 50, max p-value 0.001' h.html ||
  fail "detector parameters not stamped on the chart"
grep -Eq 'id="history-breakdown-[0-9]+"' h.html || fail "no compute / comm / wait chart"
grep -q 'id="regressions-only"' h.html || fail "no regressions-only filter"
# Each commit's median, with its 2 repetitions (the commit's date on hover).
grep -q 'class="med" [^>]*data-commit="commit8"><title>commit8 (20' h.html || fail "median point of commit8"
# The configurations: repetitions grouped, n shown (the steady case: 8 commits x 2).
grep -q '<section id="configurations">' h.html || fail "no configurations section"
grep -q 'data-n="16"' h.html || fail "the 16 runs of the steady case are not one configuration"
# ssgd reads no --period: its period is left out of the tables.
grep -q '<td class="na" title="ssgd does not read --period">·</td>' h.html || fail "ssgd's period is shown"
# --case narrows the series as in `history`.
"$BIN" report --db t.db --format html --history --case 'w4 b16' -o one.html || fail "report --history --case failed"
[ "$(grep -o '<div class="case"' one.html | wc -l)" = 1 ] || fail "--case did not select one series"

# A run stopped on purpose (a dsgd-tune trial at its budget) is shown as stopped, with its reason,
# counted apart, and never as interrupted.
cp t.db stopped.db
sql stopped.db "UPDATE runs SET status = 'stopped', error = 'stopped by dsgd-tune: budget of 0.5 s reached' WHERE id = $P"
"$BIN" report --db stopped.db --format html -o stopped.html || fail "report of a stopped run failed"
grep -q '<td title="stopped by dsgd-tune: budget of 0.5 s reached">stopped</td>' stopped.html ||
  fail "the stopped run's status and reason are not in the run table"
grep -q '33 runs (32 completed, 1 stopped)' stopped.html || fail "statuses not counted"
grep -Eq '>interrupted<|[0-9] interrupted' stopped.html && fail "a stopped run shown as interrupted"

CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -n "$CHROMIUM" ]; then
  timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
    --user-data-dir="$WORK/profile" --proxy-server=127.0.0.1:9 --proxy-bypass-list='<-loopback>' \
    --enable-logging=stderr --v=0 --window-size=1280,2400 --dump-dom "file://$WORK/h.html" > dom.html 2> chrome.log ||
    { tail chrome.log; fail "chromium --dump-dom failed"; }
  grep -q 'data-ready="1"' dom.html || fail "the report's script did not run to the end"
  grep -q 'data-errors=' dom.html && fail "script errors in the report"
  if grep -E 'CONSOLE|Uncaught' chrome.log; then fail "console output or errors while loading the report"; fi
else
  echo "note: chromium not found, the page was not opened"
fi

expect_error "--history draws trend charts: it needs --format html" "$BIN" report --db t.db --history --format csv
expect_error "--metric .*only appl.* with --history" "$BIN" report --db t.db --format html --metric step_time -o x.html
expect_error "unknown metric 'nosuch'" "$BIN" report --db t.db --format html --history --metric nosuch -o x.html
[ -e x.html ] && fail "a refused report left a file"
echo PASS
