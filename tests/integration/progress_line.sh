# The live progress line of `run` (cli/progress_line.hpp): on a terminal (a pseudo-terminal
# from `script`) it is drawn in place with step of total, samples/s, elapsed, remaining and
# the last loss, and erased before each evaluation line; when stdout is not a terminal,
# nothing of it is printed. The same for `calibrate`, `validate` (the parent of its child runs),
# `suite` (which run of how many, elapsed, the current run's step as of its last evaluation),
# and dsgd-tune's recommend and grid (on stderr: trial k of K, best so far, elapsed, budget).
# With --workers 2 (self-launch through mpiexec, whose ranks' stdout is a pipe) rank 0 draws
# on the launcher's terminal (cluster/launcher.hpp, launcher_adopt_terminal).
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

# calibrate and validate: no carriage return into a file; a progress line on a terminal.
"$BIN" calibrate --workers 1 --quick --dataset "$SMALL" --db c.db > cal_plain.out 2>&1 || { cat cal_plain.out; fail "calibrate failed"; }
! grep -q $'\r' cal_plain.out || fail "calibrate: carriage return in output that is not a terminal"
script -qec "$BIN calibrate --workers 1 --quick --dataset $SMALL --db c.db" /dev/null > cal_tty.out 2>&1 ||
  { cat cal_tty.out; fail "calibrate on a pseudo-terminal failed"; }
grep -Eq $'\r\e\\[K  calibrate: compute profile, batch [0-9]+ \\([0-9]/3\\)  elapsed [0-9]+:[0-9]{2}' cal_tty.out ||
  { cat -v cal_tty.out | head -20; fail "calibrate: no progress line on a terminal"; }
# Two ranks: the ranks' stdout is mpiexec's pipe; rank 0 writes to the launcher's terminal.
script -qec "$BIN calibrate --workers 2 --quick --dataset $SMALL --db c2.db" /dev/null > cal2_tty.out 2>&1 ||
  { cat cal2_tty.out; fail "calibrate --workers 2 on a pseudo-terminal failed"; }
grep -Eq $'\r\e\\[K  calibrate: [a-z_]+ [0-9]+[KMG]?i?B  point [0-9]+/[0-9]+  elapsed [0-9]+:[0-9]{2}' cal2_tty.out ||
  { cat -v cal2_tty.out | head -30; fail "calibrate --workers 2: no progress line on a terminal"; }
grep -q "^calibration_id=" <(tr -d '\r' < cal2_tty.out | sed 's/\x1b\[K//g') || fail "calibrate --workers 2: no id"
"$BIN" calibrate --workers 2 --quick --dataset "$SMALL" --db c2.db > cal2_plain.out 2>&1 ||
  { cat cal2_plain.out; fail "calibrate --workers 2 failed"; }
! grep -q $'\r' cal2_plain.out || fail "calibrate --workers 2: carriage return in output that is not a terminal"
script -qec "$BIN run ${common[*]} --workers 2 --straggler fixed:rank=0,delay=1ms" /dev/null > run2_tty.out 2>&1 ||
  { cat run2_tty.out; fail "run --workers 2 on a pseudo-terminal failed"; }
grep -Eq $'\r\e\\[K  step [0-9]+/3000  [0-9]+ samples/s' run2_tty.out ||
  { cat -v run2_tty.out | head -20; fail "run --workers 2: no progress line on a terminal"; }
cat > v.json <<JSON
{"dataset": "$SMALL", "algo": "ssgd", "steps": 20, "batch": 32, "warmup": 2, "bandwidth": "1Gbps", "db": "v.db"}
JSON
"$BIN" validate --config v.json > val_plain.out 2>&1 || { cat val_plain.out; fail "validate failed"; }
! grep -q $'\r' val_plain.out || fail "validate: carriage return in output that is not a terminal"
script -qec "$BIN validate --config v.json" /dev/null > val_tty.out 2>&1 || { cat val_tty.out; fail "validate on a pseudo-terminal failed"; }
grep -Eq $'\r\e\\[K  validate: (profile|measured|predicted|own compute) \\([1-4]/4\\)  elapsed [0-9]+:[0-9]{2}' val_tty.out ||
  { cat -v val_tty.out | head -20; fail "validate: no progress line on a terminal"; }
grep -q "^validation_id=" <(tr -d '\r' < val_tty.out) || fail "validate: no validation id on a terminal"
cat > live.toml <<TOML
name = "live"
[defaults]
workers = 1
dataset = "$SMALL"
batch = 32
steps = 1500
eval-every = 300
straggler = "fixed:rank=0,delay=1ms"
[[matrix]]
algo = ["ssgd", "localsgd"]
TOML
"$BIN" suite live.toml --db s.db > suite_plain.out 2>&1 || { cat suite_plain.out; fail "suite failed"; }
! grep -q $'\r' suite_plain.out || fail "suite: carriage return in output that is not a terminal"
script -qec "$BIN suite live.toml --db s.db" /dev/null > suite_tty.out 2>&1 || { cat suite_tty.out; fail "suite on a pseudo-terminal failed"; }
grep -Eq $'\r\e\\[K  suite live: run [12]/2 .* rep=1  elapsed [0-9]+:[0-9]{2}  step [0-9]+/1500' suite_tty.out ||
  { cat -v suite_tty.out | head -20; fail "suite: no progress line with the run's step on a terminal"; }
grep -q "^\[2/2\] .*run_id=" <(tr '\r' '\n' < suite_tty.out | sed 's/\x1b\[K//g') || fail "suite: no result line on a terminal"

# dsgd-tune recommend and grid: on a terminal (stderr), trial k of K, the best so far, elapsed
# and the budget used and left (recommend) / the evaluation time used (grid); nothing of it into
# a file.
TUNE="$(dirname "$BIN")/dsgd-tune"
tune=(--dataset "$SMALL" --workers 2 --bandwidth 1Gbps --latency 1ms --lr 0.2 --algos ssgd,localsgd --period 2..4
      --batch 32 --lr-scaling none --trial-time 0.5s --target acc=0.75 --max-trial-steps 3000 --jobs 1)
"$TUNE" recommend "${tune[@]}" --budget 3s --race-seeds 2 --db r.db > rec_plain.out 2>&1 || { cat rec_plain.out; fail "recommend failed"; }
! grep -q $'\r' rec_plain.out || fail "recommend: carriage return in output that is not a terminal"
! grep -q "\[dsgd-tune\]" rec_plain.out || fail "recommend: progress printed when not a terminal"
script -qec "$TUNE recommend ${tune[*]} --budget 3s --race-seeds 2 --db r.db" /dev/null > rec_tty.out 2>&1 ||
  { cat rec_tty.out; fail "recommend on a pseudo-terminal failed"; }
grep -Eq $'\r\e\\[K\\[dsgd-tune\\] trial [0-9]+ of ~[0-9]+ \\| best (none reached yet|.*: [0-9.e-]+ s) \\| [0-9]+ s elapsed \\| budget [0-9.e-]+ of 3 s used, [0-9.e-]+ s left' rec_tty.out ||
  { cat -v rec_tty.out | head -20; fail "recommend: no progress line (trial, best, elapsed, budget) on a terminal"; }
grep -q "^session_id=" <(tr '\r' '\n' < rec_tty.out | sed 's/\x1b\[K//g') || fail "recommend: no session id on a terminal"
"$TUNE" grid "${tune[@]}" --seeds 1 --db g.db > grid_plain.out 2>&1 || { cat grid_plain.out; fail "grid failed"; }
! grep -q $'\r' grid_plain.out || fail "grid: carriage return in output that is not a terminal"
script -qec "$TUNE grid ${tune[*]} --seeds 1 --db g2.db" /dev/null > grid_tty.out 2>&1 || { cat grid_tty.out; fail "grid on a pseudo-terminal failed"; }
grep -Eq $'\r\e\\[K\\[dsgd-tune grid\\] trial [0-9]+ of 3 \\([0-9]+ left\\) \\| best (none reached yet|.*: [0-9.e-]+ s) \\| [0-9]+ s elapsed \\| [0-9.e-]+ s of evaluation used' grid_tty.out ||
  { cat -v grid_tty.out | head -20; fail "grid: no progress line (trial, best, elapsed, evaluation used) on a terminal"; }
echo "ok: progress line on a terminal only"
