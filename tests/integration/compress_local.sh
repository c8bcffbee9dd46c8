# Compressors on the model averages of localsgd (Qsparse-local-SGD: the compressed
# difference to the last synchronised model, with error feedback) and on DiLoCo's
# pseudo-gradient, 2 MPI ranks, same seed (docs/algorithms.md):
#  - identity settings (topk:1, qsgd:bits=32) = uncompressed, to float rounding
#    (x̂ + avg(x_i − x̂) rounds differently from avg(x_i));
#  - real compression learns and records the compressor's bytes / H per step;
#  - the gossip variants refuse --compress with a clear message (cocod, dasgd and
#    overlap-local: tests/integration/compress_background.sh).
source "$(dirname "$0")/common.bash"

# d=200, 4 classes: 804 parameters.
common=(--workers 2 --dataset "$SMALL" --steps 60 --batch 32 --seed 11 --db t.db --warmup 0)
# run / last / expect_bytes: tests/integration/common.bash (they use this file's `common`).

run local.bin --algo localsgd --period 4 --lr 0.05
for c in topk:1 qsgd:bits=32; do
  run lc.bin --algo localsgd --period 4 --lr 0.05 --compress "$c"
  compare_params lc.bin local.bin 1e-5 || fail "localsgd --compress $c differs from localsgd"
  cmp -s lc.bin local.bin && echo "(bit-identical)"
done
run post.bin --algo localsgd --period 4 --post-local 20 --lr 0.05
run postc.bin --algo localsgd --period 4 --post-local 20 --lr 0.05 --compress topk:1
compare_params postc.bin post.bin 1e-5 || fail "post-local localsgd --compress topk:1 differs"

run ltk.bin --algo localsgd --period 4 --lr 0.05 --compress topk:0.05
# (n−1)·8·⌈0.05·804⌉ = 328 bytes per average, one average per 4 steps (60 = 15·4)
expect_bytes "localsgd topk:0.05" 82
awk -v a="$(last final_test_acc)" 'BEGIN{exit !(a >= 0.6)}' || fail "localsgd topk:0.05 accuracy $(last final_test_acc)"
cmp -s ltk.bin local.bin && fail "topk:0.05 had no effect"

run dl.bin --algo diloco --period 4 --lr 0.005
run dlc.bin --algo diloco --period 4 --lr 0.005 --compress topk:1
compare_params dlc.bin dl.bin 1e-5 || fail "diloco --compress topk:1 differs from diloco"
run dlq.bin --algo diloco --period 4 --lr 0.005 --compress qsgd:bits=4
# (n−1)·4·(⌈804/512⌉ + ⌈804·4/32⌉) = 412 bytes per average / 4
expect_bytes "diloco qsgd:bits=4" 103
cmp -s dlq.bin dl.bin && fail "qsgd:bits=4 had no effect on diloco"

set +e
"$BIN" run "${common[@]}" --algo dpsgd --compress topk:0.1 > out.txt 2> err.txt
rc=$?
set -e
[ $rc -eq 2 ] || fail "dpsgd --compress: expected exit 2, got $rc"
grep -q -- "--compress: applies to the all-reduce variants .*not dpsgd: it exchanges models point-to-point" err.txt ||
  { cat err.txt; fail "unclear message"; }
echo PASS
