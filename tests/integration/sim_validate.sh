# dsgd-bench validate: a profile run (2 MPI ranks computing side by side, no communication),
# 2 MPI ranks and 2 simulated workers of one configuration, and the prediction again from the
# measured run's own compute; the validation and its ten metrics are stored and listed; the simulated
# run's modelled comm equals the α-β model; for a variant on one-sided windows, the prediction
# at two more seeds (its race's spread). (Figures are not asserted against the 10 % goal
# here: a shared 2-core CI machine makes the measured side noisy; see docs/sim.md.)
source "$(dirname "$0")/common.bash"

cat > v.json <<JSON
{"dataset": "$SMALL", "algo": "localsgd", "period": 2, "steps": 40, "batch": 32, "warmup": 4,
 "bandwidth": "100Mbps", "latency": "200us", "straggler": "fixed:rank=1,delay=3ms", "db": "v.db"}
JSON
"$BIN" validate --config v.json > val.out || { cat val.out; fail "validate failed"; }
last=$(tail -n 1 val.out)
[[ "$last" =~ ^validation_id=([0-9]+)$ ]] || fail "last line is not validation_id=<id>: $last"
V=${BASH_REMATCH[1]}
[[ $(sql v.db "SELECT count(*) FROM validation_metrics WHERE validation_id=$V") == 10 ]] || fail "metrics not stored"
# The step outside every phase: in the table, and each run's summary's step less its phases.
grep -qE "^  outside_phases_s +[0-9.]+ ms +[0-9.]+ ms" val.out || { cat val.out; fail "no outside_phases_s row"; }
outside_ok=$(sql v.db "SELECT count(*) FROM validation_metrics o JOIN validations v ON v.id = o.validation_id
  JOIN summaries m ON m.run_id = v.measured_run_id JOIN summaries p ON p.run_id = v.simulated_run_id
  WHERE o.validation_id=$V AND o.metric='outside_phases_s'
  AND abs(o.measured - max(0, m.step_time_s - m.compute_s - m.data_s - m.comm_s - m.wait_s - coalesce(m.injected_s, 0))) < 1e-12
  AND abs(o.predicted - max(0, p.step_time_s - p.compute_s - p.data_s - p.comm_s - p.wait_s - coalesce(p.injected_s, 0))) < 1e-12")
[[ "$outside_ok" == 1 ]] || fail "outside_phases_s is not each run's step less its phases"
# Each run's sampling noise: stored (both positive: the runs' steps vary), noted, not in the table.
se=$(sql v.db "SELECT measured > 0 AND predicted > 0 AND rel_error IS NULL FROM validation_metrics WHERE validation_id=$V AND metric='step_time_s.standard_error'")
[[ "$se" == 1 ]] || fail "no step_time_s.standard_error metric with both runs' standard errors (got '$se')"
# Noted when the step's error is within two combined standard errors, or above 10 % (beyond them).
expected=$(sql v.db "SELECT CASE WHEN s.rel_error <= 2 * sqrt(power(e.measured / s.measured, 2) + power(e.predicted / s.predicted, 2))
  THEN 'within' WHEN s.rel_error > 0.10 THEN 'beyond' ELSE 'none' END FROM validation_metrics s JOIN validation_metrics e
  ON e.validation_id = s.validation_id AND e.metric = 'step_time_s.standard_error' WHERE s.validation_id=$V AND s.metric='step_time_s'")
case $expected in
  within) grep -qE "note: the step's [0-9.]+ % error is within the two runs' own sampling noise" val.out ;;
  beyond) grep -qE "note: the runs' mean steps are ±[0-9.]+ % \(measured\) .* is beyond that noise" val.out ;;
  none) ! grep -qE "own sampling noise|beyond that noise" val.out ;;
  *) false ;;
esac || { cat val.out; fail "sampling-noise note: expected '$expected'"; }
grep -q "^  step_time_s.standard_error" val.out && fail "the standard error is printed in the table (it has its note)"
# The ranks' compute spread, measured and simulated: the slowest rank's mean compute over the fastest's.
spread=$(sql v.db "SELECT measured FROM validation_metrics WHERE validation_id=$V AND metric='compute_rank_spread'")
awk -v x="$spread" 'BEGIN{exit !(x >= 1)}' || fail "compute_rank_spread $spread is not a ratio >= 1"
grep -q "^  compute_rank_spread" val.out && fail "the rank spread is printed in the table (it has its note)"
# The same prediction from the measured run's own compute: stored as its own metric (the
# measured step against that prediction), printed as a note, made by a sim run profiled from
# the measured run.
own=$(sql v.db "SELECT printf('%.9f %.9f', measured, predicted) FROM validation_metrics WHERE validation_id=$V AND metric='step_time_s.own_compute'")
[[ -n "$own" ]] || fail "no step_time_s.own_compute metric stored"
[[ "${own%% *}" == "$(sql v.db "SELECT printf('%.9f', measured) FROM validation_metrics WHERE validation_id=$V AND metric='step_time_s'")" ]] ||
  fail "the own-compute metric's measured step is not the measured run's"
grep -q "note: from the measured run's own compute (each worker its rank's, step by step: .*), the predicted step is" val.out ||
  { cat val.out; fail "no own-compute note"; }
grep -q "^  step_time_s.own_compute" val.out && fail "the own-compute metric is printed in the table (it has its note)"
R=$(sql v.db "SELECT max(id) FROM runs WHERE tag='validate:own-compute'")
[[ -n "$R" && $(sql v.db "SELECT backend FROM runs WHERE id=$R") == sim ]] || fail "no simulated run tagged validate:own-compute"
# ... whose workers compute as the measured ranks did, each its own.
sql v.db "SELECT config_json FROM runs WHERE id=$R" | grep -q '"compute-jitter": *"replay"' ||
  fail "the own-compute run does not replay each rank's compute (--compute-jitter replay)"
[[ $(sql v.db "SELECT printf('%.9f', step_time_s) FROM summaries WHERE run_id=$R") == "${own##* }" ]] ||
  fail "the own-compute prediction is not that run's step"
for m in step_time_s compute_s comm_s wait_s injected_s throughput_samples_per_s; do
  grep -q "$m" val.out || fail "$m not printed"
done
M=$(sql v.db "SELECT measured_run_id FROM validations WHERE id=$V")
S=$(sql v.db "SELECT simulated_run_id FROM validations WHERE id=$V")
[[ $(sql v.db "SELECT backend FROM runs WHERE id=$M") == mpi ]] || fail "measured run is not mpi"
[[ $(sql v.db "SELECT backend FROM runs WHERE id=$S") == sim ]] || fail "simulated run is not sim"
# The profile shares the machine as the measured ranks do: as many ranks, no averaging
# (Local SGD with a period beyond the run), no emulated link or straggler.
P=$(sql v.db "SELECT profile_run_id FROM validations WHERE id=$V")
[[ $(sql v.db "SELECT backend || ' ' || workers || ' ' || algorithm FROM runs WHERE id=$P") == "mpi 2 localsgd" ]] ||
  fail "the profile run is not 2 MPI ranks without communication: $(sql v.db "SELECT backend, workers, algorithm FROM runs WHERE id=$P")"
[[ $(sql v.db "SELECT comm_s + injected_s FROM summaries WHERE run_id=$P") == 0 || \
   $(sql v.db "SELECT comm_s + injected_s FROM summaries WHERE run_id=$P") == 0.0 ]] ||
  fail "the profile run communicated or was delayed"
grep -q "2 ranks side by side, no communication" val.out || fail "the profile run is not described"
# The straggler's 3 ms shows up in both as injected delay, exactly in the simulation.
inj=$(sql v.db "SELECT injected_s FROM summaries WHERE run_id=$S")
awk -v x="$inj" 'BEGIN{exit !(x > 0.0015 - 1e-12 && x < 0.0015 + 1e-12)}' ||
  fail "simulated mean injected delay $inj is not 3 ms / 2 workers"
# A variant on one-sided windows: its prediction is a race for the windows' locks, so the
# simulated run is made at two more seeds; the lowest and highest predicted step are stored
# (seed_spread) and noted; the seed runs are tagged validate:seed. Other variants have none.
[[ $(sql v.db "SELECT count(*) FROM validation_metrics WHERE validation_id=$V AND metric='step_time_s.seed_spread'") == 0 ]] ||
  fail "a localsgd validation has a seed spread"
cat > a.json <<JSON
{"dataset": "$SMALL", "algo": "adpsgd", "steps": 40, "batch": 32, "warmup": 4, "db": "v.db"}
JSON
"$BIN" validate --config a.json > a.out || { cat a.out; fail "validate of adpsgd failed"; }
A=$(tail -n 1 a.out | cut -d= -f2)
[[ $(sql v.db "SELECT count(*) FROM validation_metrics WHERE validation_id=$A") == 12 ]] || fail "adpsgd: metrics not stored"
# On the host's own fabric (no --bandwidth) the fabric is timed again at the model's size right
# after the measured run (3,216 B: the SVM on 200 features and 4 classes), against the curve of
# the calibration the prediction read; on an emulated link (the first validation) it is not.
grep -q "fabric now (calibrate --workers 2 --quick at the model's 3216 B, beside the measured run)" a.out ||
  { cat a.out; fail "no fabric check beside the measured run"; }
[[ $(sql v.db "SELECT count(*) FROM validation_metrics WHERE validation_id=$A AND metric='fabric_allreduce_s'
  AND measured > 0 AND predicted > 0") == 1 ]] || fail "no fabric_allreduce_s metric"
[[ $(sql v.db "SELECT count(*) FROM validation_metrics WHERE validation_id=$V AND metric='fabric_allreduce_s'") == 0 ]] ||
  fail "a validation on an emulated link checks the host's fabric"
read -r lo hi <<<"$(sql v.db "SELECT measured, predicted FROM validation_metrics WHERE validation_id=$A AND metric='step_time_s.seed_spread' AND rel_error IS NULL" | tr '|' ' ')"
S=$(sql v.db "SELECT step_time_s FROM summaries WHERE run_id=(SELECT simulated_run_id FROM validations WHERE id=$A)")
seeds=$(sql v.db "SELECT group_concat(s.step_time_s, ' ') FROM runs r JOIN summaries s ON s.run_id = r.id WHERE r.tag='validate:seed' AND r.id > (SELECT simulated_run_id FROM validations WHERE id=$A)")
awk -v lo="$lo" -v hi="$hi" -v s="$S" -v seeds="$seeds" 'BEGIN { n = split(seeds " " s, x, " "); if (n != 3) exit 1;
  a = x[1]; b = x[1]; for (i = 2; i <= 3; i++) { if (x[i] < a) a = x[i]; if (x[i] > b) b = x[i] }
  exit !(a == lo && b == hi && lo > 0) }' ||
  fail "seed spread $lo..$hi is not the min and max of the predicted steps $S and the seed runs' $seeds"
grep -qE "note: the prediction moves by [0-9.]+ % between three seeds of the simulated run" a.out ||
  { cat a.out; fail "no seed-spread note"; }
grep -q "^  step_time_s.seed_spread" a.out && fail "the seed spread is printed in the table (it has its note)"
"$BIN" validate --list --db v.db > list.out || fail "validate --list failed"
grep -q "validation $V" list.out || fail "validation not listed"
# What the simulated run warned of its own prediction (stored with it) is a note of the validation.
sql v.db "UPDATE runs SET config_json = json_set(config_json, '$.\"backend-details\".\"profile-warnings\"',
  json_array('a test warning')) WHERE id=(SELECT simulated_run_id FROM validations WHERE id=$V)"
"$BIN" validate --list --db v.db > list2.out || fail "validate --list failed"
grep -q "note: the simulated run warned: a test warning" list2.out || { cat list2.out; fail "no note of the sim's warning"; }
# Bad input: a file that asks for the simulator itself.
echo '{"backend": "sim", "db": "v.db"}' > bad.json
set +e
"$BIN" validate --config bad.json > bad.out 2>&1
rc=$?
set -e
[[ $rc == 2 ]] || fail "expected exit code 2 for a sim config, got $rc"
grep -q "validate compares a real run" bad.out || fail "unclear message for a sim config"
# More ranks than cores would time-share them, which the simulator does not model: refused.
echo "{\"workers\": $(( $(nproc --all) + 1 )), \"db\": \"v.db\"}" > many.json
set +e
"$BIN" validate --config many.json > many.out 2>&1
rc=$?
set -e
[[ $rc == 2 ]] || { cat many.out; fail "expected exit code 2 for more ranks than cores, got $rc"; }
grep -q "its own device" many.out || { cat many.out; fail "unclear message for more ranks than cores"; }
echo PASS
