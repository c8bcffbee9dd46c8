# `dsgd-bench suite` with [[claims]], end to end: a 2-entry suite on the small synthetic set
# (2 MPI ranks) with one claim that holds (Local SGD H=8 sends fewer bytes per step than
# SSGD) and one that does not (the reverse): the claims table shows both verdicts with the
# measured values and the exit code stays 0. The papers suite expands (dry run). A claim
# naming a run that does not exist, an unknown metric and a bad expect form are refused
# (exit 2) naming the claim and the key, before anything runs.
source "$(dirname "$0")/common.bash"

cat > claims.toml <<TOML
name = "claims"
[defaults]
dataset = "$SMALL"
workers = 2
batch = 16
steps = 40
warmup = 5
eval-every = 40
[[runs]]
id = "ssgd"
algo = "ssgd"
[[runs]]
id = "local8"
algo = "localsgd"
period = 8
[[claims]]
id = "fewer-bytes"
text = "local SGD sends fewer bytes"
lhs = "local8"
rhs = "ssgd"
metric = "bytes_sent_per_step"
expect = "lhs < rhs"
margin_rel = 0.5
[[claims]]
id = "more-bytes"
text = "local SGD sends more bytes"
lhs = "local8"
rhs = "ssgd"
metric = "bytes_sent_per_step"
expect = "lhs > rhs"
[[claims]]
id = "cluster"
text = "needs a cluster"
untestable = "64 workers"
TOML
"$BIN" suite claims.toml --db claims.db > suite.txt || { cat suite.txt; fail "claims suite failed"; }
cat suite.txt
grep -A2 -E '^  fewer-bytes +reproduced$' suite.txt | grep -Eq 'lhs local8 = [0-9.e+]+, rhs ssgd = [0-9.e+]+ margin 50% of rhs' ||
  fail "fewer-bytes: not reproduced or without its measured values"
grep -Eq '^  more-bytes +not reproduced$' suite.txt || fail "more-bytes: not 'not reproduced'"
grep -A2 -E '^  cluster +not testable here$' suite.txt | grep -q 'reason: 64 workers' || fail "untestable claim"
grep -q '3 claims: 1 reproduced, 1 not reproduced, 1 not testable here' suite.txt || fail "claims tally"

# The shipped papers suite expands and lists its claims.
"$BIN" suite papers --dry-run > papers.txt || { cat papers.txt; fail "papers suite does not expand"; }
grep -q '^claim dpsgd-large-batch: final_test_acc of dpsgd_b512 vs ssgd_b512$' papers.txt || fail "papers claims"

# Bad claims: exit 2 naming the claim and the key; nothing runs.
bad() {
  sed "s/$1/$2/" claims.toml > bad.toml
  expect_error "$3" "$BIN" suite bad.toml --db bad.db
  [ ! -e bad.db ] || fail "a run started despite the bad suite"
}
bad 'rhs = "ssgd"' 'rhs = "sgd"' "claim 'fewer-bytes': key 'rhs' names no run 'sgd'"
bad 'metric = "bytes_sent_per_step"' 'metric = "bytes"' "claim 'fewer-bytes': key 'metric': unknown metric 'bytes'"
bad 'expect = "lhs < rhs"' 'expect = "less"' "claim 'fewer-bytes': key 'expect'"
echo "suite_claims: ok"
