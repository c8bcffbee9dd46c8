# A model cost file as a workload (--workload profile:FILE, docs/model-cost-file.md): the
# simulator times it on its timing-only path with the file's per-layer costs at the run's
# batch (fitted t0 + k*batch), for the variants with a timing rule and many workers; `show`
# says what the figures were predicted from; bad files, batches the file cannot scale to and
# backends that would need numerics are refused with exit 2 and nothing stored.
source "$(dirname "$0")/common.bash"

# An MLP measured at batches 16, 32 and 64 whose every time is t0 + k*batch (so the fit is
# exact): fc1 (200,960 parameters), relu (none), fc2 (2,570).
python3 - <<'PY'
import json
def stat(m): return {"median_s": m, "spread": 0.05, "samples": 20}
def lin(t0, k, b): return t0 + k * b
batches = []
for b in (16, 32, 64):
    layers = [
        {"name": "fc1", "type": "Linear", "calls": 1, "parameters": 200960, "parameter_bytes": 803840,
         "forward": stat(lin(1e-5, 1e-5, b)), "backward": stat(lin(2e-5, 2e-5, b)),
         "forward_flops": 2 * b * 784 * 256, "backward_flops": 4 * b * 784 * 256, "activation_bytes": 4 * b * 256,
         "grad_ready_s": None},
        {"name": "relu", "type": "ReLU", "calls": 1, "parameters": 0, "parameter_bytes": 0,
         "forward": stat(lin(1e-6, 1e-7, b)), "backward": stat(lin(3e-6, 1e-7, b))},
        {"name": "fc2", "type": "Linear", "calls": 1, "parameters": 2570, "parameter_bytes": 10280,
         "forward": stat(lin(2e-6, 1e-7, b)), "backward": stat(lin(4e-6, 2e-7, b))},
    ]
    batches.append({"batch": b, "iterations": 20, "step": stat(lin(1e-4, 5e-5, b)),
                    "forward": stat(lin(1.5e-5, 1.2e-5, b)), "backward": stat(lin(3e-5, 2.4e-5, b)),
                    "optimizer": stat(5e-5), "unattributed_s": 1e-6, "layers": layers})
d = {"format": "dsgd-model-cost", "version": 1, "model": "mlp-784-256-10", "framework": "pytorch",
     "framework_version": "1.13.1", "dtype": "float32",
     "device": {"kind": "cpu", "name": "test cpu", "peak_flops": 1e11, "memory_bandwidth_bytes_per_s": 1e10},
     "input_shape": [784], "parameters": 203530, "parameter_bytes": 814120, "batches": batches}
json.dump(d, open("mlp.json", "w"), allow_nan=False)
d["version"] = 2
json.dump(d, open("v2.json", "w"))
PY

sim=(--backend sim --timing-only true --steps 50 --batch 32 --bandwidth 1Gbps --latency 50us --db t.db)
"$BIN" run --workload profile:mlp.json --workers 8 "${sim[@]}" > run.out 2>&1 || { cat run.out; fail "cost-file run failed"; }
R=$(last_run_id run.out)
# The fitted forward at batch 32 (1.5e-5 + 1.2e-5 * 32 s) on every worker and step.
fwd=$(sql t.db "select avg(fwd_s) from steps where run_id=$R and timed")
awk -v f="$fwd" 'BEGIN { exit !(f > 0.000398999 && f < 0.000399001) }' || fail "forward $fwd s, expected 3.99e-4"
# 814,120 bytes of gradients by ring all-reduce: 2 (n-1)/n of them sent per step.
bytes=$(sql t.db "select avg(bytes_sent) from steps where run_id=$R and timed")
awk -v b="$bytes" 'BEGIN { exit !(b > 1424709 && b < 1424711) }' || fail "bytes sent $bytes, expected 1424710"
[ "$(sql t.db "select dataset from runs where id=$R")" = none ] || fail "a cost file's run reads no dataset"
grep -q "^  dataset       none (a cost file or a trace reads no data)" run.out ||
  { cat run.out; fail "the effective configuration names a dataset for a cost file"; }
"$BIN" show "$R" --db t.db > show.out
grep -q "predicted: timing only; compute from cost file: model mlp-784-256-10 (pytorch 1.13.1" show.out ||
  { cat show.out; fail "show does not say what was predicted from"; }
grep -q "fitted t0 + k\*batch over batches 16, 32, 64" show.out || { cat show.out; fail "show lacks the batch fit"; }

# A fabric file (tools/export_fabric.py's format): its all-reduce times the comm. Where its
# repetitions spread widely at the model's size (814 KB reads the 512 KiB..1 MiB segment),
# the run says so in its header and stores it with the run; a quiet file, or one without
# spreads (an older exporter), says nothing.
python3 - <<'PY'
import json
def fabric(noisy, spreads=True):
    rows = []
    for op in ("allreduce", "sendrecv"):
        s = 4
        while s <= 4 << 20:
            row = {"op": op, "bytes": s, "time_s": 50e-6 + s / 1e9, "time_min_s": 40e-6 + s / 1e9,
                   "time_max_s": 90e-6 + s / 1e9, "iters": 30}
            if spreads:
                row["spread"] = 0.9 if noisy and op == "allreduce" and s in (1 << 19, 1 << 20) else 0.05
            rows.append(row)
            s *= 2
    return {"format": "dsgd-fabric", "version": 1, "framework": "pytorch", "framework_version": "1.13.1",
            "backend": "gloo", "world_size": 2, "hosts": 1, "host_names": ["h"], "collectives": rows, "fits": [],
            "notes": []}
for name, noisy, spreads in (("quiet", False, True), ("noisy", True, True), ("old", True, False)):
    json.dump(fabric(noisy, spreads), open("fabric_%s.json" % name, "w"))
PY
fab=(--backend sim --timing-only true --steps 20 --batch 32 --workers 2 --algo localsgd --period 4 --db fab.db)
for f in quiet noisy old; do
  "$BIN" run --workload profile:mlp.json --fabric "fabric_$f.json" "${fab[@]}" > "fab_$f.out" 2>&1 ||
    { cat "fab_$f.out"; fail "a cost file with --fabric fabric_$f.json failed"; }
  grep -q "network fabric file: pytorch 1.13.1 gloo on 2 ranks (1 host)" "fab_$f.out" ||
    { cat "fab_$f.out"; fail "the header does not name the fabric file"; }
done
warn="warning       the measured fabric's repetitions spread widely near the model's 814.1 KB (allreduce at 524.3 KB 90 %;"
grep -qF "$warn" fab_noisy.out || { cat fab_noisy.out; fail "no warning of the fabric's spread"; }
grep -q "sendrecv at" fab_noisy.out && fail "the warning names sendrecv, whose spreads are 5 %"
stored=$(sql fab.db "select json_extract(config_json, '$.\"backend-details\".\"network-warnings\"') from runs
  where id=$(last_run_id fab_noisy.out)")
case "$stored" in *"spread widely near the model's 814.1 KB"*) ;; *) fail "the run does not store the warning: $stored" ;; esac
for f in quiet old; do
  grep -q "spread widely" "fab_$f.out" && { cat "fab_$f.out"; fail "fabric_$f.json warns of a spread"; }
done

# Other variants with a timing rule, and many workers.
for algo in "localsgd --period 8" "dpsgd --topology ring" "dreamddp --period 4" "ssgd --overlap true"; do
  # shellcheck disable=SC2086
  "$BIN" run --workload profile:mlp.json --workers 16 --algo $algo "${sim[@]}" > v.out 2>&1 ||
    { cat v.out; fail "--algo $algo on a cost file failed"; }
done
# The exporter's model pass is what a gossip step charges for the copy it sends and its mix:
# on a ring of two, three passes per dpsgd step beyond compute, exchange and wait. A file
# without one takes 2.5 x parameter bytes / the memory bandwidth, and the header says which.
python3 - <<'PY'
import json
d = json.load(open("mlp.json"))
d["model_pass"] = {"median_s": 1e-4, "spread": 0.05, "samples": 10}
json.dump(d, open("mlp_pass.json", "w"))
PY
for case in "mlp_pass.json 1e-4 model pass as exported" \
  "mlp.json 2.0353e-4 model pass from the device's memory bandwidth (the file has no measured one)"; do
  read -r file pass note <<<"$case"
  "$BIN" run --workload "profile:$file" --workers 2 --algo dpsgd --topology ring "${sim[@]}" > pass.out 2>&1 ||
    { cat pass.out; fail "dpsgd on $file failed"; }
  grep -qF "$note" pass.out || { cat pass.out; fail "the header does not say '$note'"; }
  bad=$(sql t.db "select count(*) from steps where run_id=$(last_run_id pass.out) and
    abs(step_s - data_s - fwd_s - bwd_s - opt_s - comm_s - wait_s - 3 * $pass) > 1e-12")
  [[ $bad == 0 ]] || fail "$bad dpsgd steps on $file do not charge three model passes of $pass s"
done
# A file with the exporter's per-iteration step times (here at batch 32: 0.81..1.19 x its median
# step, evenly) gives the simulated steps that distribution (the compute jitter), around the
# file's step; without them, or with --compute-jitter off, every step is the median.
python3 - <<'PY'
import json
d = json.load(open("mlp.json"))
step = d["batches"][1]["step"]
step["times_s"] = [step["median_s"] * (0.81 + 0.02 * i) for i in range(20)]
json.dump(d, open("mlp_times.json", "w"))
step["times_s"].pop()
json.dump(d, open("mlp_times_bad.json", "w"))
PY
one=(--backend sim --timing-only true --batch 32 --workers 1 --db t.db)
"$BIN" run --workload profile:mlp_times.json "${one[@]}" --steps 3000 > times.out 2>&1 ||
  { cat times.out; fail "a file with step times failed"; }
grep -qF "compute jitter from the cost file's 20 per-iteration step times at batch 32" times.out ||
  { cat times.out; fail "the header does not say where the jitter came from"; }
J=$(last_run_id times.out)
read -r mean lo hi <<<"$(sql t.db "select avg(step_s), min(step_s), max(step_s) from steps where run_id=$J and timed" |
  tr '|' ' ')"
# 1e-4 + 5e-5 * 32 = 1.7e-3 s; the quantiles of 0.81..1.19 x that, drawn 3000 times.
awk -v m="$mean" -v lo="$lo" -v hi="$hi" 'BEGIN { exit !(m > 0.98 * 1.7e-3 && m < 1.02 * 1.7e-3 &&
  lo >= 0.8 * 1.7e-3 && hi <= 1.2 * 1.7e-3 && hi / lo > 1.35) }' ||
  fail "jittered steps: mean $mean, range $lo..$hi s; expected about 1.7e-3, within 0.81..1.19 x"
"$BIN" run --workload profile:mlp_times.json "${one[@]}" --steps 50 --compute-jitter off > off.out 2>&1 ||
  { cat off.out; fail "--compute-jitter off failed"; }
spread=$(sql t.db "select max(step_s) - min(step_s) from steps where run_id=$(last_run_id off.out) and timed")
awk -v s="$spread" 'BEGIN { exit !(s < 1e-12) }' || fail "--compute-jitter off: steps differ by $spread s"
grep -qF "compute jitter none: the cost file has no per-iteration step times" run.out ||
  { cat run.out; fail "a file without step times does not say it has no jitter"; }
"$BIN" run --workload profile:mlp.json --workers 20000 "${sim[@]}" --steps 5 > big.out 2>&1 ||
  { cat big.out; fail "20,000 workers on a cost file failed"; }

# A cost file's ssgd is PyTorch DDP's step: worker 0 broadcasts the model's buffers before each
# forward, one broadcast per dtype (here 5,632 B of float32 and 152 B of int64): on 2 workers at
# 1 Gbit/s and 50 us, a tree of one hop each, alpha + S/B (B the payload rate, 0.94 of 1 Gbit/s),
# in every step's comm and bytes. --broadcast-buffers false, and a file that does not record
# its buffers (an older exporter's), charge nothing; the header says which.
python3 - <<'PY'
import json
d = json.load(open("mlp.json"))
d["buffers"] = [{"dtype": "float32", "tensors": 4, "bytes": 5632}, {"dtype": "int64", "tensors": 2, "bytes": 152}]
json.dump(d, open("mlp_buffers.json", "w"))
PY
ddp=(--workers 2 --algo ssgd --overlap true --bucket-mb 25 "${sim[@]}")
"$BIN" run --workload profile:mlp_buffers.json "${ddp[@]}" > buf.out 2>&1 || { cat buf.out; fail "DDP with buffers failed"; }
grep -qF "buffers broadcast before each forward, as DDP does: 2 broadcasts (5632 B float32 in 4 tensors, 152 B int64 in 2 tensors)" buf.out ||
  { cat buf.out; fail "the header does not say which buffers are broadcast"; }
"$BIN" run --workload profile:mlp_buffers.json "${ddp[@]}" --broadcast-buffers false > nobuf.out 2>&1 ||
  { cat nobuf.out; fail "--broadcast-buffers false failed"; }
grep -qF "buffers not broadcast (--broadcast-buffers false)" nobuf.out || { cat nobuf.out; fail "no header for false"; }
"$BIN" run --workload profile:mlp.json "${ddp[@]}" > old.out 2>&1 || { cat old.out; fail "DDP without buffers failed"; }
grep -qF "not recorded in the file (an older exporter: export it again to have them): not charged" old.out ||
  { cat old.out; fail "a file without buffers does not say nothing is charged"; }
per_step() { sql t.db "select avg($1) from steps where run_id=$(last_run_id "$2") and timed"; }
read -r dc ds db <<<"$(awk -v a="$(per_step comm_s buf.out)" -v b="$(per_step comm_s nobuf.out)" \
  -v c="$(per_step step_s buf.out)" -v d="$(per_step step_s nobuf.out)" \
  -v e="$(per_step bytes_sent buf.out)" -v f="$(per_step bytes_sent nobuf.out)" 'BEGIN { print a - b, c - d, e - f }')"
awk -v c="$dc" -v s="$ds" -v b="$db" 'BEGIN { lo = 2 * 50e-6 + 5784 * 8 / 1e9; hi = 2 * 50e-6 + 5784 * 8 / 0.9e9;
  exit !(c > lo && c < hi && s > c - 1e-12 && s < c + 1e-12 && b > 2891.9 && b < 2892.1) }' ||
  fail "the broadcasts added comm $dc s, step $ds s, bytes $db; expected 2 x 50 us + 5784 B at ~1 Gbit/s, 2892 B"
[[ "$(per_step comm_s old.out)" == "$(per_step comm_s nobuf.out)" ]] || fail "a file without buffers was charged"

# Bad input: exit 2, and no database where none existed.
expect_error_also() { [ ! -e bad.db ] || fail "bad input created bad.db"; }
bad=(--steps 50 --batch 32 --db bad.db)
expect_error "timing-only path only \(got --backend mpi" "$BIN" run --workload profile:mlp.json "${bad[@]}"
expect_error "without --timing-only" "$BIN" run --workload profile:mlp.json --backend sim "${bad[@]}"
expect_error "no dataset, so no epoch" "$BIN" run --workload profile:mlp.json --backend sim --timing-only true \
  --epochs 1 --batch 32 --db bad.db
expect_error "--batch 512: outside what cost file mlp.json can scale to" "$BIN" run --workload profile:mlp.json \
  --backend sim --timing-only true --steps 5 --batch 512 --db bad.db
expect_error "version 2; this dsgd-bench reads version 1" "$BIN" run --workload profile:v2.json \
  --backend sim --timing-only true "${bad[@]}"
expect_error "cost file absent.json: cannot be read" "$BIN" run --workload profile:absent.json \
  --backend sim --timing-only true "${bad[@]}"
expect_error "batches\[1\].step.times_s has 19 times for 20 samples" "$BIN" run --workload profile:mlp_times_bad.json \
  --backend sim --timing-only true "${bad[@]}"
expect_error "no file after profile:" "$BIN" run --workload profile: --backend sim --timing-only true "${bad[@]}"
expect_error "--broadcast-buffers: applies to --algo ssgd" "$BIN" run --workload profile:mlp_buffers.json \
  --backend sim --timing-only true --algo localsgd --broadcast-buffers false "${bad[@]}"
expect_error "--broadcast-buffers: applies to a cost-file workload" "$BIN" run --workload svm --backend sim \
  --broadcast-buffers true --workers 2 --steps 5 --db bad.db
# The tuner ranks a cost file's configurations by predicted time: per sample without a noise
# scale; by S(B) = S_min (1 + B_noise / B) with one (then a larger global batch gains less).
TUNE="$(dirname "$BIN")/dsgd-tune"
tune=(recommend --workers 8 --algos ssgd,localsgd --period 1,16 --batch 16,64 --bandwidth 100Mbps --latency 1ms)
"$TUNE" "${tune[@]}" --workload profile:mlp.json --db tune.db -o best.toml > rank.out 2>&1 ||
  { cat rank.out; fail "ranking a cost file failed"; }
grep -q "ranked by time per epoch at equal statistical efficiency" rank.out || { cat rank.out; fail "no basis"; }
grep -q "a prediction, not a measurement" rank.out || { cat rank.out; fail "the prediction is not called one"; }
# On a 100 Mbit/s link, H = 16 at the largest batch beats synchronous SGD at the smallest.
first=$(awk '$1 == "1" { print $2, $3, $4 }' rank.out)
[ "$first" = "localsgd H=16 b=64" ] || { cat rank.out; fail "best is '$first', expected localsgd H=16 b=64"; }
grep -q "workload = 'profile:mlp.json'" best.toml || { cat best.toml; fail "-o wrote no cost-file config"; }
"$BIN" run --config best.toml --db t.db > best.out 2>&1 || { cat best.out; fail "the written config does not run"; }
python3 - <<'PY'
import json
d = json.load(open("mlp.json"))
d["gradient_noise_scale"] = {"b_simple": 4096.0, "batch_small": 16, "batch_big": 64, "samples": 10}
json.dump(d, open("mlp_gns.json", "w"))
PY
"$TUNE" "${tune[@]}" --workload profile:mlp_gns.json --db tune.db --format json > rank.json ||
  fail "ranking with a noise scale failed"
python3 - <<'PY' || fail "the noise-scale ranking is not S(B)-weighted"
import json
r = json.load(open("rank.json"))
assert "B_noise = 4096" in r["basis"], r["basis"]
rows = {x["configuration"]: x for x in r["ranking"]}
a, b = rows["localsgd H=16 b=16 lr=linear"], rows["localsgd H=16 b=64 lr=linear"]
# score = step x (1 + 4096 / (batch x 8)), relative to the best
for x, batch in ((a, 16), (b, 64)):
    assert abs(x["score"] - x["step_s"] * (1 + 4096 / (batch * 8))) < 1e-12 * x["score"], x
PY
# The leaders (within 10 % of the best) are timed at 3 seeds of the file's step-time draws and
# ranked by the median; one that beats or ties the best at a seed is marked within its noise
# (ssgd and localsgd H=1 time the same: a tie at every seed). A file without step times has
# nothing to draw: no note, no mark.
"$TUNE" recommend --workers 8 --algos ssgd,localsgd --period 1 --batch 16 --bandwidth 100Mbps --latency 1ms \
  --workload profile:mlp_times.json --db tune.db --format json > tie.json || fail "ranking a tie failed"
"$TUNE" "${tune[@]}" --workload profile:mlp_times.json --db tune.db --format json > lead.json ||
  fail "ranking a file with step times failed"
"$TUNE" recommend --workers 8 --algos ssgd,localsgd --period 1 --batch 16 --bandwidth 100Mbps --latency 1ms \
  --workload profile:mlp_times.json --db tune.db > tie.out || fail "ranking a tie (table) failed"
grep -Eq '^   2  localsgd H=1 b=16 lr=linear .*1\.000x~$' tie.out || { cat tie.out; fail "the tie is not marked ~"; }
grep -q "1 more within its noise, marked ~" tie.out || { cat tie.out; fail "the best's line does not name the tie"; }
python3 - <<'PY' || fail "the leaders' seeds, medians and ties are not as documented"
import json
t = json.load(open("tie.json"))
a, b = t["ranking"]
assert a["seeds"] == 3 and b["seeds"] == 3 and b["within_noise_of_best"] and not a["within_noise_of_best"], t
assert a["step_s"] == b["step_s"], t
assert any("beats or ties the best at one seed or more" in n for n in t["notes"]), t["notes"]
r = json.load(open("lead.json"))["ranking"]
best = r[0]
lo, hi = best["step_range_s"]
assert best["seeds"] == 3 and lo < best["step_s"] < hi, best  # the median of three different draws
assert all(x["seeds"] == 1 and x["step_range_s"] == [x["step_s"], x["step_s"]] for x in r[1:]), r  # 3.1x and more
plain = json.load(open("rank.json"))  # mlp_gns.json: no step times
assert not any("seeds of the simulator's draws" in n for n in plain["notes"]), plain["notes"]
assert not any(x["within_noise_of_best"] for x in plain["ranking"]), plain["ranking"]
PY
# A convergence point of the user's (--reference-steps STEPS@BATCH) turns the ranking into
# predicted seconds to the target: S(B) = S_min (1 + B_noise / B), S_min from the point, a band
# from B_noise / 2 to 2 B_noise (0 at the reference batch); without a noise scale, perfect
# scaling, banded by no scaling.
"$TUNE" "${tune[@]}" --workload profile:mlp_gns.json --db tune.db --format json --reference-steps 1000@512 > ref.json ||
  fail "ranking with a reference point failed"
"$TUNE" "${tune[@]}" --workload profile:mlp.json --db tune.db --format json --reference-steps 1000@512 > ref_plain.json ||
  fail "ranking with a reference point and no noise scale failed"
python3 - <<'PY' || fail "the seconds to the target are not S(B) x step"
import json
r = json.load(open("ref.json"))
assert r["unit"] == "s to target" and "S_min = 111.1" in r["basis"], r["basis"]
rows = {x["configuration"]: x for x in r["ranking"]}
def steps(noise, b):
    return 1000 / (1 + noise / 512) * (1 + noise / b)
for key, batch in (("localsgd H=16 b=16 lr=linear", 16), ("localsgd H=16 b=64 lr=linear", 64)):
    x, b = rows[key], batch * 8
    assert abs(x["steps_to_target"] - steps(4096, b)) < 1e-9 * steps(4096, b), x
    assert abs(x["seconds_to_target"] - x["step_s"] * steps(4096, b)) < 1e-9 * x["seconds_to_target"], x
    lo, hi = sorted((steps(2048, b), steps(8192, b)))
    assert abs(x["steps_band"][0] - lo) < 1e-9 * lo and abs(x["steps_band"][1] - hi) < 1e-9 * hi, x
assert rows["localsgd H=16 b=64 lr=linear"]["steps_band"][0] == rows["localsgd H=16 b=64 lr=linear"]["steps_band"][1]
p = {x["configuration"]: x for x in json.load(open("ref_plain.json"))["ranking"]}
x = p["localsgd H=16 b=16 lr=linear"]  # B = 128: 4x the steps of B = 512, band down to no scaling
assert abs(x["steps_to_target"] - 4000) < 1e-9 and x["steps_band"] == [1000, 4000], x
PY
expect_error "is not STEPS@BATCH with both positive" "$TUNE" "${tune[@]}" --workload profile:mlp.json --db tune.db \
  --reference-steps 1000x512
expect_error "is not STEPS@BATCH with both positive" "$TUNE" "${tune[@]}" --workload profile:mlp.json --db tune.db \
  --reference-steps -5@512
expect_error "applies to a cost file or trace" "$TUNE" recommend --workload svm --workers 2 --batch 16 --algos ssgd \
  --target acc=0.5 --db bad.db --reference-steps 1000@512
expect_error "no network to time the configurations on" "$TUNE" recommend --workload profile:mlp.json \
  --workers 8 --algos ssgd --batch 16 --db bad.db
# The ranking repeats what its simulated runs warned of their inputs: a fabric that does not repeat.
"$TUNE" recommend --workload profile:mlp.json --fabric fabric_noisy.json --workers 2 --algos ssgd,localsgd \
  --period 4 --batch 32 --db tunefab.db > tunefab.out 2>&1 || { cat tunefab.out; fail "ranking on a noisy fabric failed"; }
grep -q "note: the simulator warned: the measured fabric's repetitions spread widely" tunefab.out ||
  { cat tunefab.out; fail "the ranking does not say the fabric is noisy"; }
"$TUNE" recommend --workload profile:mlp.json --fabric fabric_quiet.json --workers 2 --algos ssgd,localsgd \
  --period 4 --batch 32 --db tunefab.db > tunequiet.out 2>&1 || { cat tunequiet.out; fail "ranking failed"; }
grep -q "simulator warned" tunequiet.out && { cat tunequiet.out; fail "a quiet fabric is said to be noisy"; }
echo "PASS"
