#!/usr/bin/env bash
# A/A and A/B of `dsgd-bench track` on this machine's real noise: one benchmark case (SVM, ssgd,
# 2 MPI ranks, 300 steps) run R times per "commit" by the same binary, for N no-op commits
# gated one after another (each commit from the 4th on is tracked as it would be in CI), then
# one commit with a planted slowdown of about P % (a fixed straggler delay on rank 0 of P % of
# the measured step). Prints the A/A exit codes (no 1 may appear: the gate must not cry wolf)
# and the A/B verdict (it must be 1).
#   bash bench/track_aa.sh [BIN] [N=20] [R=3] [P=10]
set -euo pipefail
BIN=${1:-build/dsgd-bench}
N=${2:-20}
R=${3:-3}
P=${4:-10}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
db=$work/aa.db
case_args=(run --workload svm --workers 2 --steps 300 --batch 64 --eval-every 300
  --dataset "synthetic:n=20000,d=500,classes=10,noise=0.05,test=2000" --db "$db")
sql() { sqlite3 "$db" "$1"; }

commit_runs() {  # commit name, extra run flags...: R runs recorded as that commit
  local name=$1
  shift
  for ((r = 1; r <= R; r++)); do "$BIN" "${case_args[@]}" --tag "$name" "$@" > /dev/null; done
  sql "UPDATE runs SET git_commit = tag WHERE tag = '$name'"
}

codes=()
false_alarms=0
for ((c = 1; c <= N; c++)); do
  commit_runs "$(printf 'aa%02d' "$c")"
  if ((c >= 4)); then
    rc=0
    "$BIN" track --db "$db" --metric step_time --case 'svm ssgd w2' > "$work/t$c.txt" 2>&1 || rc=$?
    codes+=("$rc")
    ((rc == 1)) && false_alarms=$((false_alarms + 1)) && cat "$work/t$c.txt"
  fi
done
echo "A/A: $N no-op commits x $R runs, tracked from the 4th: exit codes ${codes[*]}"
echo "A/A: $false_alarms false regression(s)"
tail -3 "$work/t$N.txt" | head -2

# The planted slowdown: a fixed delay on rank 0 of P % of the median step so far.
step_s=$(sql "SELECT step_time_s FROM summaries ORDER BY step_time_s LIMIT 1 OFFSET (SELECT count(*) / 2 FROM summaries)")
delay_ms=$(awk -v s="$step_s" -v p="$P" 'BEGIN { printf "%.4f", s * 1000 * p / 100 }')
commit_runs ab01 --straggler "fixed:rank=0,delay=${delay_ms}ms"
rc=0
"$BIN" track --db "$db" --metric step_time --case 'svm ssgd w2' > "$work/ab.txt" 2>&1 || rc=$?
cat "$work/ab.txt"
echo "A/B: planted +$P % (straggler delay ${delay_ms} ms on a median step of $step_s s): exit $rc"
((false_alarms == 0 && rc == 1))
