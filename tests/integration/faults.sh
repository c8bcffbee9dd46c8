# Faults: output lost to a full disk is an error and leaves no partial file;
# runs killed by SIGKILL (a rank, mpiexec, the launcher, or the writer alone) do not stay
# `running`; a database locked past the busy timeout gives one clear error and loses
# nothing; stored text cannot drive the terminal; a read-only directory can be listed;
# too many local ranks are refused.
source "$(dirname "$0")/common.bash"

"$BIN" run --dataset "$SMALL" --steps 30 --batch 32 --db t.db > out.txt 2>&1 || { cat out.txt; fail "first run"; }
id=$(last_run_id out.txt)

# ---- 1. Output on a full disk: exit 1 with the reason, no partial file ------------------------
EXPECT_RC=1 expect_error "standard output failed: No space left on device" \
  bash -c "\"$BIN\" report --db t.db --format csv > /dev/full"
EXPECT_RC=1 expect_error "report '/dev/full' failed: No space left on device" "$BIN" report --db t.db -o /dev/full
EXPECT_RC=1 expect_error "trace '/dev/full' failed: No space left on device" "$BIN" trace "$id" --db t.db -o /dev/full
EXPECT_RC=1 expect_error "standard output failed: No space left on device" bash -c "\"$BIN\" runs --db t.db > /dev/full"
EXPECT_RC=1 expect_error "standard output failed: No space left on device" \
  bash -c "\"$BIN\" show $id --db t.db > /dev/full"
EXPECT_RC=1 expect_error "standard output failed: No space left on device" \
  bash -c "\"$BIN\" report --db t.db --format json > /dev/full"
set +e
"$BIN" run --dataset "$SMALL" --steps 10 --batch 32 --db t.db --save-params /dev/full > out.txt 2> err.txt
rc=$?
set -e
[ $rc -ne 0 ] || { cat err.txt; fail "run --save-params /dev/full exited 0"; }
grep -q "parameters '/dev/full' failed: No space left on device" err.txt || { cat err.txt; fail "no reason given"; }
[ "$(sql t.db 'select status from runs order by id desc limit 1')" = failed ] || fail "the run is not 'failed'"
[ -c /dev/full ] || fail "/dev/full was replaced"
# A run's own printout: training is not affected by where its printout goes. The run completes
# and is stored `completed`; the command exits 1 saying only the output was lost and where the
# run is (it used to stop mid-run on the failed write and store the run `failed`).
set +e
"$BIN" run --dataset "$SMALL" --steps 10 --batch 32 --db t.db > /dev/full 2> err.txt
rc=$?
set -e
one_run=$(sql t.db "select id from runs order by id desc limit 1")
[ $rc -eq 1 ] || { cat err.txt; fail "run > /dev/full exited $rc, not 1"; }
grep -q "writing to standard output failed: No space left on device" err.txt || { cat err.txt; fail "no reason"; }
grep -q "only the printed output was lost: run $one_run (completed) stored in t.db" err.txt ||
  { cat err.txt; fail "run > /dev/full: the stored run is not named"; }
[ "$(grep -c error err.txt)" -eq 1 ] || { cat err.txt; fail "run > /dev/full: more than one error"; }
[ "$(sql t.db "select status from runs where id = $one_run")" = completed ] || fail "run > /dev/full: not completed"
echo "ok: run > /dev/full exits 1, the run is stored completed"
# The multi-rank path: the launcher copies the ranks' output (mpiexec's) to its stdout with
# every write checked. Training is not affected by where its printout goes: the run completes
# and is stored `completed`; the command exits 1 saying the output was lost and where the run
# is. (Hydra itself, writing to a full disk, killed the ranks and exited 255: run `killed`.)
set +e
"$BIN" run --workers 2 --dataset "$SMALL" --steps 10 --batch 32 --db t.db > /dev/full 2> err.txt
rc=$?
set -e
[ $rc -eq 1 ] || { cat err.txt; fail "run --workers 2 > /dev/full exited $rc, not 1"; }
grep -q "writing to standard output failed: No space left on device" err.txt ||
  { cat err.txt; fail "run --workers 2 > /dev/full: no reason given"; }
full_run=$(sql t.db "select id from runs order by id desc limit 1")
grep -q "only the printed output was lost: run $full_run (completed) stored in t.db" err.txt ||
  { cat err.txt; fail "run --workers 2 > /dev/full: the stored run is not named"; }
[ "$(sql t.db "select status from runs where id = $full_run")" = completed ] ||
  fail "run --workers 2 > /dev/full: run $full_run is $(sql t.db "select status from runs where id = $full_run")"
[ "$(sql t.db "select count(*) from steps where run_id = $full_run")" -gt 0 ] || fail "no steps stored"
echo "ok: run --workers 2 > /dev/full exits 1, the run is stored completed"
# trace -o DIR: a real message, not "Success".
mkdir -p adir
expect_error "cannot write trace 'adir': it is a directory" "$BIN" trace "$id" --db t.db -o adir
grep -q Success err.txt && fail "trace -o DIR says Success"

# A really full file system (a 64 KiB tmpfs, filled up), when this user may mount one.
mkdir -p small
if mount -t tmpfs -o size=64k tmpfs small 2> /dev/null; then
  trap 'umount "$WORK/small" 2> /dev/null || true' EXIT
  dd if=/dev/zero of=small/filler bs=1k 2> /dev/null || true
  EXPECT_RC=1 expect_error "report 'small/steps.csv' failed: No space left on device" \
    "$BIN" report --db t.db --per-step -o small/steps.csv
  [ "$(ls -A small)" = filler ] || { ls -la small; fail "a partial report was left on the full disk"; }
  EXPECT_RC=1 expect_error "standard output failed: No space left on device" \
    bash -c "\"$BIN\" report --db t.db --per-step --format csv > small/stdout.csv"
  EXPECT_RC=1 expect_error "trace 'small/t.json' failed: No space left on device" \
    "$BIN" trace "$id" --db t.db -o small/t.json
  [ "$(ls -A small | tr '\n' ' ')" = "filler stdout.csv " ] || { ls -la small; fail "a partial trace was left"; }
  umount small
  trap - EXIT
else
  echo "note: cannot mount a tmpfs here; the full-disk checks used /dev/full only"
fi

# ---- 2. Stored text is escaped in tables ------------------------------------------------------
"$BIN" run --dataset "$SMALL" --steps 10 --batch 32 --db t.db --tag $'evil\e[31mred\nsecond line' > out.txt 2>&1 ||
  { cat out.txt; fail "run with a strange tag"; }
tagged=$(last_run_id out.txt)
"$BIN" runs --db t.db > runs.txt
grep -q $'\e' runs.txt && fail "runs printed a raw escape character"
grep -qF 'evil\x1b[31mred\nsecond line' runs.txt || { cat runs.txt; fail "runs does not show the escaped tag"; }
grep -q '^second line' runs.txt && fail "the tag's newline broke the table"
"$BIN" show "$tagged" --db t.db > show.txt
grep -q $'\e' show.txt && fail "show printed a raw escape character"
"$BIN" report --db t.db --runs "$tagged" --format csv > tag.csv
grep -q $'\e' tag.csv && fail "the CSV report holds a raw escape character"
echo "ok: control characters in a tag are escaped in runs, show and the CSV report"

# ---- 3. Too many local ranks --------------------------------------------------------------------
cores=$(nproc)
expect_error "--oversubscribe" "$BIN" run --workers $((4 * cores + 1)) --dataset "$SMALL" --steps 5 --db over.db
[ ! -e over.db ] || fail "a refused launch created the database"
# Above 1 per core: a warning before launching (mpiexec replaced by /bin/true: nothing starts).
DSGD_MPIEXEC=/bin/true "$BIN" run --workers $((cores + 1)) --dataset "$SMALL" --steps 5 --db over.db 2> err.txt ||
  { cat err.txt; fail "a launch of cores + 1 ranks was refused"; }
grep -q "ranks exceed cores" err.txt || { cat err.txt; fail "no warning for more ranks than cores"; }
DSGD_MPIEXEC=/bin/true "$BIN" run --workers $((4 * cores + 1)) --oversubscribe --dataset "$SMALL" --steps 5 \
  --db over.db 2> err.txt || { cat err.txt; fail "--oversubscribe did not allow the launch"; }
echo "ok: more ranks than cores warned, more than 4 per core refused unless --oversubscribe"

# ---- 4. Killed runs -----------------------------------------------------------------------------
# start_long: a 2-rank run in the background; sets launcher, run (id) and rank0 (its writer pid).
starts=0
start_long() {
  starts=$((starts + 1))  # own output files: an earlier run's processes may still hold theirs
  "$BIN" run --workers 2 --dataset "$SMALL" --steps 100000000 --eval-every 200 --batch 32 --db k.db \
    > "long$starts.out" 2> "long$starts.err" &
  launcher=$!
  for _ in $(seq 1 300); do
    [ "$(grep -ac '^eval step' "long$starts.out" 2> /dev/null || true)" -ge 2 ] && break
    sleep 0.1
  done
  grep -aq '^eval step' "long$starts.out" || { cat "long$starts.out" "long$starts.err"; fail "the long run did not start"; }
  run=$(sql k.db "select max(id) from runs")
  rank0=$(sql k.db "select pid from runs where id = $run")
}
# wait_gone PID: until the process has exited (at most 20 s).
wait_gone() {
  for _ in $(seq 1 200); do
    kill -0 "$1" 2> /dev/null || return 0
    sleep 0.1
  done
  fail "process $1 is still alive"
}
finish_launcher() {
  set +e
  wait "$launcher"
  rc=$?
  set -e
  [ $rc -ne 0 ] || fail "the launcher exited 0 after a kill"
}
expect_status() {  # RUN STATUS ERROR_PATTERN
  local status error
  status=$(sql k.db "select status from runs where id = $1")
  error=$(sql k.db "select error from runs where id = $1")
  [ "$status" = "$2" ] || { cat "long$starts.err"; fail "run $1 is '$status' ($error), expected '$2'"; }
  echo "$error" | grep -Eq -e "$3" || fail "run $1: error '$error' does not match '$3'"
  "$BIN" runs --db k.db | grep -E "^ +$1 " | grep -q "$2" || fail "runs does not show run $1 as $2"
  echo "ok: run $1 is $2: $error"
}

# a. SIGKILL of rank 1 (as the OOM killer would): the launcher sees it and marks the run.
start_long
rank1=$(ps -o pid= --ppid "$(ps -o ppid= -p "$rank0" | tr -d ' ')" | tr -d ' ' | grep -vx "$rank0" | head -n 1)
[ -n "$rank1" ] || fail "rank 1 not found"
kill -KILL "$rank1"
finish_launcher
wait_gone "$rank0"
expect_status "$run" killed "SIGKILL"
[ "$(sql k.db "select count(*) from steps where run_id = $run")" -gt 0 ] || fail "the killed run's steps were lost"

# b. SIGKILL of rank 0, the writer.
start_long
kill -KILL "$rank0"
finish_launcher
expect_status "$run" killed "SIGKILL"

# c. SIGKILL of mpiexec: the launcher stops its orphaned ranks and marks the run.
start_long
mpiexec_pid=$(ps -o pid= --ppid "$launcher" | tr -d ' ' | head -n 1)
kill -KILL "$mpiexec_pid"
finish_launcher
wait_gone "$rank0"
expect_status "$run" killed "mpiexec was killed by SIGKILL"

# d. SIGKILL of the launcher: mpiexec gets SIGINT (its parent-death signal) and rank 0,
#    finding the launcher's pid gone, records `killed` (not `interrupted`: nobody pressed Ctrl-C).
start_long
mpiexec_pid=$(ps -o pid= --ppid "$launcher" | tr -d ' ' | head -n 1)
kill -KILL "$launcher"
wait "$launcher" 2> /dev/null || true
wait_gone "$rank0"
wait_gone "$mpiexec_pid"
expect_status "$run" killed "its launcher \(dsgd-bench pid [0-9]+\) was killed"

# e. SIGTERM to the launcher: `interrupted`, naming the signal it got (it reaches the
#    ranks as SIGINT, which rank 0 alone would record as "SIGINT").
start_long
kill -TERM "$launcher"
finish_launcher
wait_gone "$rank0"
expect_status "$run" interrupted "stopped by SIGTERM sent to the launcher"

# f. SIGKILL of a lone writer (no launcher to tell): the next command sees its process gone.
"$BIN" run --dataset "$SMALL" --steps 100000000 --eval-every 200 --batch 32 --db k.db > lone1.out 2>&1 &
lone=$!
for _ in $(seq 1 300); do
  [ "$(grep -ac '^eval step' lone1.out 2> /dev/null || true)" -ge 2 ] && break
  sleep 0.1
done
run=$(sql k.db "select max(id) from runs")
kill -KILL "$lone"
wait "$lone" 2> /dev/null || true
[ "$(sql k.db "select status from runs where id = $run")" = running ] || fail "precondition: stored as running"
"$BIN" runs --db k.db | grep -E "^ +$run " | grep -q killed || fail "runs does not see the dead run"
expect_status "$run" killed "process gone"
"$BIN" runs --db k.db | grep -q ' running ' && fail "a dead run is still listed as running"

# g. The same seen from a directory the reader cannot write: shown as killed, not stored.
"$BIN" run --dataset "$SMALL" --steps 100000000 --eval-every 200 --batch 32 --db k.db > lone2.out 2>&1 &
lone=$!
for _ in $(seq 1 300); do
  [ "$(grep -ac '^eval step' lone2.out 2> /dev/null || true)" -ge 2 ] && break
  sleep 0.1
done
run=$(sql k.db "select max(id) from runs")
kill -KILL "$lone"
wait "$lone" 2> /dev/null || true
mkdir -p rok
sqlite3 k.db ".backup rok/k.db"
chmod 555 rok
reader=()
if [ "$(id -u)" = 0 ]; then reader=(setpriv --reuid=65534 --regid=65534 --clear-groups); fi
if "${reader[@]}" true 2> /dev/null && ! "${reader[@]}" touch rok/probe 2> /dev/null; then
  "${reader[@]}" "$BIN" runs --db rok/k.db > ro.txt 2> ro.err || { cat ro.err; fail "runs, read-only directory"; }
  grep -E "^ +$run " ro.txt | grep -q killed || { cat ro.txt ro.err; fail "read-only: dead run not shown as killed"; }
  "${reader[@]}" "$BIN" show "$run" --db rok/k.db | grep -q "not stored" || fail "read-only: show does not say 'not stored'"
  [ "$(sql rok/k.db "select status from runs where id = $run")" = running ] || fail "read-only: the file was changed"
  echo "ok: read-only directory: the dead run is shown as killed and the file left as it is"
fi
chmod 755 rok
"$BIN" runs --db k.db > /dev/null
expect_status "$run" killed "process gone"

# ---- 5. A database locked past the busy timeout -------------------------------------------------
before=$(sql t.db "select count(*) || '/' || (select count(*) from steps) from runs")
(
  echo "BEGIN IMMEDIATE; UPDATE runs SET tag = tag WHERE id = $id;"
  sleep 9
  echo "COMMIT;"
) | sqlite3 t.db &
locker=$!
sleep 0.5
EXPECT_RC=1 expect_error "database '.*t.db' is locked" "$BIN" run --dataset "$SMALL" --steps 10 --batch 32 --db t.db
grep -q "write lock past the busy timeout" err.txt || { cat err.txt; fail "no hint about the lock"; }
wait "$locker"
[ "$(sql t.db "select count(*) || '/' || (select count(*) from steps) from runs")" = "$before" ] ||
  fail "the locked database changed"
"$BIN" run --dataset "$SMALL" --steps 10 --batch 32 --db t.db > out.txt 2>&1 || { cat out.txt; fail "run after the lock"; }
echo "ok: locked database: clear error, nothing lost, usable afterwards"

# ---- 6. Listing a WAL database in a read-only directory ------------------------------------------
mkdir -p ro
cp t.db ro/t.db
chmod 555 ro
as_reader=()
if [ "$(id -u)" = 0 ]; then as_reader=(setpriv --reuid=65534 --regid=65534 --clear-groups); fi
if "${as_reader[@]}" true 2> /dev/null; then
  "${as_reader[@]}" "$BIN" runs --db ro/t.db > ro.txt 2> ro.err || { cat ro.err; fail "runs in a read-only directory"; }
  grep -q completed ro.txt || fail "runs in a read-only directory listed nothing"
  "${as_reader[@]}" "$BIN" show "$id" --db ro/t.db > /dev/null 2> ro.err || { cat ro.err; fail "show, read-only"; }
  echo "ok: runs/show in a read-only directory"
fi
chmod 755 ro

# ---- 7. Not a database, and a corrupt one ----------------------------------------------------------
{ printf 'SQLite format 3\0'; head -c 8192 /dev/urandom; } > random.db
expect_error "not a dsgd-bench database or it is corrupt" "$BIN" runs --db random.db
grep -q newer err.txt && fail "random content reported as a newer schema"
cp t.db corrupt.db
size=$(stat -c %s corrupt.db)
dd if=/dev/urandom of=corrupt.db bs=4096 seek=$((size / 4096 / 2)) count=1 conv=notrunc 2> /dev/null
sum=$(sha256sum corrupt.db)
EXPECT_RC=1 expect_error "is corrupt" "$BIN" run --dataset "$SMALL" --steps 5 --db corrupt.db
[ "$(sha256sum corrupt.db)" = "$sum" ] || fail "the corrupt database was written to"
echo PASS
