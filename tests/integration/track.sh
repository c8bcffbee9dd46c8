# `dsgd-bench track` end to end: 9 commits x 2 repetitions of one timing-only sim case whose
# compute gets 30 % slower at the 9th (the candidate; --compute-scale, which the case's key
# ignores, as a code change would be), and a second case that does not change. track exits 1
# on the first case's candidate and records its change points; an `expected` annotation
# acknowledges it (exit 0); an `outlier` annotation takes the commit out, so the 8th becomes
# the candidate; the unchanged case passes (exit 0 or 3, never 1: an A/A gate); a candidate
# with too short a baseline, or an unknown commit, is exit 2.
source "$(dirname "$0")/common.bash"

commit_history_fixture 9 9

# The slower candidate regresses: exit 1, its change and the gate's parameters printed.
rc=0
"$BIN" track --db t.db --metric step_time --case 'w4 b16' > r.txt 2> r.err || rc=$?
cat r.txt r.err
[ "$rc" = 1 ] || fail "a 30 % slower candidate: exit 1 expected, got $rc"
grep -q '^  commit9 (2 run(s)): median .* mean of the baseline.s medians), +[23][0-9]\.[0-9] % (p = .*) -> REGRESSED' r.txt || fail "regression line"
grep -q 'against 8 commit(s), noise floor' r.txt || fail "the baseline and noise floor are not stated"
grep -q '^gate: threshold 5.0 %, p <= 0.01' r.txt || fail "gate parameters not printed"
[ "$(sql t.db "SELECT count(*) FROM change_points WHERE series LIKE '%w4 b16%' AND git_commit = 'commit9'")" = 1 ] ||
  fail "the change point at commit9 is not recorded"

# A/A: the unchanged case never fails.
rc=0
"$BIN" track --db t.db --metric step_time --case 'w2 b16' > aa.txt 2>&1 || rc=$?
cat aa.txt
[ "$rc" = 0 ] || [ "$rc" = 3 ] || fail "an unchanged series must pass or be inconclusive, got exit $rc"
grep -q '^  commit9 ' aa.txt || fail "commit9 should be the unchanged case's candidate"

# JSON carries the same verdict.
"$BIN" track --db t.db --metric step_time --case 'w4 b16' --format json > r.json 2> /dev/null || true
jq -e '.series[0].verdict == "REGRESSED" and .series[0].candidate == "commit9" and .regressed == 1' r.json \
  > /dev/null || { cat r.json; fail "json verdict"; }

# Acknowledged as expected: exit 0.
"$BIN" track annotate commit9 --kind expected --note 'slower on purpose' --db t.db > a.txt || fail "annotate failed"
grep -q 'annotation 1: expected commit9' a.txt || fail "annotate output"
"$BIN" track --db t.db --metric step_time --case 'w4 b16' > r2.txt || { cat r2.txt; fail "acknowledged: exit 0 expected"; }
grep -q -- '-> acknowledged' r2.txt || fail "acknowledged verdict"
"$BIN" track annotations --db t.db | grep -q 'expected  .*slower on purpose' || fail "annotations list"

# An outlier annotation takes commit9 out: commit8 is the candidate, unchanged.
"$BIN" track annotate commit9 --kind outlier --db t.db > /dev/null || fail "annotate outlier failed"
"$BIN" track --db t.db --metric step_time --case 'w4 b16' > r3.txt || { cat r3.txt; fail "outlier: exit 0 expected"; }
grep -q '^  commit8 ' r3.txt || fail "commit8 should be the candidate"
grep -q 'left out: commit9 (outlier)' r3.txt || fail "the outlier is not listed"

# Too short a baseline, an unknown commit, a bad kind: exit 2.
expect_error "no series could be tested" "$BIN" track --db t.db --case 'w2 b16' --commit commit2
expect_error "no selected series has a run of commit 'nosuch'" "$BIN" track --db t.db --commit nosuch
expect_error "unknown annotation kind 'wrong'" "$BIN" track annotate commit1 --kind wrong --db t.db
echo PASS
