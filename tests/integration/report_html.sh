# The HTML report opened in headless Chromium (Debian's `chromium`): the page loads from
# file:// with the network disabled, its script runs to the end (data-ready), no script
# error is trapped (data-errors) and nothing is written to the console; a 1280 px wide
# screenshot is taken (light and dark color schemes) and must be a non-trivial PNG. The
# runs differ only in workers (scaling section) and the database gets a validations
# and validation_metrics rows (validations section), as `dsgd-bench validate` writes them.
source "$(dirname "$0")/common.bash"

CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
[ -n "$CHROMIUM" ] || fail "chromium not found (scripts/install-deps.sh --tests installs it)"

for w in 1 2; do
  "$BIN" run --dataset "$SMALL" --steps 40 --batch 16 --workers $w --db t.db --tag "w=$w" --target acc=0.3 \
    > "run$w.txt" || fail "run with $w workers failed"
done
"$BIN" report --db t.db --format html -o plain.html || fail "html report failed"
grep -q 'id="scaling-throughput"' plain.html || fail "no scaling chart for runs differing only in workers"
grep -q "Validations" plain.html && fail "validations section without stored validations"

sqlite3 t.db "insert into validations (id, created_at, config_json) values (1, '2026-11-30T00:00:00Z', '{}'), (2, '2026-11-30T00:00:01Z', '{}');
              insert into validation_metrics values (1, 'step_time_s', 0.0012, 0.0010, 0.1667), (2, 'step_time_s', 0.0019, 0.0020, 0.0526);"
"$BIN" report --db t.db --format html -o report.html || fail "html report failed"
grep -q 'Validations: predicted vs measured' report.html || fail "validations section missing"
size=$(stat -c %s report.html)
echo "report.html: $size bytes"
grep -Eq 'https?:|src=|<link' report.html && fail "the report references something outside the file"

# Chromium as root needs --no-sandbox; a private profile and no network at all.
chrome() {
  timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
    --user-data-dir="$WORK/profile" --proxy-server=127.0.0.1:9 --proxy-bypass-list='<-loopback>' \
    --enable-logging=stderr --v=0 --window-size=1280,2400 "$@"
}
chrome --dump-dom "file://$WORK/report.html" > dom.html 2> chrome.log || { tail chrome.log; fail "chromium --dump-dom failed"; }
grep -q 'data-ready="1"' dom.html || { tail -n 20 chrome.log; fail "the report's script did not run to the end"; }
grep -q 'data-errors=' dom.html && { grep -o 'data-errors="[^"]*"' dom.html; fail "script errors in the report"; }
if grep -E 'CONSOLE|Uncaught' chrome.log; then fail "console output or errors while loading the report"; fi
for scheme in light dark; do
  chrome --screenshot="$WORK/report-$scheme.png" --force-prefers-color-scheme=$scheme \
    --blink-settings=preferredColorScheme=$([ $scheme = dark ] && echo 0 || echo 1) \
    "file://$WORK/report.html" 2> "shot-$scheme.log" || { tail "shot-$scheme.log"; fail "screenshot failed"; }
  if grep -E 'CONSOLE|Uncaught' "shot-$scheme.log"; then fail "console output while taking the $scheme screenshot"; fi
  png=$(stat -c %s "report-$scheme.png")
  [ "$png" -gt 20000 ] || fail "screenshot ($scheme) suspiciously small: $png bytes"
  [ "$(head -c 8 "report-$scheme.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "not a PNG"
  echo "screenshot $scheme: $png bytes"
done
cmp -s report-light.png report-dark.png && fail "light and dark screenshots are identical"
echo PASS
