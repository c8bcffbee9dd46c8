# dsgd-tune recommend refuses bad input with one clear message, exit 2, and stores nothing:
# an empty search space, a target the trials cannot measure, a zero budget, an unknown
# algorithm (listing the valid ones), a space whose every point breaks a constraint
# (--max-bytes-per-step, --max-memory), an unknown or malformed compressor, --jobs 0; on
# --backend mpi more workers than this machine runs as ranks, --jobs > 1 and sim-only flags (and
# grid, which is sim only); no target, no budget; and its output to a full disk is an error.
source "$(dirname "$0")/common.bash"
TUNE="$(dirname "$BIN")/dsgd-tune"
[ -x "$TUNE" ] || fail "dsgd-tune is not built next to $BIN"

ok=(recommend --dataset "$SMALL" --workers 4 --db t.db --target acc=0.8 --trials 4)
# Nothing stored half-way: no database file is created.
expect_error_also() { [ ! -e t.db ] || fail "a database was created by a refused command: $*"; }

expect_error "search space is empty" "$TUNE" "${ok[@]}" --period 5..7 --algos localsgd
expect_error "--algos is empty" "$TUNE" "${ok[@]}" --algos ""
expect_error "cannot be measured with --timing-only" "$TUNE" "${ok[@]}" --timing-only
expect_error "--target 'ppl=3'|ppl=3" "$TUNE" "${ok[@]}" --target ppl=3
expect_error "the budget must be positive" "$TUNE" recommend --dataset "$SMALL" --workers 4 --db t.db --target acc=0.8 --budget 0
expect_error "--trials must be positive" "$TUNE" recommend --dataset "$SMALL" --workers 4 --db t.db --target acc=0.8 --trials 0
expect_error "no budget" "$TUNE" recommend --dataset "$SMALL" --workers 4 --db t.db --target acc=0.8
expect_error "--target is required" "$TUNE" recommend --dataset "$SMALL" --workers 4 --db t.db --trials 4
expect_error "unknown algorithm 'warpdrive'" "$TUNE" "${ok[@]}" --algos ssgd,warpdrive
grep -q "ssgd, localsgd" err.txt || fail "the valid algorithms are not listed"
expect_error "every one of the [0-9]+ configurations of the search space is refused" "$TUNE" "${ok[@]}" --max-bytes-per-step 10
grep -q "above --max-bytes-per-step" err.txt || fail "the refusal does not say why"
# --backend mpi: real ranks of this machine, one trial at a time, sim-only flags refused.
many=$(( 4 * $(nproc) + 1 ))
expect_error "--backend mpi: $many workers are more MPI ranks than this machine runs" \
  "$TUNE" recommend --dataset "$SMALL" --workers "$many" --db t.db --target acc=0.8 --trials 4 --backend mpi
grep -q "backend sim to simulate them" err.txt || fail "the MPI workers refusal does not suggest --backend sim"
expect_error "--jobs 2 with --backend mpi" "$TUNE" "${ok[@]}" --backend mpi --jobs 2
expect_error "--compute-scale: applies to --backend sim only|compute-scale.*sim only" "$TUNE" "${ok[@]}" --backend mpi --compute-scale 0.1
expect_error "grid runs its trials on --backend sim only" "$TUNE" grid --dataset "$SMALL" --workers 2 --db t.db \
  --target acc=0.8 --trial-time 1s --backend mpi
expect_error "is not known" "$TUNE" "${ok[@]}" --format yaml
expect_error "no database at .t.db." "$TUNE" recommend --resume 3 --db t.db
# The compression and memory knobs, and --jobs.
expect_error "--compress warp:3: unknown compressor 'warp'" "$TUNE" "${ok[@]}" --compress none,warp:3
expect_error "--compress topk:2: ratio must be in" "$TUNE" "${ok[@]}" --compress topk:2
expect_error "--compress is empty" "$TUNE" "${ok[@]}" --compress ""
expect_error "--max-memory '0': must be positive" "$TUNE" "${ok[@]}" --max-memory 0
expect_error "--max-memory 'lots' is not a size" "$TUNE" "${ok[@]}" --max-memory lots
expect_error "every one of the [0-9]+ configurations of the search space is refused" "$TUNE" "${ok[@]}" --max-memory 10kB
grep -q "above --max-memory" err.txt || fail "the memory refusal does not say why"
expect_error "--jobs must be in 1..1024" "$TUNE" "${ok[@]}" --jobs 0

# With an existing database: still nothing stored (no session, no run).
"$BIN" run --backend sim --dataset "$SMALL" --workers 1 --steps 2 --db t.db > /dev/null 2>&1 || true
unset -f expect_error_also
before=$(sqlite3 t.db "SELECT count(*) FROM runs")
expect_error "unknown algorithm" "$TUNE" "${ok[@]}" --algos nope
[[ $(sqlite3 t.db "SELECT count(*) FROM runs") == "$before" ]] || fail "a refused session stored a run"
[[ $(sqlite3 t.db "SELECT count(*) FROM sqlite_master WHERE name='tune_sessions'") == 0 ||
   $(sqlite3 t.db "SELECT count(*) FROM tune_sessions") == 0 ]] || fail "a refused session was stored"
expect_error "no tuning session 42" "$TUNE" recommend --resume 42 --db t.db
expect_error "no tuning session 42" "$TUNE" show 42 --db t.db
# Output lost to a full disk is an error, not exit 0 (the stdout check of cli/app_main.hpp).
rc=0
"$TUNE" sessions --db t.db > /dev/full 2> full.err || rc=$?
[ "$rc" -eq 1 ] || { cat full.err; fail "dsgd-tune sessions > /dev/full exited $rc, not 1"; }
grep -q "No space left on device" full.err || { cat full.err; fail "no reason given for the lost output"; }
echo "ok: tune_bad_input"
