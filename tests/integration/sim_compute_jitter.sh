# The simulator's compute jitter (--compute-jitter): with a profile taken from a real run, each
# simulated worker's compute per step is drawn from that run's measured per-step distribution,
# so identical workers wait for each other as real ones do; the threaded and the timing-only
# simulator give the same times; `replay` gives each worker its measured rank's compute step by step;
# a parameter server's replay on an ideal network ends (its pollers wait for the puts);
# `off` keeps every step at the mean (no wait); the jitter is
# compute (bwd_s), not an injected delay; and the flag is refused where it does not apply.
source "$(dirname "$0")/common.bash"

"$BIN" run --dataset "$SMALL" --workers 2 --steps 120 --batch 16 --db t.db > prof.out || fail "profile run failed"
P=$(last_run_id prof.out)
sim=(--backend sim --profile-from "$P" --dataset "$SMALL" --workers 4 --steps 120 --batch 16 --db t.db)
"$BIN" run "${sim[@]}" > threaded.out || fail "threaded sim failed"
"$BIN" run "${sim[@]}" --timing-only true > timing.out || fail "timing-only sim failed"
"$BIN" run "${sim[@]}" --timing-only true --compute-jitter off > off.out || fail "--compute-jitter off failed"
T=$(last_run_id threaded.out)
O=$(last_run_id timing.out)
F=$(last_run_id off.out)
val() { sql t.db "SELECT printf('%.9g', $2) FROM summaries WHERE run_id = $1"; }
[ "$(val "$T" step_time_s)" = "$(val "$O" step_time_s)" ] ||
  fail "threaded $(val "$T" step_time_s) and timing-only $(val "$O" step_time_s) step times differ"
awk -v w="$(val "$O" wait_s)" 'BEGIN { exit !(w > 0) }' || fail "jittered workers should wait for each other"
[ "$(val "$F" wait_s)" = 0 ] || fail "--compute-jitter off: identical workers never wait, got $(val "$F" wait_s)"
[ "$(val "$O" injected_s)" = 0 ] || fail "the jitter is compute, not an injected delay"
# The jittered mean compute is the profile run's (its distribution, mean included), within its tail's noise.
awk -v a="$(val "$O" 'fwd_s + bwd_s')" -v b="$(val "$P" 'fwd_s + bwd_s')" 'BEGIN { exit !(a > 0.5 * b && a < 2 * b) }' ||
  fail "jittered compute $(val "$O" 'fwd_s + bwd_s') far from the profile's $(val "$P" 'fwd_s + bwd_s')"
"$BIN" show "$O" --db t.db > show.txt || fail "show failed"
grep -q 'compute jitter from run [0-9]*.s [0-9]* timed steps' show.txt || { cat show.txt; fail "show does not say where the jitter came from"; }

# replay: simulated worker r's step s computes what the profile run's rank r computed at its
# step s (the same figure, up to rounding), each rank's own speed included.
"$BIN" run --backend sim --profile-from "$P" --dataset "$SMALL" --workers 2 --steps 120 --batch 16 --db t.db \
  --compute-jitter replay > replay.out || fail "--compute-jitter replay failed"
R=$(last_run_id replay.out)
# replayed_worst SIM MEASURED ROWS: the largest relative difference of (rank, step) compute
# between the runs over the measured rows with compute; fails unless there are ROWS of them.
replayed_worst() {
  local worst
  worst=$(sql t.db "SELECT max(abs(s.fwd_s + s.bwd_s - m.fwd_s - m.bwd_s) / (m.fwd_s + m.bwd_s)), count(*) FROM steps s
    JOIN steps m ON m.run_id = $2 AND m.rank = s.rank AND m.step = s.step WHERE s.run_id = $1 AND s.timed = 1
    AND m.fwd_s + m.bwd_s > 0")
  awk -v w="${worst%%|*}" -v n="${worst##*|}" -v rows="$3" 'BEGIN { exit !(n >= rows && w < 1e-9) }' ||
    fail "replay: simulated steps' compute differ from the measured ranks' by up to ${worst%%|*} (relative; rows: ${worst##*|})"
}
replayed_worst "$R" "$P" 200
# A parameter server on dedicated ranks, replayed on an ideal network (no --bandwidth): a
# window read costs nothing there, so a worker polling for the server's version must wait for
# the server's put, not read again at the same virtual time for ever (it used to hang).
"$BIN" run --dataset "$SMALL" --algo ps --ps-placement dedicated --workers 3 --steps 60 --batch 16 --db t.db \
  > ps.out || fail "ps dedicated run failed"
PS=$(last_run_id ps.out)
timeout 120 "$BIN" run --backend sim --profile-from "$PS" --dataset "$SMALL" --algo ps --ps-placement dedicated \
  --workers 3 --steps 60 --batch 16 --db t.db --compute-jitter replay > ps_replay.out ||
  fail "ps dedicated replay on an ideal network failed or hung (exit $?)"
replayed_worst "$(last_run_id ps_replay.out)" "$PS" 100
"$BIN" show "$R" --db t.db > show_replay.txt || fail "show failed"
grep -q "compute jitter run [0-9]*.s [0-9]* timed steps replayed per rank and step (.*rank 0 median .*rank 1 median" \
  show_replay.txt || { cat show_replay.txt; fail "show does not say the compute is a replay"; }
expect_error "--compute-jitter: replay replays a measured run's compute: it needs --profile-from RUN" \
  "$BIN" run --backend sim --dataset "$SMALL" --workers 2 --steps 5 --compute-jitter replay --db t.db

expect_error "--compute-jitter: 'sometimes' is not profile, replay or off" "$BIN" run "${sim[@]}" --compute-jitter sometimes
expect_error "--compute-jitter: applies to --backend sim" "$BIN" run --dataset "$SMALL" --steps 5 --compute-jitter off \
  --db t.db
echo PASS
