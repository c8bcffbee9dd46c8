# The simulated cluster (--backend sim, docs/sim.md):
#  - 2 simulated workers reach bit-identical final parameters to 2 MPI ranks (same seed),
#    for ssgd and localsgd;
#  - the same seed twice gives identical stored metrics, another seed differs;
#  - the run is stored like a real one (backend sim) and its trace is on the virtual clock;
#  - a fixed straggler's delay is exactly the other worker's wait;
#  - --timing-only predicts the same step time as the numerics, stores no accuracy;
#  - no profile of the batch on this host: measured, stored and said (not refused);
#  - each model shape has its own profile (ResNet-8 vs ResNet-20, also through calibrate --model);
#  - bad input: --workers 0, a target with --timing-only, a profile of another workload,
#    a memory estimate above the machine's memory.
source "$(dirname "$0")/common.bash"

common=(--dataset "$SMALL" --steps 60 --batch 32 --lr 0.05 --momentum 0 --seed 11 --db t.db --eval-every 20)

# A measured 1-worker run is the compute profile of the simulations below.
"$BIN" run --workers 1 --algo ssgd "${common[@]}" > prof.out || fail "profile run failed"
PROF=$(last_run_id prof.out)
sim=(--backend sim --profile-from "$PROF" --compute-jitter off)

for algo in "ssgd" "localsgd --period 4"; do
  name=${algo%% *}
  # shellcheck disable=SC2086
  "$BIN" run --workers 2 --algo $algo "${common[@]}" --save-params "mpi_$name.bin" > /dev/null ||
    fail "mpi $name failed"
  # shellcheck disable=SC2086
  "$BIN" run --workers 2 --algo $algo "${common[@]}" "${sim[@]}" --save-params "sim_$name.bin" > "sim_$name.out" ||
    fail "sim $name failed"
  cmp "mpi_$name.bin" "sim_$name.bin" || fail "sim $name (2 workers) differs from mpi (2 ranks)"
done
SIM=$(last_run_id sim_ssgd.out)
[[ $(sql t.db "SELECT backend FROM runs WHERE id=$SIM") == sim ]] || fail "backend not stored as sim"
[[ $(sql t.db "SELECT count(*) FROM steps WHERE run_id=$SIM") == 120 ]] || fail "sim run did not store 2x60 step rows"
[[ $(sql t.db "SELECT count(*) FROM evals WHERE run_id=$SIM") == 4 ]] || fail "sim run did not store its evaluations"
sql t.db "SELECT config_json FROM runs WHERE id=$SIM" | grep -q '"clock":"virtual"' || fail "no backend details stored"
grep -q "virtual clock; profile run $PROF" sim_ssgd.out || fail "sim run does not say where its profile is from"

# Determinism: same seed → identical stored metrics; another seed differs.
"$BIN" run --workers 3 --algo localsgd --period 3 "${common[@]}" "${sim[@]}" --straggler "lognormal:sigma=0.4" \
  > d1.out || fail "determinism run 1 failed"
"$BIN" run --workers 3 --algo localsgd --period 3 "${common[@]}" "${sim[@]}" --straggler "lognormal:sigma=0.4" \
  > d2.out || fail "determinism run 2 failed"
"$BIN" run --workers 3 --algo localsgd --period 3 "${common[@]}" "${sim[@]}" --straggler "lognormal:sigma=0.4" \
  --seed 12 > d3.out || fail "determinism run 3 failed"
D1=$(last_run_id d1.out); D2=$(last_run_id d2.out); D3=$(last_run_id d3.out)
metrics() {
  sql t.db "SELECT rank, step, start_s, step_s, fwd_s, bwd_s, opt_s, comm_s, wait_s, injected_s, train_loss
            FROM steps WHERE run_id=$1 ORDER BY rank, step;
            SELECT step, time_s, train_loss, test_loss, test_acc FROM evals WHERE run_id=$1 ORDER BY step;"
}
[[ "$(metrics "$D1")" == "$(metrics "$D2")" ]] || fail "same seed gave different stored metrics"
[[ "$(metrics "$D1")" != "$(metrics "$D3")" ]] || fail "different seeds gave identical metrics"
# The predicted step's standard error (batch means over the timed steps): stored, above 0 with
# a lognormal straggler, below the step itself, and printed under the per-step block.
se=$(sql t.db "SELECT printf('%.4f', 1000 * step_time_se_s) FROM summaries WHERE run_id=$D1")
awk -v se="$se" -v s="$(sql t.db "SELECT 1000 * step_time_s FROM summaries WHERE run_id=$D1")" \
  'BEGIN{exit !(se > 0 && se < s)}' || fail "step_time_se_s '$se' ms not in (0, step)"
grep -Eq "^  step's error +\+-$se ms \(standard error of the mean step, by batch means\)$" d1.out ||
  { cat d1.out; fail "the run did not print its step's standard error ($se ms)"; }

# A fixed straggler: worker 1 is 20 ms late at every step; worker 0 waits exactly that (ssgd).
"$BIN" run --workers 2 --algo ssgd "${common[@]}" "${sim[@]}" --straggler "fixed:rank=1,delay=20ms" \
  --bandwidth 1Gbps --latency 50us > s.out || fail "straggler run failed"
S=$(last_run_id s.out)
bad=$(sql t.db "SELECT count(*) FROM steps WHERE run_id=$S AND rank=0 AND abs(wait_s - 0.02) > 1e-9")
[[ "$bad" == 0 ]] || fail "$bad steps where worker 0's wait is not the straggler's 20 ms"
bad=$(sql t.db "SELECT count(*) FROM steps WHERE run_id=$S AND rank=1 AND abs(wait_s) > 1e-9")
[[ "$bad" == 0 ]] || fail "the straggler itself waited"
# comm = the α-β model of a 1 Gbit/s, 50 us link for this model's all-reduce, on every step.
spread=$(sql t.db "SELECT max(comm_s) - min(comm_s) FROM steps WHERE run_id=$S")
awk -v s="$spread" 'BEGIN{exit !(s < 1e-12)}' || fail "modelled comm time varies between steps ($spread)"
"$BIN" trace "$S" --db t.db -o trace.json > /dev/null || fail "trace of a sim run failed"
[[ -s trace.json ]] || fail "empty trace"

# Timing-only: same step time as the numerics, no convergence fields.
"$BIN" run --workers 2 --algo ssgd "${common[@]}" "${sim[@]}" --straggler "fixed:rank=1,delay=20ms" \
  --bandwidth 1Gbps --latency 50us --timing-only true > t.out || fail "timing-only run failed"
T=$(last_run_id t.out)
a=$(sql t.db "SELECT step_time_s FROM summaries WHERE run_id=$S")
b=$(sql t.db "SELECT step_time_s FROM summaries WHERE run_id=$T")
awk -v a="$a" -v b="$b" 'BEGIN{d=a-b; if(d<0)d=-d; exit !(d <= 1e-9*a)}' ||
  fail "timing-only step time $b differs from the numerics' $a"
# The same with buckets whose first closes early (PyTorch DDP's 1 MiB first bucket): the SVM's
# last layer alone, launched first, then the rest; timing-only = the numerics again.
for mode in false true; do
  "$BIN" run --workers 2 --algo ssgd --overlap true --bucket-mb 1 --first-bucket-mb 0.000001 "${common[@]}" \
    "${sim[@]}" --straggler "fixed:rank=1,delay=2ms" --bandwidth 1Gbps --latency 50us --timing-only $mode \
    > fb_$mode.out || { cat fb_$mode.out; fail "--first-bucket-mb run (timing-only $mode) failed"; }
done
a=$(sql t.db "SELECT step_time_s FROM summaries WHERE run_id=$(last_run_id fb_false.out)")
b=$(sql t.db "SELECT step_time_s FROM summaries WHERE run_id=$(last_run_id fb_true.out)")
awk -v a="$a" -v b="$b" 'BEGIN{d=a-b; if(d<0)d=-d; exit !(d <= 1e-9*a)}' ||
  fail "--first-bucket-mb: timing-only step time $b differs from the numerics' $a"
[[ $(sql t.db "SELECT count(*) FROM evals WHERE run_id=$T") == 0 ]] || fail "timing-only stored evaluations"
[[ $(sql t.db "SELECT count(*) FROM steps WHERE run_id=$T AND train_loss IS NOT NULL") == 0 ]] ||
  fail "timing-only invented training losses"

# 64 workers, non-blocking per-layer all-reduces (ssgd --overlap): completes, every worker's
# rows stored, replicas identical so the stored accuracy is the model's.
"$BIN" run --backend sim --workers 64 --algo ssgd --overlap true "${common[@]}" --profile-from "$PROF" --compute-jitter off --steps 20 \
  --bandwidth 10Gbps --latency 20us > big.out || fail "64-worker simulation failed"
BIG=$(last_run_id big.out)
[[ $(sql t.db "SELECT count(*) FROM steps WHERE run_id=$BIG") == 1280 ]] || fail "64 x 20 step rows not stored"
[[ $(sql t.db "SELECT count(*) FROM steps WHERE run_id=$BIG AND overlap_s > 0") -gt 0 ]] ||
  fail "no overlap recorded for the non-blocking all-reduces"

# Without --profile-from: this host's calibration profile (per-layer fwd/bwd).
"$BIN" calibrate --quick --workers 1 --workload svm --dataset "$SMALL" --batches 32 --db cal.db > cal.out ||
  fail "calibrate failed"
"$BIN" run --backend sim --workers 4 --algo localsgd "${common[@]}" --compute-jitter off --db cal.db > c.out || fail "calibrated sim failed"
grep -q "profile calibration 1 (per-layer" c.out || fail "the calibration profile was not used"
C=$(last_run_id c.out)
fwd=$(sql cal.db "SELECT sum(fwd_s) FROM profiles WHERE batch=32")
got=$(sql cal.db "SELECT avg(fwd_s) FROM steps WHERE run_id=$C")
awk -v a="$fwd" -v b="$got" 'BEGIN{d=a-b; if(d<0)d=-d; exit !(d <= 1e-12 + 1e-9*a)}' ||
  fail "simulated forward $got is not the calibrated $fwd"

# Bad input: exit code 2 and a message naming the problem.
expect_error "--workers: must be in 1..100000 \(got 0\)" "$BIN" run --backend sim --workers 0 "${common[@]}"
expect_error "--workers: must be in 1..4096 for workers that compute \(got 5000\)" "$BIN" run --backend sim \
  --workers 5000 "${common[@]}"
expect_error "topology 'complete' at 5000 workers: it lists every pair" "$BIN" run --backend sim --workers 5000 \
  --timing-only true --algo dpsgd --topology complete "${common[@]}"
# 100,000 timing-only workers: alike (no stragglers), one worker is simulated for all.
"$BIN" run --backend sim --workers 100000 --timing-only true --steps 20 --batch 32 --dataset "$SMALL" \
  --profile-from "$PROF" --compute-jitter off --db t.db > big.out || { cat big.out; fail "a 100,000-worker timing-only run failed"; }
[ "$(sql t.db "SELECT workers FROM runs ORDER BY id DESC LIMIT 1")" = 100000 ] || fail "100,000 workers not stored"
expect_error "cannot be reached in a --timing-only run" "$BIN" run --backend sim --workers 4 --timing-only true --target acc=0.5 \
  "${common[@]}"
expect_error "a profile of another workload" "$BIN" run --workers 2 "${common[@]}" --backend sim --profile-from "$PROF" --compute-jitter off \
  --dataset "synthetic:n=2000,d=50,classes=3,test=100"
# No profile of this batch on this host: the run measures it, says so, stores it as a
# profile-only calibration and uses it; the next run finds it. Bad input measures nothing.
expect_error "models ssgd, localsgd .* only \(got adpsgd\)" "$BIN" run --backend sim --workers 2 --timing-only true \
  --algo adpsgd "${common[@]}" --db empty.db
[ ! -e empty.db ] || fail "a refused run created its database (and could have stored a profile)"
"$BIN" run --workers 2 "${common[@]}" --backend sim --db empty.db > m1.out 2>&1 || { cat m1.out; fail "sim without a profile failed"; }
grep -Eq "^no compute profile of svm on .* with batch 32 for this host: measuring it \(20 iterations\) ... [0-9.e-]+ s, stored as calibration 1$" m1.out ||
  { cat m1.out; fail "the missing profile was not measured and reported"; }
grep -q "profile calibration 1 (per-layer" m1.out || { cat m1.out; fail "the measured profile was not used"; }
[[ $(sql empty.db "SELECT count(DISTINCT batch) || ' ' || min(batch) FROM profiles") == "1 32" ]] ||
  fail "the stored profile is not the run's batch"
"$BIN" run --workers 2 "${common[@]}" --backend sim --db empty.db > m2.out 2>&1 || fail "second sim run failed"
grep -q "no compute profile" m2.out && fail "the profile was measured again"
[[ $(sql empty.db "SELECT count(*) FROM calibrations") == 1 ]] || fail "a second calibration was stored"
# A profile is measured with the run's threads per worker (not OpenBLAS's default of every
# core) and records them; a run of other threads measures its own instead of taking it.
[[ $(sql empty.db "SELECT json_extract(config_json, '$.threads') FROM calibrations WHERE id=1") == 1 ]] ||
  fail "the measured profile does not record its threads per worker"
"$BIN" run --workers 2 "${common[@]}" --backend sim --threads 2 --db empty.db > m3.out 2>&1 || { cat m3.out; fail "sim --threads 2 failed"; }
grep -q "^no compute profile of svm on .* with batch 32 for this host: measuring it" m3.out ||
  { cat m3.out; fail "the profile of 1 thread per worker was taken for --threads 2"; }
[[ $(sql empty.db "SELECT json_extract(config_json, '$.threads') FROM calibrations WHERE id=2") == 2 ]] ||
  fail "the --threads 2 profile does not record 2 threads"
expect_error "more than the" "$BIN" run --backend sim --workers 1024 --profile-from "$PROF" --compute-jitter off --db t.db --steps 5 \
  --dataset "synthetic:n=5000,d=2000000,density=0.000005,classes=10,test=100"
# dreamddp's schedule is searched on the link its layer costs name: modelled with --bandwidth only.
expect_error "models ssgd, localsgd \(--period-schedule constant or qsr\), diloco, cocod, dasgd, overlap-local, dpsgd \(--dpsgd-delay 0, static topology\), zero \(32 bits\), dreamddp \(with --bandwidth\), .*without --compress only \(got dreamddp with these settings: only dreamddp \(with --bandwidth\)\)" \
  "$BIN" run --backend sim --workers 2 --timing-only true --algo dreamddp "${common[@]}" --profile-from "$PROF" --compute-jitter off
expect_error "only \(got dreamddp with --compress\)" "$BIN" run --backend sim --workers 2 --timing-only true \
  --algo dreamddp "${common[@]}" --profile-from "$PROF" --compute-jitter off --bandwidth 1Gbps --compress topk:0.1
# Each model shape has its own profile (workload_profile_key): ResNet-8 is measured as
# resnet:resnet8 (it used to be measured as ResNet-20 and then refused), a ResNet-20 run does not
# take it, calibrate --model stores the same key, and --profile-from a ResNet-8 run is refused
# for ResNet-20.
IMAGES="synthetic:shape=3x8x8,classes=4,n=256,test=64,noise=0.5"
shape=(--workload resnet --dataset "$IMAGES" --batch 8 --steps 3 --eval-every 3 --db shapes.db)
"$BIN" run --workers 2 --backend sim --model resnet8 "${shape[@]}" > r8.out 2>&1 || { cat r8.out; fail "sim ResNet-8 without a profile failed"; }
grep -q "^no compute profile of resnet:resnet8 on " r8.out || { cat r8.out; fail "ResNet-8's profile was not measured under its shape"; }
[[ $(sql shapes.db "SELECT count(*) || ' ' || min(workload) FROM profiles") == "10 resnet:resnet8" ]] ||
  fail "ResNet-8's profile is not its 10 layers under resnet:resnet8"
"$BIN" run --workers 2 --backend sim "${shape[@]}" > r20.out 2>&1 || { cat r20.out; fail "sim ResNet-20 failed"; }
grep -q "^no compute profile of resnet on " r20.out || { cat r20.out; fail "ResNet-20 took ResNet-8's profile"; }
"$BIN" calibrate --workers 1 --quick --workload resnet --model resnet8 --dataset "$IMAGES" --batches 4 --db shapes.db > cal8.out 2>&1 ||
  { cat cal8.out; fail "calibrate --model resnet8 failed"; }
[[ $(sql shapes.db "SELECT count(*) FROM profiles WHERE batch=4 AND workload='resnet:resnet8'") == 10 ]] ||
  fail "calibrate --model resnet8 did not store ResNet-8's 10 layers under its shape"
"$BIN" run --workers 1 --model resnet8 "${shape[@]}" > r8mpi.out 2>&1 || { cat r8mpi.out; fail "mpi ResNet-8 failed"; }
expect_error "run [0-9]+ is a profile of workload 'resnet:resnet8' .* this run trains 'resnet' on" "$BIN" run --workers 2 \
  --backend sim "${shape[@]}" --profile-from "$(last_run_id r8mpi.out)"
echo PASS
