# The simulated cluster's sharded collectives, point-to-point exchanges and one-sided windows
# with the unchanged algorithms (docs/sim.md):
#  - dpsgd on 2 simulated workers ends with bit-identical parameters to 2 MPI ranks (same
#    seed), blocking (--dpsgd-delay 0) and overlapped (--dpsgd-delay 1);
#  - zero (reduce-scatter + all-gather) is bit-identical to ssgd in the simulator, on 2 and
#    on 4 workers (both sum in rank order), and to zero on 2 MPI ranks;
#  - AD-PSGD on 64 simulated workers completes without deadlock, every active worker
#    averages at every step, and two runs with the same seed store identical metrics;
#  - dpsgd on 8 simulated workers on a ring converges: accuracy within 2 points of ssgd.
source "$(dirname "$0")/common.bash"

common=(--dataset "$SMALL" --steps 40 --batch 32 --lr 0.05 --seed 11 --db t.db --eval-every 20)

"$BIN" run --workers 1 --algo ssgd "${common[@]}" > prof.out || fail "profile run failed"
PROF=$(last_run_id prof.out)
sim=(--backend sim --profile-from "$PROF" --compute-jitter off --bandwidth 1Gbps --latency 50us)

for delay in 0 1; do
  "$BIN" run --workers 2 --algo dpsgd --dpsgd-delay $delay --topology ring "${common[@]}" \
    --save-params "mpi_dpsgd$delay.bin" > /dev/null || fail "mpi dpsgd (delay $delay) failed"
  timeout 300 "$BIN" run --workers 2 --algo dpsgd --dpsgd-delay $delay --topology ring "${common[@]}" "${sim[@]}" \
    --save-params "sim_dpsgd$delay.bin" > "sim_dpsgd$delay.out" || fail "sim dpsgd (delay $delay) failed"
  cmp "mpi_dpsgd$delay.bin" "sim_dpsgd$delay.bin" || fail "sim dpsgd delay $delay (2 workers) differs from mpi (2 ranks)"
done
# The workers arrive together (same profile, no straggler): each blocking exchange on the
# 1 Gbit/s, 50 us link takes exactly one message, α + S/B, B the link's TCP goodput
# (--link-efficiency auto: 1.25e8 bytes/s × 1448/1538 at MTU 1500).
D=$(last_run_id sim_dpsgd0.out)
params=$(( $(stat -c %s sim_dpsgd0.bin) / 4 ))
bad=$(sql t.db "SELECT count(*) FROM steps WHERE run_id=$D AND
  abs(comm_s + wait_s - (50e-6 + $params * 4.0 / (1.25e8 * (1448.0 / 1538.0)))) > 1e-12")
[[ "$bad" == 0 ]] || fail "$bad dpsgd steps where the exchange did not take the modelled α + S/B"
# The profile run timed one pass over the model in its warm-up steps; each simulated dpsgd step
# charges three beyond its compute and exchange: the copy it sends, the mix's self term and its
# one neighbour's model.
PASS=$(sql t.db "SELECT model_pass_s FROM summaries WHERE run_id=$PROF")
awk -v p="$PASS" 'BEGIN { exit !(p > 0 && p < 0.01) }' || fail "the profile run's model pass '$PASS' is not a positive time"
bad=$(sql t.db "SELECT count(*) FROM steps WHERE run_id=$D AND
  abs(step_s - data_s - fwd_s - bwd_s - opt_s - comm_s - wait_s - 3 * $PASS) > 1e-12")
[[ "$bad" == 0 ]] || fail "$bad simulated dpsgd steps do not charge the copy and the mix as 3 model passes"
# Without warm-up steps nothing times the pass: the simulator says it takes the passes as free.
"$BIN" run --workers 1 --algo ssgd "${common[@]}" --warmup 0 > prof0.out || fail "profile run without warm-up failed"
[[ "$(sql t.db "SELECT model_pass_s IS NULL FROM summaries WHERE run_id=$(last_run_id prof0.out)")" == 1 ]] ||
  fail "a run without warm-up stored a model pass"
"$BIN" run --workers 2 --algo dpsgd --topology ring "${common[@]}" --backend sim --profile-from "$(last_run_id prof0.out)" \
  --compute-jitter off > sim_nopass.out 2>&1 || fail "sim dpsgd from a profile without a model pass failed"
grep -q "no measured model pass: dpsgd's passes over the model outside compute (the copy it sends, the mix) are taken as free" sim_nopass.out || { cat sim_nopass.out; fail "no warning about the missing model pass"; }

"$BIN" run --workers 2 --algo zero "${common[@]}" --save-params mpi_zero.bin > /dev/null || fail "mpi zero failed"
for n in 2 4; do
  "$BIN" run --workers $n --algo zero "${common[@]}" "${sim[@]}" --save-params "sim_zero$n.bin" > /dev/null ||
    fail "sim zero ($n workers) failed"
  "$BIN" run --workers $n --algo ssgd "${common[@]}" "${sim[@]}" --save-params "sim_ssgd$n.bin" > /dev/null ||
    fail "sim ssgd ($n workers) failed"
  cmp "sim_zero$n.bin" "sim_ssgd$n.bin" || fail "sim zero differs from sim ssgd on $n workers"
done
cmp mpi_zero.bin sim_zero2.bin || fail "sim zero (2 workers) differs from mpi zero (2 ranks)"

# AD-PSGD, 64 workers: no deadlock, deterministic.
tiny=(--dataset "synthetic:n=6400,d=20,classes=2,noise=0.02,test=400" --steps 6 --batch 8 --lr 0.05 --seed 3
  --db t.db --eval-every 3)
"$BIN" run --workers 1 --algo ssgd "${tiny[@]}" > adprof.out || fail "adpsgd profile run failed"
ad=(--workers 64 --algo adpsgd --topology ring "${tiny[@]}" --backend sim --profile-from "$(last_run_id adprof.out)" --compute-jitter off
  --bandwidth 1Gbps --latency 50us)
for k in 1 2; do
  timeout 300 "$BIN" run "${ad[@]}" > "ad$k.out" 2>&1 || { tail -5 "ad$k.out"; fail "adpsgd on 64 workers failed or hung"; }
done
grep -q "adpsgd rank 62 (active): 6 averagings" ad1.out || fail "an active worker did not average at every step"
grep -qE "adpsgd staleness rank 63 \(passive\): mean [0-9.]+" ad1.out || fail "no staleness reported"
A1=$(last_run_id ad1.out); A2=$(last_run_id ad2.out)
metrics() {
  sql t.db "SELECT rank, step, start_s, step_s, comm_s, wait_s, train_loss FROM steps WHERE run_id=$1 ORDER BY rank, step;
            SELECT step, time_s, train_loss, test_loss, test_acc FROM evals WHERE run_id=$1 ORDER BY step;"
}
[[ "$(metrics "$A1")" == "$(metrics "$A2")" ]] || fail "adpsgd: the same seed gave different stored metrics"
[[ "$(grep staleness ad1.out)" == "$(grep staleness ad2.out)" ]] || fail "adpsgd: the staleness differs between runs"
[[ $(sql t.db "SELECT count(*) FROM steps WHERE run_id=$A1") == 384 ]] || fail "adpsgd: 64 x 6 step rows not stored"

# --timing-only models dpsgd (delay 0, per-pair link classes), diloco and blocking oldsgd (gossip every
# H steps) with the same times
# as the numerics, with a straggler.
tcommon=(--workers 8 "${common[@]}" "${sim[@]}" --straggler "lognormal:sigma=0.3")
for algo in "dpsgd --topology exp" "dpsgd --topology hier:2x4 --inter-bandwidth 100Mbps --inter-latency 1ms" \
  "diloco --period 4" "oldsgd --period 3 --gossip-overlap false --topology exp"; do
  # shellcheck disable=SC2086
  "$BIN" run --algo $algo "${tcommon[@]}" > num.out || fail "numerics $algo failed"
  # shellcheck disable=SC2086
  "$BIN" run --algo $algo "${tcommon[@]}" --timing-only true > tim.out || fail "timing-only $algo failed"
  N=$(last_run_id num.out); T=$(last_run_id tim.out)
  for col in step_s comm_s wait_s bytes_sent; do
    a=$(sql t.db "SELECT sum($col) FROM steps WHERE run_id=$N")
    b=$(sql t.db "SELECT sum($col) FROM steps WHERE run_id=$T")
    awk -v a="$a" -v b="$b" 'BEGIN{d=a-b; if(d<0)d=-d; exit !(d <= 1e-9*(a<0?-a:a) + 1e-12)}' ||
      fail "timing-only $algo: sum of $col $b differs from the numerics' $a"
  done
done

# dpsgd, 8 workers on a ring: converges to ssgd's accuracy within 2 points.
conv=(--workers 8 --dataset "$SMALL" --epochs 4 --batch 32 --lr 0.05 --seed 11 --db t.db "${sim[@]}")
"$BIN" run --algo ssgd "${conv[@]}" > /dev/null || fail "sim ssgd 8 workers failed"
acc_ssgd=$(sql t.db "SELECT final_test_acc FROM summaries ORDER BY run_id DESC LIMIT 1")
"$BIN" run --algo dpsgd --topology ring "${conv[@]}" > /dev/null || fail "sim dpsgd 8 workers failed"
acc_dpsgd=$(sql t.db "SELECT final_test_acc FROM summaries ORDER BY run_id DESC LIMIT 1")
echo "8 workers: ssgd accuracy $acc_ssgd, dpsgd (ring) $acc_dpsgd"
awk -v a="$acc_ssgd" -v b="$acc_dpsgd" 'BEGIN{d=a-b; if(d<0)d=-d; exit !(d <= 0.02 && a > 0.5)}' ||
  fail "dpsgd accuracy $acc_dpsgd is not within 2 points of ssgd's $acc_ssgd"

# --native-floor is a simulator flag.
set +e
"$BIN" run --workers 1 "${common[@]}" --native-floor true > nf.out 2>&1
rc=$?
set -e
[[ $rc == 2 ]] && grep -q "native-floor.*applies to --backend sim only" nf.out || { cat nf.out; fail "--native-floor accepted without sim"; }
echo PASS
