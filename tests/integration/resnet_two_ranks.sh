# The resnet workload under `mpiexec -n 2` (self-launched with --workers 2) with ssgd and
# localsgd on small synthetic images: both complete, record 2 ranks' steps and evaluations,
# and ssgd's bytes per step equal the model size. Then the bad-input messages: unknown
# --model, a non-image dataset, a CIFAR directory without its files (exit code 2, one line
# naming the problem each).
source "$(dirname "$0")/common.bash"

IMAGES="synthetic:shape=3x8x8,classes=4,n=256,test=64,noise=0.5"
for algo in ssgd localsgd; do
  "$BIN" run --workers 2 --workload resnet --model resnet8 --dataset "$IMAGES" --algo "$algo" --steps 6 \
    --eval-every 3 --batch 8 --lr 0.05 --momentum 0.9 --augment true --db t.db > "$algo.txt" 2> "$algo.err" ||
    { cat "$algo.txt" "$algo.err"; fail "resnet with $algo failed"; }
  id=$(last_run_id "$algo.txt")
  [ "$(sql t.db "select status from runs where id=$id")" = completed ] || fail "$algo: status not completed"
  [ "$(sql t.db "select count(*) from steps where run_id=$id")" = 12 ] || fail "$algo: expected 12 step rows"
  [ "$(sql t.db "select count(distinct rank) from steps where run_id=$id")" = 2 ] || fail "$algo: not 2 ranks"
  [ "$(sql t.db "select count(*) from evals where run_id=$id")" -ge 2 ] || fail "$algo: no evaluations"
  "$BIN" show "$id" --db t.db --format json > "$algo.json"
  jq -e '.workload == "resnet" and .final_test_acc >= 0 and .final_train_loss > 0' "$algo.json" > /dev/null ||
    fail "$algo: unexpected show json: $(cat "$algo.json")"
done
# ssgd all-reduces the whole flat gradient: resnet8 on 3 channels, 4 classes has 77,652
# floats (stem 432+32, stage convs/BN, 2 projections, head 64*4+4); 2 ranks send (2(n-1)/n = 1) x bytes.
params=$(jq -r '.bytes_sent_per_step' ssgd.json)
[ "$params" = $((77652 * 4)) ] || fail "ssgd bytes_sent_per_step $params != $((77652 * 4))"

expect_error "unknown --model 'resnet19'" "$BIN" run --steps 2 --db t.db --workload resnet --model resnet19 --dataset "$IMAGES"
expect_error "needs images" "$BIN" run --steps 2 --db t.db --workload resnet --dataset "synthetic:n=100,d=1000,density=0.01,classes=3"
mkdir -p cifar
expect_error "data_batch_1.bin: no such file" "$BIN" run --steps 2 --db t.db --workload resnet --dataset "cifar10:$WORK/cifar"
echo PASS
