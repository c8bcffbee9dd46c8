# dreamddp --compress (one compressor per layer, started from the backward hook through the
# compressors' non-blocking form; x_l ← x̂_l + C_avg(x'_l − x̂_l); docs/algorithms.md), 2 MPI
# ranks, same seed, on an emulated 1 Mbit/s link (no all-reduce hides behind the SVM's
# microseconds of backward, so the schedule has no extra syncs and is the same with and
# without compression; each run checks that from the printed schedule):
#  - identity settings (topk:1, qsgd:bits=32, powersgd at full rank) = uncompressed dreamddp,
#    to float rounding (x̂ + avg(x' − x̂) rounds differently from avg(x')), at H = 1 and H = 2;
#  - real compression changes the run, still learns, and records each layer's compressor
#    bytes once per H steps;
#  - a ResNet-8 with PowerSGD (two collectives per layer, launched from the hooks of many
#    layers) completes on 2 ranks with communication in flight during backward.
source "$(dirname "$0")/common.bash"

# d=200, 4 classes: layers "weights" (800 floats, viewed 25×32 by PowerSGD) and "bias" (4).
common=(--workers 2 --dataset "$SMALL" --steps 48 --batch 32 --seed 11 --db t.db --warmup 0 --lr 0.05
  --bandwidth 1Mbps --latency 1ms --schedule true)
# run / last / expect_bytes: tests/integration/common.bash (they use this file's `common`).
slots() { grep -E '^ +[0-9]+ ' "$1.txt" | awk '{print $1, $NF}'; }  # slot → layers, from --schedule

for h in 1 2; do
  run base.bin --algo dreamddp --period "$h"
  grep -qE '^ +[0-9]+ .*\[\+' base.bin.txt && { cat base.bin.txt; fail "H=$h: the schedule has extra syncs on a 1 Mbit/s link"; }
  for c in topk:1 qsgd:bits=32 powersgd:rank=32; do
    run c.bin --algo dreamddp --period "$h" --compress "$c"
    [ "$(slots c.bin)" = "$(slots base.bin)" ] || { cat base.bin.txt c.bin.txt; fail "H=$h --compress $c: another schedule"; }
    compare_params c.bin base.bin 1e-5 || fail "dreamddp H=$h --compress $c differs from dreamddp H=$h"
    echo "ok: dreamddp H=$h --compress $c = dreamddp H=$h"
  done
done

# H = 2: each layer averaged once per 2 steps, so bytes per step = Σ_l (bytes per call on l) / 2.
run base.bin --algo dreamddp --period 2
run q.bin --algo dreamddp --period 2 --compress qsgd:bits=4
# weights: ⌈800/512⌉ + ⌈800·4/32⌉ = 102 words; bias: 1 + 1 = 2 words; (n−1)·4·104 / 2
expect_bytes "dreamddp H=2 qsgd:bits=4" 208
cmp -s q.bin base.bin && fail "qsgd:bits=4 had no effect on dreamddp"
run t.bin --algo dreamddp --period 2 --compress topk:0.1
# weights: k = 80, bias: k = ⌈0.4⌉ = 1; (n−1)·8·81 / 2
expect_bytes "dreamddp H=2 topk:0.1" 324
awk -v a="$(last final_test_acc)" 'BEGIN{exit !(a >= 0.6)}' || fail "dreamddp topk:0.1 accuracy $(last final_test_acc)"
run p.bin --algo dreamddp --period 2 --compress powersgd:rank=2
# weights: P 25·2, Q 32·2 floats; bias (4 floats: m = 2, r' = 2): P 2·2, Q 2·2; 2(n−1)/n·4·(54 + 68) / 2
expect_bytes "dreamddp H=2 powersgd:rank=2" 244

IMAGES="synthetic:shape=3x8x8,classes=4,n=256,test=64,noise=0.5"
"$BIN" run --workers 2 --workload resnet --model resnet8 --dataset "$IMAGES" --algo dreamddp --period 2 --steps 8 \
  --eval-every 4 --batch 8 --lr 0.05 --momentum 0.9 --bandwidth 1Gbps --latency 1ms --compress powersgd:rank=2 \
  --db t.db > resnet.txt 2> resnet.err || { cat resnet.txt resnet.err; fail "resnet dreamddp --compress failed"; }
id=$(last_run_id resnet.txt)
[ "$(sql t.db "select status from runs where id=$id")" = completed ] || fail "resnet: not completed"
[ "$(sql t.db "select sum(overlap_s) > 0 from steps where run_id=$id")" = 1 ] ||
  fail "resnet dreamddp --compress: no communication in flight during backward"
echo PASS
