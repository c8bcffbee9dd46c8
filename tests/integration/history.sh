# `dsgd-bench history` end to end: 8 commits x 2 repetitions of one timing-only sim case whose
# compute gets 30 % slower from the 5th commit (--compute-scale, which the case's key ignores,
# as a code change would be), plus a second case that does not change. The commits are set
# in the database as a CI history would have recorded them. history finds the one change
# point at the 5th commit (+30 %), confirmed; none in the other case; --last, CSV and JSON
# carry the same; an unknown metric is refused.
source "$(dirname "$0")/common.bash"

commit_history_fixture 8 5

"$BIN" history --db t.db --metric step_time > h.txt || { cat h.txt; fail "history failed"; }
cat h.txt
# The changing case (4 workers): one change point, at commit 5, about +30 %.
awk '/w4 b16/,/^$/' h.txt > w4.txt
[ "$(grep -c '<- change' w4.txt)" = 1 ] || fail "expected one change point in the w4 series"
grep -q '^  commit5 .*<- change +[23][0-9]\.[0-9] % (p = ' w4.txt || fail "the change point is not at commit 5 (+20..39 %)"
grep -q 'unconfirmed' w4.txt && fail "the change point has 4 commits after it: confirmed"
# The steady case (2 workers): none.
awk '/w2 b16/,/^$/' h.txt | grep -q 'no change point in 8 commit(s)' || fail "the steady series shows a change point"
grep -q 'change points: E-Divisive means + Student.s t: window 50, max p-value 0.001' h.txt || fail "parameters not printed"

# --case and --last; CSV and JSON.
"$BIN" history --db t.db --case 'w4 b16' --last 3 > last.txt || fail "history --last failed"
[ "$(grep -c '^  commit[0-9]' last.txt)" = 3 ] || { cat last.txt; fail "--last 3 did not print 3 commits"; }
grep -q '5 earlier commit(s) not shown' last.txt || fail "--last does not say what it left out"
"$BIN" history --db t.db --case 'w4 b16' --format csv > h.csv || fail "csv failed"
[ "$(wc -l < h.csv)" = 9 ] || { cat h.csv; fail "csv: header + 8 rows expected"; }
grep -q '^"svm ssgd w4 b16 20steps.*,commit5,.*,true$' h.csv || { cat h.csv; fail "csv change row"; }
"$BIN" history --db t.db --format json > h.json || fail "json failed"
jq -e '.series | length == 3' h.json > /dev/null || fail "json: three series expected (w4, w2, the profile run)"
jq -e '[.series[] | select(.series | contains("w4")) | .change_points[0].commit] == ["commit5"]' h.json \
  > /dev/null || fail "json change point"
jq -e '.parameters.max_pvalue == 0.001 and .parameters.window == 50' h.json > /dev/null || fail "json parameters"

expect_error "--metric: unknown metric 'nosuch'" "$BIN" history --db t.db --metric nosuch
echo PASS
