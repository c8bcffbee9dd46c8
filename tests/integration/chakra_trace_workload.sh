# A Chakra execution trace as a workload (--workload chakra:FILE, docs/chakra.md): the
# committed example trace (tests/data/chakra/mlp3.et: a 3-layer MLP's step at batch 32, three
# gradient buckets) is timed on the simulator's timing-only path with the trace's compute and
# our network model's cost of its gradient bytes; the prediction equals that of the model cost
# file with the same layers and times; the trace's own all-reduce times are not used; the same
# step sharded (reduce-scatters, all-gathers) predicts the same and runs under --algo zero; the
# tuner ranks it at its batch; a DDP trace's broadcasts are charged by ssgd as a cost file's
# buffers are; bad traces, another batch and a prefix that does not match the
# file are refused with exit 2 and nothing stored. A build without protobuf refuses the
# workload, saying so.
TRACE="$(cd "$(dirname "$0")/../data/chakra" && pwd)/mlp3.et"
source "$(dirname "$0")/common.bash"
cp "$TRACE" mlp3.et

sim=(--backend sim --timing-only true --steps 50 --batch 32 --bandwidth 1Gbps --latency 50us --db t.db)
if "$BIN" list workloads | grep -q "chakra:FILE.*not in this build"; then
  expect_error "built without protobuf, so it cannot read Chakra traces" "$BIN" run --workload chakra:mlp3.et \
    "${sim[@]}"
  echo "SKIP: this build has no protobuf (the refusal was checked)"
  exit 0
fi

# The cost file with the trace's layers and times (forward order: the bucket reduced last
# first), for the equivalence check.
python3 - <<'PY'
import json
def stat(m): return {"median_s": m, "spread": 0.0, "samples": 1}
layers = []
for name, nbytes, bwd in (("fc1", 803840, 219e-6), ("fc2", 131584, 65e-6), ("fc3", 5160, 24e-6)):
    layers.append({"name": name, "type": "Linear", "calls": 1, "parameters": nbytes // 4, "parameter_bytes": nbytes,
                   "forward": stat(0.0), "backward": stat(bwd)})
d = {"format": "dsgd-model-cost", "version": 1, "model": "mlp3", "framework": "pytorch", "framework_version": "x",
     "dtype": "float32", "device": {"kind": "cpu", "name": "t", "peak_flops": 0, "memory_bandwidth_bytes_per_s": 0},
     "input_shape": [784], "parameters": 235146, "parameter_bytes": 940584,
     "batches": [{"batch": 32, "iterations": 1, "step": stat(508e-6), "forward": stat(160e-6),
                  "backward": stat(308e-6), "optimizer": stat(40e-6), "unattributed_s": 0.0, "layers": layers}]}
json.dump(d, open("mlp3.json", "w"))
PY

# Runs $1 and $2 predict the same mean step (to rounding), or the test fails saying $3.
same_step() {
  local a b
  a=$(sql t.db "select avg(step_s) from steps where run_id=$1 and timed")
  b=$(sql t.db "select avg(step_s) from steps where run_id=$2 and timed")
  awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-12 + 1e-9 * b) }' ||
    fail "$3 predict different steps: $a s and $b s"
}

for algo in "ssgd" "ssgd --overlap true" "localsgd --period 8"; do
  # shellcheck disable=SC2086
  "$BIN" run --workload chakra:mlp3.et --workers 8 --algo $algo "${sim[@]}" > trace.out 2>&1 ||
    { cat trace.out; fail "--algo $algo on a Chakra trace failed"; }
  T=$(last_run_id trace.out)
  # shellcheck disable=SC2086
  "$BIN" run --workload profile:mlp3.json --workers 8 --algo $algo "${sim[@]}" > profile.out 2>&1 ||
    { cat profile.out; fail "--algo $algo on the equivalent cost file failed"; }
  P=$(last_run_id profile.out)
  same_step "$T" "$P" "--algo $algo: the trace and the equivalent cost file"
done

# Synchronous SGD, no overlap: every step is the trace's compute (forward 160 us, backward
# 308 us, optimizer 40 us) plus our network's all-reduce of its 940,584 gradient bytes.
"$BIN" run --workload chakra:mlp3.et --workers 8 "${sim[@]}" > run.out 2>&1 || { cat run.out; fail "run failed"; }
R=$(last_run_id run.out)
q() { sql t.db "select $1 from steps where run_id=$R and timed"; }
for check in "avg(fwd_s) 0.000160" "avg(bwd_s) 0.000308" "avg(opt_s) 0.000040"; do
  set -- $check
  v=$(q "$1")
  awk -v v="$v" -v e="$2" 'BEGIN { exit !(v > e - 1e-12 && v < e + 1e-12) }' || fail "$1 is $v, expected $2"
done
# Ring all-reduce: 2 (n-1)/n of the bytes sent per step.
bytes=$(q "avg(bytes_sent)")
awk -v b="$bytes" 'BEGIN { exit !(b > 1646021 && b < 1646023) }' || fail "bytes sent $bytes, expected 1646022"
# step = compute + communication (+ waiting, 0 without stragglers), and the communication is
# the network model's, not the trace's own 755 us of all-reduces.
comm=$(q "avg(comm_s)")
step=$(q "avg(step_s)")
awk -v s="$step" -v c="$comm" 'BEGIN { d = s - (0.000508 + c); if (d < 0) d = -d; exit !(d < 1e-9) }' ||
  fail "step $step s is not the trace's compute 508 us + comm $comm s"
awk -v c="$comm" 'BEGIN { exit !(c > 0 && (c < 0.000754 || c > 0.000756)) }' || fail "comm $comm s: the trace's own?"
# 1 Gbit/s: the ring moves 1646022 bytes at no more than 125 MB/s: at least 13 ms.
awk -v c="$comm" 'BEGIN { exit !(c > 0.013) }' || fail "comm $comm s is faster than 1 Gbit/s allows"
[ "$(sql t.db "select dataset from runs where id=$R")" = none ] || fail "a trace's run reads no dataset"
"$BIN" show "$R" --db t.db > show.out
grep -q "Chakra trace .*mlp3.et (schema 0.0.4; batch 32; 13 compute nodes, 3 all-reduce buckets" show.out ||
  { cat show.out; fail "show does not say the prediction came from the trace"; }

# The same step sharded (FSDP FULL_SHARD): each bucket's parameters all-gathered before its
# forward and its backward, its gradients reduce-scattered (comm_size: the whole bucket). The
# reduce-scatters are the buckets, so every variant predicts what it predicts for the DDP
# trace; the all-gathers are left out (said so), and --algo zero costs its own.
python3 - "$TRACE" <<'PY'
import json, os, sys
spec = json.load(open(os.path.join(os.path.dirname(sys.argv[1]), "mlp3.json")))
shard = {"fc1": 803840, "fc2": 131584, "fc3": 5160}
nodes = []
for n in spec["nodes"]:
    n = dict(n)
    unit = n["name"].split("_")[0]
    if n["kind"] == "comp" and unit in shard:  # gather the unit's parameters (one shard of 8 sent) first
        nodes.append({"name": "allgather_" + n["name"], "kind": "allgather", "bytes": shard[unit] // 8,
                      "duration_us": 7})
    if n["kind"] == "allreduce":
        n["kind"], n["name"] = "reducescatter", n["name"].replace("allreduce", "reducescatter")
    nodes.append(n)
spec["nodes"] = nodes
json.dump(spec, open("fsdp.json", "w"))
PY
# tools/chakra_trace.py needs python3-protobuf: Debian's python3 (DSGD_PYTHON3, set by ctest).
"${DSGD_PYTHON3:-python3}" "$(dirname "$0")/../../tools/chakra_trace.py" write fsdp.json -o fsdp.et ||
  fail "writing the sharded trace (tools/chakra_trace.py needs python3-protobuf)"
for algo in "ssgd" "localsgd --period 8"; do
  # shellcheck disable=SC2086
  "$BIN" run --workload chakra:fsdp.et --workers 8 --algo $algo "${sim[@]}" > fsdp.out 2>&1 ||
    { cat fsdp.out; fail "--algo $algo on a sharded Chakra trace failed"; }
  F=$(last_run_id fsdp.out)
  # shellcheck disable=SC2086
  "$BIN" run --workload chakra:mlp3.et --workers 8 --algo $algo "${sim[@]}" > trace.out 2>&1 || fail "--algo $algo"
  T=$(last_run_id trace.out)
  same_step "$F" "$T" "--algo $algo: the sharded trace and the DDP trace"
done
"$BIN" show "$F" --db t.db > show.out
grep -q "3 reduce-scatter buckets (a sharded step: FSDP or ZeRO), 0.9406 MB of gradients" show.out ||
  { cat show.out; fail "show does not say the trace was a sharded step"; }
grep -q "left out: 6 all-gathers" show.out || { cat show.out; fail "show does not say the all-gathers were left out"; }
"$BIN" run --workload chakra:fsdp.et --workers 8 --algo zero "${sim[@]}" > zero.out 2>&1 ||
  { cat zero.out; fail "--algo zero on a sharded Chakra trace failed"; }
Z=$(last_run_id zero.out)
zb=$(sql t.db "select avg(bytes_sent) from steps where run_id=$Z and timed")
[ "${zb%.*}" -gt 0 ] || fail "--algo zero sent $zb bytes a step"

# DDP's broadcast of the buffers before the forward, as two BROADCAST nodes (6,272 B and 168 B):
# --algo ssgd charges them as it charges a cost file's buffers of those sizes (the same step),
# --broadcast-buffers false charges nothing (the plain trace's step), another variant nothing.
python3 - "$TRACE" <<'PY'
import json, os, sys
d = os.path.dirname(sys.argv[1])
spec = json.load(open(os.path.join(d, "mlp3.json")))
spec["nodes"] = [{"name": "bcast_f32", "kind": "broadcast", "bytes": 6272, "duration_us": 9},
                 {"name": "bcast_i64", "kind": "broadcast", "bytes": 168, "duration_us": 5}] + spec["nodes"]
json.dump(spec, open("ddp_buffers.json", "w"))
cost = json.load(open("mlp3.json"))
cost["buffers"] = [{"dtype": "float32", "tensors": 42, "bytes": 6272}, {"dtype": "int64", "tensors": 21, "bytes": 168}]
json.dump(cost, open("mlp3_buffers.json", "w"))
PY
"${DSGD_PYTHON3:-python3}" "$(dirname "$0")/../../tools/chakra_trace.py" write ddp_buffers.json -o ddp_buffers.et ||
  fail "writing the trace with broadcasts"
"$BIN" run --workload chakra:ddp_buffers.et --workers 8 --algo ssgd "${sim[@]}" > bb.out 2>&1 ||
  { cat bb.out; fail "ssgd on a trace with broadcasts failed"; }
grep -qF "buffers broadcast before each forward, as DDP does: 2 broadcasts of the trace (node 0 'bcast_f32': 6272 B, node 1 'bcast_i64': 168 B)" bb.out ||
  { cat bb.out; fail "the run does not say it charged the trace's broadcasts"; }
B=$(last_run_id bb.out)
# Any variant's header names them in the trace's note (localsgd charges none).
"$BIN" run --workload chakra:ddp_buffers.et --workers 8 --algo localsgd --period 8 "${sim[@]}" > lb.out 2>&1 ||
  { cat lb.out; fail "localsgd on a trace with broadcasts failed"; }
grep -qF "2 broadcasts of 6440 B in all (the buffers DDP broadcasts: --algo ssgd charges them)" lb.out ||
  { cat lb.out; fail "the trace's note does not name its broadcasts"; }
"$BIN" run --workload profile:mlp3_buffers.json --workers 8 --algo ssgd "${sim[@]}" > pb.out 2>&1 ||
  { cat pb.out; fail "ssgd on the cost file with buffers failed"; }
same_step "$B" "$(last_run_id pb.out)" "the trace with broadcasts and the cost file with those buffers"
"$BIN" run --workload chakra:ddp_buffers.et --workers 8 --algo ssgd --broadcast-buffers false "${sim[@]}" \
  > nb.out 2>&1 || { cat nb.out; fail "--broadcast-buffers false on a trace failed"; }
"$BIN" run --workload chakra:mlp3.et --workers 8 --algo ssgd "${sim[@]}" > plain.out 2>&1 || fail "plain ssgd"
same_step "$(last_run_id nb.out)" "$(last_run_id plain.out)" "--broadcast-buffers false and the trace without them"
b=$(sql t.db "select avg(step_s) from steps where run_id=$B and timed")
p=$(sql t.db "select avg(step_s) from steps where run_id=$(last_run_id plain.out) and timed")
awk -v b="$b" -v p="$p" 'BEGIN { exit !(b > p) }' || fail "the broadcasts added nothing: $b s against $p s"

# The tuner ranks the trace's configurations at its batch and refuses the others, saying why;
# a trace that records no batch (here the example without its batch_size attribute: a
# GlobalMetadata of the version alone, then the nodes) is ranked at one batch only.
TUNE="$(dirname "$BIN")/dsgd-tune"
tune=(recommend --workers 8 --algos ssgd,localsgd --period 1,16 --bandwidth 100Mbps --latency 1ms --db tune.db)
"$TUNE" "${tune[@]}" --workload chakra:mlp3.et --batch 16,32 > rank.out 2>&1 || { cat rank.out; fail "ranking failed"; }
grep -q "a prediction, not a measurement" rank.out || { cat rank.out; fail "the prediction is not called one"; }
first=$(awk '$1 == "1" { print $2, $3, $4 }' rank.out)
[ "$first" = "localsgd H=16 b=32" ] || { cat rank.out; fail "best is '$first', expected localsgd H=16 b=32"; }
grep -q "refused: ssgd b=16 lr=linear: --batch 16: Chakra trace mlp3.et was recorded at batch 32" rank.out ||
  { cat rank.out; fail "batch 16 is not refused with the trace's batch"; }
{ printf '\x07\x0a\x050.0.4'; tail -c +25 mlp3.et; } > nobatch.et
"$BIN" run --workload chakra:nobatch.et --workers 8 --backend sim --timing-only true --steps 5 --batch 64 \
  --bandwidth 1Gbps --db t.db > nobatch.out 2>&1 ||
  { cat nobatch.out; fail "a trace without a batch does not run at --batch 64"; }
grep -q "no batch recorded" nobatch.out || { cat nobatch.out; fail "the run does not say the trace has no batch"; }
"$TUNE" "${tune[@]}" --workload chakra:nobatch.et --batch 64 > rank.out 2>&1 || { cat rank.out; fail "ranking failed"; }
expect_error "the trace records no batch size" "$TUNE" "${tune[@]}" --workload chakra:nobatch.et --batch 16,32

# Bad input: exit 2, and no database where none existed.
expect_error_also() { [ ! -e bad.db ] || fail "bad input created bad.db"; }
bad=(--backend sim --timing-only true --steps 5 --batch 32 --db bad.db)
expect_error "--batch 64: Chakra trace mlp3.et was recorded at batch 32" "$BIN" run --workload chakra:mlp3.et \
  --backend sim --timing-only true --steps 5 --batch 64 --db bad.db
expect_error "timing-only path only \(got --backend mpi" "$BIN" run --workload chakra:mlp3.et --steps 5 --batch 32 \
  --db bad.db
head -c 300 mlp3.et > cut.et
expect_error "Chakra trace cut.et: truncated: message [0-9]+ at byte [0-9]+" "$BIN" run --workload chakra:cut.et \
  "${bad[@]}"
echo "not a trace" > text.et
expect_error "text.et: not a Chakra execution trace" "$BIN" run --workload chakra:text.et "${bad[@]}"
expect_error "mlp3.json is JSON, not a Chakra execution trace" "$BIN" run --workload chakra:mlp3.json "${bad[@]}"
expect_error "mlp3.et is not JSON" "$BIN" run --workload profile:mlp3.et "${bad[@]}"
expect_error "Chakra trace absent.et: cannot be read" "$BIN" run --workload chakra:absent.et "${bad[@]}"
expect_error "no file after chakra:" "$BIN" run --workload chakra: "${bad[@]}"
echo "PASS"
