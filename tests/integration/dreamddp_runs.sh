# dreamddp (algorithms/dreamddp.cpp) on real MPI ranks, same seed (docs/algorithms.md):
#  - H=1 on 2 ranks = ssgd on 2 ranks (1e-5 relative: averaging the locally updated models
#    vs averaging gradients rounds differently in float32, as localsgd H=1 in equivalences.sh);
#  - 1 worker = the serial optimizer (ssgd on 1 worker), bit-identical, with plain SGD, with
#    momentum (per-layer optimizer state) and with AdamW;
#  - H=4 differs from ssgd and from localsgd H=4 (the partial averaging does something);
#  - the schedule: --schedule prints it, the run's config JSON stores it, every layer is in
#    exactly one slot; the SVM (2 layers: weights, bias) with H=4 leaves slots without a
#    layer of their own (local steps);
#  - a ResNet and a transformer smoke run complete on 2 ranks under an emulated slow link,
#    with communication in flight during backward (overlap_s > 0);
#  - --dreamddp-fill false: no extra syncs in the stored schedule, R/H bytes per step;
#  - bad input: --period 0, --schedule with another algorithm.
source "$(dirname "$0")/common.bash"

common=(--dataset "$SMALL" --steps 60 --batch 32 --lr 0.05 --seed 11 --db t.db --eval-every 20)
run() {
  local out="$1"
  shift
  "$BIN" run "${common[@]}" "$@" --save-params "$out" > "$out.txt" 2> "$out.err" ||
    { cat "$out.txt" "$out.err"; fail "run failed: $*"; }
}

run ssgd.bin --workers 2 --algo ssgd
run d1.bin --workers 2 --algo dreamddp --period 1
compare_params d1.bin ssgd.bin 1e-5 || fail "dreamddp H=1 differs from ssgd"

run d4.bin --workers 2 --algo dreamddp --period 4 --schedule true
run l4.bin --workers 2 --algo localsgd --period 4
if cmp -s d4.bin ssgd.bin; then fail "dreamddp H=4 should differ from ssgd"; fi
if cmp -s d4.bin l4.bin; then fail "dreamddp H=4 should differ from localsgd H=4"; fi
compare_params d4.bin ssgd.bin 0.05 || fail "dreamddp H=4 is far from ssgd after 60 steps"
grep -q "dreamddp schedule: H = 4, 2 layers" d4.bin.txt || { cat d4.bin.txt; fail "--schedule printed no schedule"; }
id=$(last_run_id d4.bin.txt)
sql t.db "select config_json from runs where id=$id" > d4.json
jq -e '.["algorithm-details"].schedule | length == 4' d4.json > /dev/null || fail "schedule not stored: $(cat d4.json)"
jq -e '[.["algorithm-details"].schedule[].layers[]] | sort == [0, 1]' d4.json > /dev/null ||
  fail "SVM layers not each in exactly one slot: $(jq -c '.["algorithm-details"]' d4.json)"
jq -e '[.["algorithm-details"].schedule[] | select((.layers | length) == 0)] | length >= 2' d4.json > /dev/null ||
  fail "SVM with H=4: expected slots without a layer of their own"
jq -e '.["algorithm-details"]["compute-source"] | length > 0' d4.json > /dev/null || fail "no compute source"
[ "$(sql t.db "select count(*) from evals where run_id=$id and consensus_distance is null")" = 0 ] ||
  fail "dreamddp H=4 evaluation without consensus distance"

# --dreamddp-fill false: the pure schedule, each layer averaged once per period (no extra syncs):
# over 60 = 15·4 steps without warm-up, R/H = 3216/4 bytes per step; the stored schedule says so.
run pure.bin --workers 2 --algo dreamddp --period 4 --dreamddp-fill false --warmup 0
id=$(last_run_id pure.bin.txt)
sql t.db "select config_json from runs where id=$id" > pure.json
jq -e '.["algorithm-details"].fill == false and ([.["algorithm-details"].schedule[].extra[]] | length == 0)' pure.json \
  > /dev/null || fail "--dreamddp-fill false stored extra syncs: $(jq -c '.["algorithm-details"]' pure.json)"
jq -e '[.["algorithm-details"].schedule[].layers[]] | sort == [0, 1]' pure.json > /dev/null ||
  fail "pure schedule: SVM layers not each in exactly one slot"
[ "$(sql t.db "select bytes_sent_per_step from summaries where run_id=$id")" = 804.0 ] ||
  fail "pure schedule: $(sql t.db "select bytes_sent_per_step from summaries where run_id=$id") bytes per step, R/H = 804"
jq -e '.["algorithm-details"].fill == true' d4.json > /dev/null || fail "the default run does not say fill true"

# 1 worker: the serial optimizer, bit for bit.
for opt in "--momentum 0" "--momentum 0.9" "--optimizer adamw --lr 0.005"; do
  # shellcheck disable=SC2086
  run s1.bin --workers 1 --algo ssgd $opt
  # shellcheck disable=SC2086
  run o1.bin --workers 1 --algo dreamddp --period 3 $opt
  cmp s1.bin o1.bin || fail "dreamddp on 1 worker differs from the serial optimizer ($opt)"
done

# Smoke: ResNet-8 and a 2-block GPT on 2 ranks under an emulated slow link.
IMAGES="synthetic:shape=3x8x8,classes=4,n=256,test=64,noise=0.5"
"$BIN" run --workers 2 --workload resnet --model resnet8 --dataset "$IMAGES" --algo dreamddp --period 4 --steps 8 \
  --eval-every 4 --batch 8 --lr 0.05 --momentum 0.9 --bandwidth 1Gbps --latency 1ms --schedule true --db t.db \
  > resnet.txt 2> resnet.err || { cat resnet.txt resnet.err; fail "resnet dreamddp failed"; }
id=$(last_run_id resnet.txt)
[ "$(sql t.db "select status from runs where id=$id")" = completed ] || fail "resnet: not completed"
[ "$(sql t.db "select count(*) from steps where run_id=$id")" = 16 ] || fail "resnet: expected 16 step rows"
grep -q "emulated" resnet.txt || { cat resnet.txt; fail "resnet schedule does not name the emulated network"; }
sql t.db "select config_json from runs where id=$id" > resnet.json
layers=$(jq '.["algorithm-details"]["layer-bwd-s"] | length' resnet.json)
jq -e --argjson n "$layers" '[.["algorithm-details"].schedule[].layers[]] | sort == [range(0; $n)]' resnet.json \
  > /dev/null || fail "resnet: layers not each in exactly one slot"
[ "$(sql t.db "select sum(overlap_s) > 0 from steps where run_id=$id")" = 1 ] ||
  fail "resnet: no all-reduce in flight during backward"

"$BIN" run --workers 2 --workload transformer --model gpt --layers 2 --d-model 32 --heads 2 --seq 16 --vocab 256 \
  --dataset "synthetic-text:n=20000,test=2000" --algo dreamddp --period 2 --steps 6 --batch 4 --lr 0.1 --db t.db \
  > gpt.txt 2> gpt.err || { cat gpt.txt gpt.err; fail "transformer dreamddp failed"; }
id=$(last_run_id gpt.txt)
[ "$(sql t.db "select status from runs where id=$id")" = completed ] || fail "transformer: not completed"

# Bad input: exit code 2 and a message naming the flag.
expect_error "--period: must be in 1..1000000 \(got 0\)" "$BIN" run --steps 2 --db bad.db --dataset "$SMALL" --algo dreamddp --period 0
expect_error "schedule: applies to --algo dreamddp only" "$BIN" run --steps 2 --db bad.db --dataset "$SMALL" --algo ssgd --schedule true
echo PASS
