# `dsgd-bench calibrate --workers 2 --quick` self-launches through mpiexec, prints the
# per-op tables (the 8 operations of engine/calibration_ops.hpp), the fits and the profile with calibration_id=<id> last, and stores rows
# in calibrations / collectives / fits / profiles; bad sizes are refused before anything
# is created. Then `trace` of a short 2-rank run writes Chrome trace-event JSON that jq
# parses, with exactly one named track per rank, a --steps window, a bounded size, and
# refusals of an unknown run and a bad window.
source "$(dirname "$0")/common.bash"

# ---- calibrate ---------------------------------------------------------------------------------
"$BIN" calibrate --workers 2 --quick --db t.db > cal.txt 2> cal_err.txt || { cat cal.txt cal_err.txt; fail "calibrate failed"; }
cat cal.txt
last=$(tail -n 1 cal.txt)
[[ "$last" =~ ^calibration_id=([0-9]+)$ ]] || fail "last line of calibrate is not calibration_id=<id>: '$last'"
cid="${BASH_REMATCH[1]}"
for op in allreduce reduce_scatter allgather broadcast sendrecv onesided_put onesided_get allreduce_after_compute \
  sendrecv_after_compute onesided_put_after_compute; do
  grep -q "^# $op: " cal.txt || fail "no table for $op"
done
grep -q "harness vs bare MPI_Allreduce busbw" cal.txt || fail "no harness vs bare comparison"
[ "$(sql t.db "select workers from calibrations where id=$cid")" = 2 ] || fail "calibration workers not 2"
sql t.db "select mpi_version from calibrations where id=$cid" | grep -q MPICH || fail "MPI version not recorded"
[ "$(sql t.db "select count(distinct op) from collectives where calibration_id=$cid")" = 11 ] ||
  fail "expected 11 ops in collectives (8, and 3 timed after compute)"
# --quick: 4 B .. 1 MiB by x2 = 19 sizes (every octave: a protocol switch falls between two), and
# the profiled workload's model: the SVM on Fashion-MNIST, 7,850 floats = 31,400 B.
[ "$(sql t.db "select count(*) from collectives where calibration_id=$cid and op='allreduce'")" = 20 ] ||
  fail "expected 20 allreduce sizes"
[ "$(sql t.db "select count(*) from collectives where calibration_id=$cid and op='allreduce' and bytes=31400")" = 1 ] ||
  fail "the sweep does not measure the model's 31,400 B"
[ "$(sql t.db "select json_extract(config_json, '$.model_bytes') from calibrations where id=$cid")" = 31400 ] ||
  fail "the calibration does not record the model's size"
grep -q "^# sizes 4B .. 1MiB (x2, 20 sizes; the svm model's 31400 B among them)" cal.txt ||
  fail "the header does not name the model's size"
[ "$(sql t.db "select count(*) from collectives where calibration_id=$cid and (time_s <= 0 or busbw_gbps <= 0 or time_min_s > time_s or time_max_s < time_s)")" = 0 ] ||
  fail "collectives rows with impossible times"
# Each point's spread (interquartile range / median of its repetitions): present, and within
# what its minimum and maximum allow.
[ "$(sql t.db "select count(*) from collectives where calibration_id=$cid and (spread is null or spread < 0 or spread > (time_max_s - time_min_s) / time_s + 1e-9)")" = 0 ] ||
  fail "collectives rows without a spread, or with one their range does not allow"
# busbw = algbw x 2(n-1)/n = algbw on 2 ranks; algbw = bytes / time / 1e9
[ "$(sql t.db "select count(*) from collectives where calibration_id=$cid and op='allreduce' and abs(algbw_gbps - bytes / time_s / 1e9) > 1e-9 * algbw_gbps")" = 0 ] ||
  fail "algbw is not bytes / time"
[ "$(sql t.db "select count(*) from fits where calibration_id=$cid and alpha_s >= 0 and bandwidth_bytes_per_s > 0 and rel_error >= 0")" = 11 ] ||
  fail "expected 11 fits with alpha >= 0 and bandwidth > 0"
# svm has 2 layers (weights, bias); default batches 16,64,256
[ "$(sql t.db "select count(*) from profiles where calibration_id=$cid and workload='svm' and fwd_s > 0 and bwd_s > 0")" = 6 ] ||
  fail "expected 6 profile rows with positive times"
# one step of each optimizer on the model's parameters (schema v10)
[ "$(sql t.db "select group_concat(optimizer) from (select optimizer from optimizer_profiles where calibration_id=$cid and opt_s > 0 and params > 0 order by optimizer)")" = "adamw,model-pass,sgd,sgd+momentum" ] ||
  fail "expected an optimizer profile of adamw, sgd and sgd+momentum, and a model pass"
[ "$(sql t.db "select group_concat(distinct batch) from (select batch from profiles where calibration_id=$cid order by batch)")" = "16,64,256" ] ||
  fail "profiled batches are not 16,64,256"

# Bad sizes: exit 2, nothing created.
set +e
"$BIN" calibrate --workers 2 --min-size 3 --db bad.db > /dev/null 2> bad_err.txt
code=$?
set -e
[ "$code" = 2 ] || fail "--min-size 3 exited $code, expected 2"
grep -q "multiple of 4" bad_err.txt || fail "no message for --min-size 3: $(cat bad_err.txt)"
set +e
"$BIN" calibrate --workers 2 --max-size 1XB --db bad.db > /dev/null 2> bad_err.txt
code=$?
set -e
[ "$code" = 2 ] || fail "--max-size 1XB exited $code, expected 2"
[ ! -e bad.db ] || fail "a refused calibrate created its database"

# The simulator reads the curves timed after compute for a step that computes 1 ms or more
# (here the trace run's profile, scaled up), the back-to-back ones for a short step.
"$BIN" run --workers 1 --dataset "$SMALL" --steps 20 --batch 32 --db t.db > prof.txt 2>&1 || { cat prof.txt; fail "profile run failed"; }
prof=$(last_run_id prof.txt)
for scale in 1 100000; do
  "$BIN" run --backend sim --workers 2 --dataset "$SMALL" --steps 20 --batch 32 --profile-from "$prof" \
    --compute-scale $scale --compute-jitter off --db t.db > "sim$scale.txt" 2>&1 || { cat "sim$scale.txt"; fail "sim run failed"; }
done
grep -q "as timed after compute" sim100000.txt || { cat sim100000.txt; fail "a long step did not read the after-compute curves"; }
! grep -q "as timed after compute" sim1.txt || fail "a short step read the after-compute curves"

# A point the run's all-reduce reads (the 3,216-byte model sits between 2 and 4 KiB) whose
# repetitions spread 60 %: the run warns and names it; with every spread at 1 %, it does not.
sim_spread() {
  "$BIN" run --backend sim --workers 2 --dataset "$SMALL" --steps 20 --batch 32 --profile-from "$prof" \
    --compute-jitter off --db t.db > "$1" 2>&1 || { cat "$1"; fail "sim run failed"; }
}
sql t.db "update collectives set spread = 0.01 where calibration_id=$cid"
sim_spread quiet.txt
! grep -q "spread widely" quiet.txt || { cat quiet.txt; fail "a calibration whose spreads are 1 % warns"; }
sql t.db "update collectives set spread = 0.6 where calibration_id=$cid and op='allreduce' and bytes in (2048, 4096)"
sim_spread noisy.txt
grep -q "warning .*spread widely near the model's 3.216 KB (allreduce at 2.048 KB 60 %;.*run dsgd-bench calibrate again" \
  noisy.txt || { cat noisy.txt; fail "no warning of the calibration's spread"; }
# A second calibration of this host whose all-reduce takes twice as long: the run reads it, and
# says the fabric moved between the two (100 % apart); a single calibration (above) does not.
! grep -q "fabric moved between its calibrations" quiet.txt || fail "one calibration: a move between calibrations?"
cp t.db drift.db
sql drift.db "INSERT INTO calibrations (created_at, workers, host, cpu_model, mpi_version, git_commit, tool_version,
    config_json) SELECT created_at, workers, host, cpu_model, mpi_version, git_commit, tool_version, config_json
    FROM calibrations WHERE id=$cid;
  INSERT INTO collectives SELECT (SELECT max(id) FROM calibrations), op, bytes, iters, 2 * time_s, 2 * time_min_s,
    2 * time_max_s, algbw_gbps / 2, busbw_gbps / 2, 0.01 FROM collectives WHERE calibration_id=$cid;
  INSERT INTO fits SELECT (SELECT max(id) FROM calibrations), op, 2 * alpha_s, 2 * beta_s_per_byte,
    bandwidth_bytes_per_s / 2, rel_error FROM fits WHERE calibration_id=$cid;"
"$BIN" run --backend sim --workers 2 --dataset "$SMALL" --steps 20 --batch 32 --profile-from "$prof" \
  --compute-jitter off --db drift.db > drift.txt 2>&1 || { cat drift.txt; fail "sim run on two calibrations failed"; }
drift=$(sql drift.db "select max(id) from calibrations")
grep -q "warning .*this host's fabric moved between its calibrations: an all-reduce of the model's 3.216 KB took .* in calibration $drift, the one read, and .* in calibration $cid before it (100 % apart" \
  drift.txt || { cat drift.txt; fail "no warning of the fabric's move between calibrations"; }
grep -q "spread widely" drift.txt && { cat drift.txt; fail "the read calibration's spreads are 1 %: no spread warning"; }
# calibrate compares its all-reduce with the host's previous calibration on as many ranks (the
# doubled copy); the first calibration of t.db had none to compare with.
grep -q "against calibration" cal.txt && fail "the first calibration compares with one before it"
"$BIN" calibrate --workers 2 --quick --min-size 1024 --max-size 8192 --db drift.db > cal2.txt 2>&1 ||
  { cat cal2.txt; fail "a second calibrate failed"; }
grep -q "^# all-reduce against calibration $drift of this host (2 ranks, 4 sizes in common): median [0-9]* % apart" cal2.txt ||
  { cat cal2.txt; fail "calibrate does not compare its all-reduce with the previous calibration"; }

# The tuner's simulated trials read the same point: the session says so once, and its JSON has it.
TUNE="$(dirname "$BIN")/dsgd-tune"
"$TUNE" recommend --dataset "$SMALL" --workers 2 --algos ssgd,localsgd --period 1..4 --batch 32 --trials 4 \
  --target acc=0.8 --db t.db -o tuned.toml > tune.txt 2>&1 || { cat tune.txt; fail "recommend on the noisy calibration failed"; }
[ "$(grep -c "^  warning: the measured fabric's repetitions spread widely near the model's 3.216 KB (allreduce at 2.048 KB 60 %" tune.txt)" = 1 ] ||
  { cat tune.txt; fail "the tuning session does not warn once of the calibration's spread"; }
"$TUNE" show "$(sed -n 's/^session_id=//p' tune.txt)" --db t.db --format json > tune.json 2>/dev/null ||
  fail "dsgd-tune show --format json failed"
jq -e '.result.network_warnings | length == 1' tune.json > /dev/null || { cat tune.json; fail "the session's JSON lacks network_warnings"; }

# ---- trace -------------------------------------------------------------------------------------
"$BIN" run --workers 2 --dataset "$SMALL" --steps 20 --eval-every 10 --batch 32 --db t.db > run.txt 2>&1 ||
  { cat run.txt; fail "run failed"; }
id=$(last_run_id run.txt)
"$BIN" trace "$id" -o trace.json --db t.db > trace_out.txt || { cat trace_out.txt; fail "trace failed"; }
cat trace_out.txt
jq -e '.traceEvents | type == "array"' trace.json > /dev/null || fail "trace.json is not trace-event JSON"
jq -e '.displayTimeUnit == "ms"' trace.json > /dev/null || fail "displayTimeUnit is not ms"
[ "$(jq '[.traceEvents[] | select(.ph == "M" and .name == "thread_name") | .tid] | unique | length' trace.json)" = 2 ] ||
  fail "expected exactly 2 distinct tids with thread_name"
[ "$(jq '[.traceEvents[] | select(.ph == "M" and .name == "thread_name")] | length' trace.json)" = 2 ] ||
  fail "expected one thread_name per rank"
[ "$(jq '[.traceEvents[] | select(.name == "step")] | length' trace.json)" = 40 ] || fail "expected 40 step slices"
for phase in data fwd bwd wait comm opt; do
  [ "$(jq "[.traceEvents[] | select(.name == \"$phase\" and .ph == \"X\")] | length" trace.json)" = 40 ] ||
    fail "expected 40 $phase slices"
done
jq -e "[.traceEvents[] | select(.ph == \"X\") | .dur >= 0] | all" trace.json > /dev/null || fail "negative duration"
jq -e ".otherData.run_id == $id and .otherData.workers == 2 and .otherData.trace.sampled == false" trace.json \
  > /dev/null || fail "otherData lacks the run context"

# A window, and a bound that forces sampling.
"$BIN" trace "$id" -o window.json --db t.db --steps 5:10 > /dev/null
[ "$(jq '[.traceEvents[] | select(.name == "step") | .args.step] | unique' -c window.json)" = "[5,6,7,8,9]" ] ||
  fail "--steps 5:10 did not select steps 5..9"
"$BIN" trace "$id" -o small.json --db t.db --max-events 100 > /dev/null
[ "$(jq '.traceEvents | length' small.json)" -le 100 ] || fail "--max-events 100 not respected"
jq -e '.otherData.trace.sampled == true and .otherData.trace.sample_every > 1' small.json > /dev/null ||
  fail "sampling not stated in otherData"

# Refusals: exit 2 and no file.
set +e
"$BIN" trace 999 -o missing.json --db t.db > /dev/null 2> err.txt
code=$?
set -e
[ "$code" = 2 ] || fail "trace of an unknown run exited $code, expected 2"
grep -q "run 999 not found" err.txt || fail "no message for an unknown run: $(cat err.txt)"
[ ! -e missing.json ] || fail "a refused trace created its file"
set +e
"$BIN" trace "$id" -o bad.json --db t.db --steps 9:3 > /dev/null 2> err.txt
code=$?
set -e
[ "$code" = 2 ] || fail "--steps 9:3 exited $code, expected 2"
[ ! -e bad.json ] && [ ! -e bad.json.partial ] || fail "a refused trace left a file"

# With a calibration of this host in the database, emulation subtracts the native fabric's
# modelled time (its all-reduce fit) and says which calibration it used; an emulated
# bandwidth above the calibrated one is warned about.
"$BIN" run --workers 2 --dataset "synthetic:n=2000,d=10000,density=0.01,classes=2,test=200" --steps 10 --batch 16 \
  --bandwidth 1Gbps --latency 100us --db t.db > emu.txt 2> emu_err.txt || { cat emu_err.txt; fail "emulated run failed"; }
emu_id=$(last_run_id emu.txt)
"$BIN" show "$emu_id" --db t.db --format json > emu.json
jq -e '.config["native-calibration-id"] != null and (.config["emulated-network"] | test("1 Gbit/s"))' emu.json \
  > /dev/null || fail "emulated run does not record the calibration it subtracted: $(jq .config emu.json)"
"$BIN" run --workers 2 --dataset "synthetic:n=2000,d=100,classes=2,test=200" --steps 5 --batch 16 \
  --bandwidth 1TB/s --db t.db > /dev/null 2> fast_err.txt || fail "fast emulated run failed"
grep -q "exceeds the calibrated fabric" fast_err.txt || { cat fast_err.txt; fail "no warning for an emulated bandwidth above the real one"; }
echo PASS
