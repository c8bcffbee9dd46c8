# `dsgd-bench suite` and `dsgd-bench compare` as a CI gate, end to end: a one-entry suite
# is run 4 times as the baseline and 4 times with an injected straggler as the candidate
# (separate databases, as base and candidate commits would write them). Comparing the
# baseline with itself exits 0; the straggler candidate exits 1 naming the metric; 3 of them
# against 3 (too few for any p-value below 0.05) exit 3, inconclusive, never 1; fewer than 9
# repetitions warn; nothing matched and unknown tags exit 2. Also: the output files
# (markdown, JUnit XML, github-action-benchmark JSON) and suite tagging.
source "$(dirname "$0")/common.bash"

cat > gate.toml <<TOML
name = "gate"
[defaults]
dataset = "$SMALL"
batch = 16
steps = 60
warmup = 5
[[runs]]
algo = "ssgd"
TOML
sed 's/^algo = "ssgd"/algo = "ssgd"\nstraggler = "fixed:rank=0,delay=5ms"/' gate.toml > gate_slow.toml
sed -i 's/^name = "gate"/name = "gate"/' gate_slow.toml

"$BIN" suite gate.toml --repeat 4 --db base.db > suite_base.txt || { cat suite_base.txt; fail "baseline suite failed"; }
cat suite_base.txt
[ "$(sql base.db "select count(*) from runs where tag like 'suite=gate,rep=%' and status='completed'")" = 4 ] ||
  fail "suite runs not tagged suite=gate,rep=R"
[ "$(sql base.db "select group_concat(tag, ' ') from (select tag from runs order by id)")" = \
  "suite=gate,rep=1 suite=gate,rep=2 suite=gate,rep=3 suite=gate,rep=4" ] || fail "suite tags"
"$BIN" suite gate_slow.toml --repeat 4 --db cand.db > suite_cand.txt || fail "candidate suite failed"

# Identical repetitions: exit 0.
"$BIN" compare --db base.db suite=gate suite=gate > same.md 2> same.err || { cat same.md same.err; fail "self-compare did not exit 0"; }
grep -q "No significant regression" same.md || fail "self-compare summary"
grep -q "few repetitions" same.err || { cat same.err; fail "no warning for 4 repetitions"; }

# 3 against 3 (run ids 1-3 of each database): the straggler's slowdown is beyond the
# threshold, but no outcome of 3 vs 3 can reach p < 0.05: inconclusive, exit 3, naming the
# repetitions that would settle it; never exit 1.
rc=0
"$BIN" compare --base-db base.db --cand-db cand.db 1-3 1-3 > few.md 2> few.err || rc=$?
[ $rc -eq 3 ] || { cat few.md few.err; fail "3 vs 3: expected exit 3 (inconclusive), got $rc"; }
grep -q "inconclusive (exit 3; rerun with --repeat 4)" few.err || { cat few.err; fail "inconclusive message"; }
grep -q "Inconclusive" few.md || { cat few.md; fail "markdown does not say inconclusive"; }

# The straggler candidate: exit 1, naming the metric, in every output.
set +e
"$BIN" compare --base-db base.db --cand-db cand.db suite=gate suite=gate --markdown gate.md --junit gate.xml \
  --benchmark-bigger bigger.json --benchmark-smaller smaller.json > cmp.md 2> cmp.err
rc=$?
set -e
cat cmp.md cmp.err
[ $rc -eq 1 ] || fail "straggler candidate: expected exit 1, got $rc"
grep -q "throughput_samples_per_s" cmp.err || fail "the regression message does not name the metric"
grep -q "REGRESSED" gate.md || fail "markdown summary"
python3 -c "import xml.dom.minidom,sys; d=xml.dom.minidom.parse('gate.xml'); f=d.getElementsByTagName('failure'); \
  assert f and any('throughput' in x.getAttribute('message') for x in f)" || fail "junit xml"
[ "$(jq -r '.[0].unit' bigger.json)" = "samples/s" ] || fail "benchmark-bigger json"
jq -e 'map(select(.name | contains("step_time_s"))) | length == 1' smaller.json > /dev/null || fail "benchmark-smaller json"

# Nothing matched (another algorithm) and bad selections: exit 2 with a clear message.
"$BIN" run --dataset "$SMALL" --steps 30 --batch 16 --algo localsgd --db other.db --tag other > /dev/null
set +e
"$BIN" compare --base-db base.db --cand-db other.db suite=gate other > /dev/null 2> none.err; rc=$?
"$BIN" compare --db base.db suite=gate nosuchtag > /dev/null 2> tag.err; rc2=$?
"$BIN" compare --db base.db 1 999 > /dev/null 2> id.err; rc3=$?
"$BIN" compare --db base.db 1 2 --threshold 5 > /dev/null 2> thr.err; rc4=$?
set -e
[ $rc -eq 2 ] && grep -q "nothing matched" none.err || { cat none.err; fail "nothing matched: want exit 2"; }
[ $rc2 -eq 2 ] && grep -q "nosuchtag" tag.err || { cat tag.err; fail "unknown tag: want exit 2"; }
[ $rc3 -eq 2 ] && grep -q "run 999 not found" id.err || { cat id.err; fail "unknown id: want exit 2"; }
[ $rc4 -eq 2 ] && grep -q "threshold" thr.err || { cat thr.err; fail "bad threshold: want exit 2"; }
"$BIN" suite nosuchsuite > /dev/null 2> suite.err && fail "unknown suite accepted"
grep -q "unknown suite 'nosuchsuite'" suite.err || fail "unknown suite message"
echo PASS
