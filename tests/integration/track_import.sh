# `track import`, `track calibrate`, the reference case and the git order of history, end to end:
#  - TigerBeetle's real series (tests/data/history, as Apache Otava's tests ship it) imported as
#    CSV; a second import adds nothing; history with Otava's options finds Otava's indices 15, 71;
#  - a github-action-benchmark data.js with a planted 30 % slowdown in one benchmark: track
#    gates it (exit 1), and leaves the unchanged benchmark ok;
#  - bad import files are refused (exit 2) with the line, and nothing stored changes;
#  - track calibrate runs a command R times and stores its noise floors; from stored runs too;
#  - a reference case that moves with the candidate turns its regression inconclusive (exit 3);
#  - history orders commits by a repository's first-parent line, leaving other commits out.
source "$(dirname "$0")/common.bash"
DATA="$(cd "$(dirname "$0")/../data/history" && pwd)"

# ---- CSV: a real series.
"$BIN" track import "$DATA/tigerbeetle.csv" --db t.db > i1.txt || fail "csv import failed"
grep -q 'imported 365 point(s) of 1 series' i1.txt || { cat i1.txt; fail "csv import count"; }
"$BIN" track import "$DATA/tigerbeetle.csv" --db t.db > i2.txt || fail "second import failed"
grep -q 'imported 0 point(s) of 1 series .*(365 already stored)' i2.txt || { cat i2.txt; fail "import not idempotent"; }
"$BIN" history --db t.db --metric imported --window 30 --max-pvalue 0.01 --min-magnitude 0.05 --min-segment 1 --log false \
  --autocorrelation false --format json > tb.json || fail "history of the imported series failed"
jq -e '[.series[0].change_points[].index] == [15, 71]' tb.json > /dev/null ||
  { jq -c '[.series[0].change_points[].index]' tb.json; fail "Otava's indices [15, 71] not found"; }
jq -e '.series[0].bigger_is_better == true and .series[0].unit == "tx/s"' tb.json > /dev/null ||
  fail "tx/s should be bigger-is-better"

# ---- github-action-benchmark: 10 commits, fib_20 30 % slower from the 7th (ns/iter: smaller is better);
# the 7th is the candidate (its history before it is the baseline).
{
  echo 'window.BENCHMARK_DATA = {"lastUpdate": 1700000000000, "entries": {"Rust Benchmark": ['
  for i in 1 2 3 4 5 6 7 8 9 10; do
    slow=34000
    ((i >= 7)) && slow=44200
    wiggle=$(((i * 37) % 11 - 5))
    ((i > 1)) && echo ','
    echo "{\"commit\": {\"id\": \"$(printf '%02d%038d' "$i" 0)\", \"timestamp\": \"2024-01-$(printf '%02d' "$i")T00:00:00Z\"},"
    echo " \"date\": 1700000000000, \"tool\": \"cargo\", \"benches\": ["
    echo "  {\"name\": \"bench_fib_10\", \"value\": $((254 + wiggle)), \"unit\": \"ns/iter\"},"
    echo "  {\"name\": \"bench_fib_20\", \"value\": $((slow + 40 * wiggle)), \"unit\": \"ns/iter\"}]}"
  done
  echo ']}};'
} > data.js
"$BIN" track import data.js --db g.db --machine ci-runner > g.txt || { cat g.txt; fail "data.js import failed"; }
grep -q 'imported 20 point(s) of 2 series' g.txt || { cat g.txt; fail "data.js import count"; }
rc=0
"$BIN" track --db g.db --metric imported --commit 07 > gt.txt || rc=$?
cat gt.txt
[ "$rc" = 1 ] || fail "the fib_20 slowdown should gate (exit 1), got $rc"
awk '/bench_fib_20/,/^$/' gt.txt | grep -q 'REGRESSED' || fail "fib_20 not REGRESSED"
awk '/bench_fib_10/,/^$/' gt.txt | grep -q -- '-> ok' || fail "fib_10 should be ok"
grep -q 'machine: ci-runner' gt.txt || fail "--machine not kept"

# ---- bad input: refused, nothing stored changes.
before=$(sql t.db "SELECT count(*) FROM imported_points")
expect_error_also() { [ "$(sql t.db 'SELECT count(*) FROM imported_points')" = "$before" ] || fail "stored points changed"; }
printf 'series,commit,date,value\na,c1,2024-01-01,1.5\na,c2,2024-01-02,fast\n' > bad1.csv
expect_error "bad1.csv:3: value 'fast' is not a finite number" "$BIN" track import bad1.csv --db t.db
printf 'a,c1,2024-01-01\n' > bad2.csv
expect_error "bad2.csv:1: 3 field\(s\), expected 4 or 5" "$BIN" track import bad2.csv --db t.db
echo '{"entries": {"s": [{"benches": []}]}}' > bad3.json
expect_error 'no commit.id' "$BIN" track import bad3.json --db t.db
expect_error "cannot read 'nosuch.csv'" "$BIN" track import nosuch.csv --db t.db
unset -f expect_error_also

# ---- calibrate: 3 runs of a command, then from the stored runs of their commit.
sim=(run --backend sim --timing-only true --workload svm --dataset "$SMALL" --workers 4 --steps 20 --batch 16
  --straggler "lognormal:sigma=0.2")
"$BIN" track calibrate -R 3 --db c.db -- "${sim[@]}" > cal.txt || { cat cal.txt; fail "calibrate failed"; }
cat cal.txt
[ "$(sql c.db 'SELECT count(*) FROM runs')" = 3 ] || fail "calibrate should have stored 3 runs"
grep -q 'svm ssgd w4 b16' cal.txt || fail "calibrate table lacks the case"
[ "$(sql c.db "SELECT count(*) FROM noise_floors WHERE metric = 'step_time_s' AND runs = 3")" = 1 ] ||
  fail "no step_time_s floor of 3 runs stored"
commit=$(sql c.db 'SELECT git_commit FROM runs LIMIT 1')
"$BIN" track calibrate --commit "$commit" --db c.db > cal2.txt || { cat cal2.txt; fail "calibrate --commit failed"; }
expect_error 'too few to measure a spread' "$BIN" track calibrate -R 2 --db c.db -- "${sim[@]}"
expect_error 'nothing to measure' "$BIN" track calibrate --db c.db

# ---- the reference case: both cases 30 % slower at the candidate (the machine got slower).
sim2=(--backend sim --timing-only true --workload svm --dataset "$SMALL" --steps 20 --batch 16 --db r.db)
for c in 1 2 3 4 5 6; do
  scale=1
  ((c == 6)) && scale=1.3
  for rep in 1 2; do
    "$BIN" run "${sim2[@]}" --workers 4 --compute-scale "$scale" --seed "$rep" --tag "c$c" > /dev/null || fail "run"
    "$BIN" run "${sim2[@]}" --workers 2 --compute-scale "$scale" --seed "$rep" --tag "c$c" > /dev/null || fail "run"
  done
done
sql r.db "UPDATE runs SET git_commit = 'commit' || substr(tag, 2)"
rc=0
"$BIN" track --db r.db --case 'w4 b16' > r1.txt || rc=$?
[ "$rc" = 1 ] || { cat r1.txt; fail "without a reference the slowdown gates (exit 1), got $rc"; }
rc=0
"$BIN" track --db r.db --reference 'w2 b16' > r2.txt || rc=$?
cat r2.txt
[ "$rc" = 3 ] || fail "with the reference moving too, the verdict is inconclusive (exit 3), got $rc"
grep -q "the reference case 'svm ssgd w2 b16.*' moved +30.0 % at this commit too" r2.txt || fail "veto not explained"
expect_error "no series matches the reference case 'nosuch'" "$BIN" track --db r.db --reference nosuch

# ---- git order: commits stored out of order, ordered by the repository's first-parent line.
git init -q repo && git -C repo config user.email t@t && git -C repo config user.name t
for c in 1 2 3 4 5; do git -C repo commit -q --allow-empty -m "c$c"; done
mapfile -t line < <(git -C repo rev-list --first-parent --reverse HEAD)
# Stored newest first (reverse order), plus a commit that is not on the line.
for i in 4 3 2 1 0; do sql r.db "UPDATE runs SET git_commit = '${line[$i]}' WHERE tag = 'c$((5 - i))'"; done
sql r.db "UPDATE runs SET git_commit = 'feedbeef' || '0000000' WHERE tag = 'c6'"
"$BIN" history --db r.db --case 'w4 b16' --git-dir repo > o.txt || fail "history in git order failed"
cat o.txt
grep -q 'order: git HEAD first-parent; 1 commit(s) off the line left out' o.txt || fail "git order not used"
got=$(grep -oE '^  [0-9a-f]{12} ' o.txt | tr -d ' ' | tr '\n' ' ')
want="$(for i in 0 1 2 3 4; do printf '%s ' "${line[$i]:0:12}"; done)"
[ "$got" = "$want" ] || fail "git order: got '$got', want '$want'"
"$BIN" history --db r.db --case 'w4 b16' --git-dir repo --order stored > s.txt || fail "history --order stored"
grep -q 'order: as stored' s.txt || fail "--order stored not used"
expect_error "--order git: .* is not in a git repository" "$BIN" history --db r.db --order git --git-dir /
expect_error "history: no series of metric 'step_time_s' with case 'nosuch'" "$BIN" history --db r.db --case nosuch
expect_error "history: no series of metric 'imported'" "$BIN" history --db r.db --metric imported
echo PASS
