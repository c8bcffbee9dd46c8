# `dsgd-bench report` CSV / JSON end to end: one row per run with the stored values, the
# long tables (--per-step, --evals), a tag with a comma and quotes surviving the round
# trip through a CSV reader, and bad input (unknown run id or tag, empty database, a path
# that cannot be written, html to stdout) failing with exit 2 and no file left behind.
source "$(dirname "$0")/common.bash"

"$BIN" run --dataset "$SMALL" --steps 30 --batch 16 --db t.db --tag 'a,b "q"' > out1.txt || fail "run 1 failed"
"$BIN" run --dataset "$SMALL" --steps 20 --batch 16 --db t.db --algo localsgd --period 4 --tag plain > out2.txt ||
  fail "run 2 failed"
id1=$(last_run_id out1.txt)
id2=$(last_run_id out2.txt)

"$BIN" report --db t.db --format csv -o runs.csv || fail "csv report failed"
head -c 200 runs.csv; echo
python3 - "$id1" <<'PY' || fail "csv content"
import csv, sqlite3, sys
rows = list(csv.DictReader(open("runs.csv", newline="")))
assert len(rows) == 2, len(rows)
r = [x for x in rows if x["run_id"] == sys.argv[1]][0]
assert r["tag"] == 'a,b "q"', r["tag"]
db = sqlite3.connect("t.db")
thr, acc, steps = db.execute("select throughput_samples_per_s, final_test_acc, timed_steps from summaries where run_id=?",
                             (int(sys.argv[1]),)).fetchone()
assert float(r["throughput_samples_per_s"]) == thr, (r["throughput_samples_per_s"], thr)
assert float(r["final_test_acc"]) == acc
assert int(r["timed_steps"]) == steps
assert r["time_to_target_s"] == ""  # no target: null, not 0
print("csv ok:", len(rows[0]), "columns")
PY

"$BIN" report --db t.db --format json --tag plain -o runs.json || fail "json report failed"
[ "$(jq '.rows | length' runs.json)" = 1 ] || fail "json: --tag plain should select one run"
[ "$(jq -r '.rows[0].run_id' runs.json)" = "$id2" ] || fail "json: wrong run"
[ "$(jq -r '.context.schema_version' runs.json)" = 1 ] || fail "json: no context header"
[ "$(jq -r '.columns[] | select(.name=="step_time_s") | .unit' runs.json)" = s ] || fail "json: units"

"$BIN" report --db t.db --per-step --runs "$id1" -o steps.csv || fail "per-step report failed"
[ $(($(wc -l < steps.csv) - 1)) = "$(sql t.db "select count(*) from steps where run_id=$id1")" ] || fail "per-step rows"
"$BIN" report --db t.db --evals --format json -o evals.json || fail "evals report failed"
[ "$(jq '.rows | length' evals.json)" = "$(sql t.db 'select count(*) from evals')" ] || fail "evals rows"
"$BIN" report --db t.db --since 2000-01-01 --runs "$id1,$id2" > stdout.csv || fail "stdout report failed"
[ "$(wc -l < stdout.csv)" = 3 ] || fail "stdout report rows"

expect_error "run 999 not found" "$BIN" report --db t.db --runs 999 -o x.csv
expect_error "no run .* matches --tag nosuchtag" "$BIN" report --db t.db --tag nosuchtag -o x.csv
expect_error "no database" "$BIN" report --db missing.db -o x.csv
sqlite3 empty.db "create table x(a); drop table x;"  # a database without runs
expect_error "has no runs" "$BIN" report --db empty.db -o x.csv
expect_error "directory .* does not exist" "$BIN" report --db t.db -o no/such/dir/x.csv
expect_error "cannot write report '/proc/x.csv'" "$BIN" report --db t.db -o /proc/x.csv
expect_error "needs -o" "$BIN" report --db t.db --format html
expect_error "not a date" "$BIN" report --db t.db --since yesterday
[ ! -e x.csv ] || fail "a failed report left x.csv behind"
ls | grep -q '\.tmp-' && fail "a temporary file was left behind"
echo PASS
