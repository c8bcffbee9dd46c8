# The live progress line of `run` (cli/progress_line.hpp): on a terminal (a pseudo-terminal
# from `script`) it is drawn in place with step of total, samples/s, elapsed, remaining and
# the last loss, and erased before each evaluation line; when stdout is not a terminal,
# nothing of it is printed.
source "$(dirname "$0")/common.bash"

common=(--dataset "$SMALL" --steps 3000 --batch 32 --eval-every 1500 --db t.db)

"$BIN" run "${common[@]}" > plain.out 2>&1 || { cat plain.out; fail "run without a terminal failed"; }
! grep -q "samples/s  elapsed" plain.out || fail "progress line printed when stdout is not a terminal"
! grep -q $'\r' plain.out || fail "carriage return in output that is not a terminal"

command -v script > /dev/null || { echo "SKIP: no script(1) to make a pseudo-terminal"; exit 0; }
# Slow steps down with a straggler so the run spans several redraws (4 per second).
script -qec "$BIN run ${common[*]} --straggler fixed:rank=0,delay=1ms" /dev/null > tty.out 2>&1 ||
  { cat tty.out; fail "run on a pseudo-terminal failed"; }
grep -Eq $'\r\e\\[K  step [0-9]+/3000  [0-9]+ samples/s  elapsed [0-9]+:[0-9]{2}  remaining [0-9?:]+  loss [0-9.]+' tty.out ||
  { cat -v tty.out | head -20; fail "no progress line on a terminal"; }
grep -q "run_id=" tty.out || fail "no run id on a terminal"
echo "ok: progress line on a terminal only"
