# A diverged run is a failure, never a fast run (docs/metrics.md "Divergence"):
#  - --lr 1e6 makes every parameter non-finite: the run stops at the evaluation that sees it,
#    exits 3, is stored as 'diverged' with the step, and reaches no target (the loss of a NaN
#    model is NaN, never 0);
#  - the same on 2 MPI ranks and on the sim backend;
#  - `compare` gates a candidate that diverged against a baseline that did not (exit 1);
#  - a sane run of the same configuration still completes (exit 0).
source "$(dirname "$0")/common.bash"

common=(--dataset "$SMALL" --steps 200 --batch 32 --target loss=0.35 --seed 3 --db t.db --eval-every 20)

# diverges RC_FILE OUT: checks one diverged run's exit code, message and stored row.
check_diverged() {
  local rc="$1" out="$2" id
  [ "$rc" -eq 3 ] || { cat "$out" err.txt; fail "a diverged run exited $rc, not 3"; }
  grep -q "diverged" err.txt || { cat err.txt; fail "no divergence message on stderr"; }
  id=$(last_run_id "$out")
  [[ $(sql t.db "SELECT status FROM runs WHERE id=$id") == diverged ]] || fail "run $id not stored as diverged"
  sql t.db "SELECT error FROM runs WHERE id=$id" | grep -Eq "non-finite .* step [0-9]+" ||
    fail "run $id: no step in the stored divergence message: $(sql t.db "SELECT error FROM runs WHERE id=$id")"
  [[ -z $(sql t.db "SELECT time_to_target_s FROM summaries WHERE run_id=$id") ]] ||
    fail "run $id: a diverged run reached the target"
  [[ $(sql t.db "SELECT count(*) FROM evals WHERE run_id=$id AND test_loss IS NOT NULL AND step > 0
                 AND step >= (SELECT max(step) FROM evals WHERE run_id=$id)") == 0 ]] ||
    fail "run $id: the last evaluation of a diverged run has a finite test loss"
  # Stopped at the first evaluation after the divergence, well before step 200.
  [[ $(sql t.db "SELECT max(step) FROM evals WHERE run_id=$id") -lt 200 ]] || fail "run $id did not stop early"
  echo "ok: run $id diverged: $(sql t.db "SELECT error FROM runs WHERE id=$id")"
}

rc=0
"$BIN" run "${common[@]}" --lr 1e6 > one.out 2> err.txt || rc=$?
check_diverged "$rc" one.out

rc=0
"$BIN" run --workers 2 --algo ssgd "${common[@]}" --lr 1e6 --tag cand > two.out 2> err.txt || rc=$?
check_diverged "$rc" two.out

# The sim backend (its workers run the same trainer), profiled from a sane 1-worker run.
"$BIN" run "${common[@]}" --lr 0.05 > prof.out 2> err.txt || { cat prof.out err.txt; fail "sane run failed"; }
[[ $(sql t.db "SELECT status FROM runs WHERE id=$(last_run_id prof.out)") == completed ]] || fail "sane run not completed"
rc=0
"$BIN" run --backend sim --profile-from "$(last_run_id prof.out)" --workers 4 --algo localsgd --period 4 \
  "${common[@]}" --lr 1e6 > sim.out 2> err.txt || rc=$?
check_diverged "$rc" sim.out

# compare: 2 sane ranks as the baseline, the diverged 2-rank run as the candidate.
"$BIN" run --workers 2 --algo ssgd "${common[@]}" --lr 1e6 --tag cand > /dev/null 2>&1 || true
"$BIN" run --workers 2 --algo ssgd "${common[@]}" --lr 0.05 --tag base > /dev/null 2>&1 || fail "baseline run failed"
"$BIN" run --workers 2 --algo ssgd "${common[@]}" --lr 0.05 --tag base > /dev/null 2>&1 || fail "baseline run failed"
rc=0
"$BIN" compare --db t.db base cand > cmp.out 2>&1 || rc=$?
[ "$rc" -eq 1 ] || { cat cmp.out; fail "compare of a diverged candidate exited $rc, not 1"; }
grep -q "diverged_runs" cmp.out || { cat cmp.out; fail "compare does not name the divergence"; }
echo "ok: compare gates the diverged candidate"
