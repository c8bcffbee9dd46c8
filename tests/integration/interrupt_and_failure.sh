# A run stopped by a signal is kept as 'interrupted' with the rows flushed before it; a
# run that fails after it started is kept as 'failed' with its error; both exit non-zero.
source "$(dirname "$0")/common.bash"

# 1. SIGTERM to the launcher (mpiexec forwards it to the ranks) in the middle of a long run.
"$BIN" run --workers 2 --dataset "$SMALL" --steps 100000000 --eval-every 200 --batch 32 --db t.db \
  > out.txt 2> err.txt &
pid=$!
for _ in $(seq 1 100); do
  [ "$(grep -c '^eval step' out.txt 2>/dev/null || true)" -ge 3 ] && break
  sleep 0.1
done
grep -q '^eval step' out.txt || { cat out.txt err.txt; fail "run did not start"; }
kill -TERM "$pid"
set +e
wait "$pid"
rc=$?
set -e
[ $rc -ne 0 ] || fail "interrupted run exited 0"
cat err.txt
[ "$(sql t.db "select status from runs order by id desc limit 1")" = interrupted ] ||
  fail "status is $(sql t.db 'select status from runs order by id desc limit 1'), expected interrupted"
[ "$(sql t.db "select count(*) from steps")" -ge 400 ] || fail "flushed step rows were not kept"
[ "$(sql t.db "select count(*) from evals")" -ge 3 ] || fail "evaluations were not kept"
[ "$(sql t.db "select count(*) from summaries")" = 1 ] || fail "interrupted run has no summary"
"$BIN" runs --db t.db | grep -q interrupted || fail "runs does not show the interrupted run"

# 2. A failure after the run started (the parameters cannot be written: the path is a directory).
mkdir -p params_dir
set +e
"$BIN" run --workers 2 --dataset "$SMALL" --steps 30 --batch 32 --db t.db --save-params params_dir > out.txt 2> err.txt
rc=$?
set -e
[ $rc -ne 0 ] || fail "failing run exited 0"
grep -q "params_dir" err.txt || { cat err.txt; fail "error does not name the path"; }
[ "$(sql t.db "select status from runs order by id desc limit 1")" = failed ] || fail "status is not failed"
sql t.db "select error from runs order by id desc limit 1" | grep -q params_dir || fail "error not stored"
[ "$(sql t.db "select count(*) from steps where run_id=(select max(id) from runs)")" = 60 ] ||
  fail "the failed run's measured steps were not kept"
echo PASS
