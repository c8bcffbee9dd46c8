# Memory copies slowed by where their buffers sit (core/copy_aliasing.hpp): a run records what
# its start found and did; where the CPU's rep movsb was slow at the aliased placement, the
# program restarted with glibc's tunable and its copies are then as fast at both placements;
# with DSGD_COPY_ALIASING=0 it does not restart and says so; a user's own setting of the
# tunable is kept; MPI ranks start with it too.
source "$(dirname "$0")/common.bash"

copies() { sql t.db "select json_extract(config_json, '$.\"copy-aliasing\".$1') from runs order by id desc limit 1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

"$BIN" run --dataset "$SMALL" --steps 5 --batch 16 --db t.db > out.txt 2>&1 || { cat out.txt; fail "run failed"; }
state=$(copies state)
case $state in
  none) echo "this CPU copies as fast at both placements: nothing to avoid" ;;
  avoided)
    before=$(ratio "$(copies '"before-aliased-s"')" "$(copies '"before-clean-s"')")
    after=$(ratio "$(copies '"aliased-s"')" "$(copies '"clean-s"')")
    echo "aliased/clean copy: $before before the restart, $after after"
    awk -v r="$before" 'BEGIN { exit !(r >= 3) }' || fail "avoided at a ratio of $before (< 3)"
    # The point of it: after the restart the aliased copy is no longer several times slower.
    awk -v r="$after" 'BEGIN { exit !(r < 2) }' || fail "after the restart the aliased copy is still $after x slower"
    grep -q "warning.*memcpy" out.txt && fail "a warning although the slow copies were avoided" ;;
  *) fail "unexpected copy-aliasing state '$state' (expected none or avoided)" ;;
esac

DSGD_COPY_ALIASING=0 "$BIN" run --dataset "$SMALL" --steps 5 --batch 16 --db t.db > off.txt 2>&1 ||
  { cat off.txt; fail "run with DSGD_COPY_ALIASING=0 failed"; }
off=$(copies state)
if [ "$state" = avoided ]; then
  [ "$off" = slow ] || fail "DSGD_COPY_ALIASING=0: state '$off', expected slow"
  [ "$(copies why)" = "DSGD_COPY_ALIASING=0" ] || fail "DSGD_COPY_ALIASING=0: the record's why is '$(copies why)'"
  grep -q "warning .*memcpy took .*did not restart" off.txt || fail "no warning about the slow copies: $(cat off.txt)"
else
  [ "$off" = none ] || fail "DSGD_COPY_ALIASING=0 on a CPU without the slow case: state '$off'"
fi

GLIBC_TUNABLES=glibc.cpu.x86_rep_movsb_threshold=0x100000000 "$BIN" run --dataset "$SMALL" --steps 5 --batch 16 \
  --db t.db > user.txt 2>&1 || { cat user.txt; fail "run with the user's GLIBC_TUNABLES failed"; }
[ "$(copies state)" = "set by the environment" ] || fail "the user's tunable: state '$(copies state)'"

# Two ranks through mpiexec: rank 0's record says the same as a single process's.
"$BIN" run --workers 2 --dataset "$SMALL" --steps 5 --batch 16 --db t.db > two.txt 2>&1 ||
  { cat two.txt; fail "two-rank run failed"; }
[ "$(copies state)" = "$state" ] || fail "rank 0 of an MPI run: state '$(copies state)', a single process '$state'"
echo "copy aliasing: $state"
