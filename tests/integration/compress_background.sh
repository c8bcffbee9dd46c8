# Compressors on the background averages of cocod, dasgd and overlap-local (the snapshot's
# difference to the last applied average, compressed with error feedback by the
# compressor's non-blocking form; docs/algorithms.md), 2 MPI ranks, same seed:
#  - identity settings (topk:1, qsgd:bits=32, powersgd at full rank) = the uncompressed
#    variant, to float rounding (x̂ + avg(s_i − x̂) rounds differently from avg(s_i));
#  - dasgd with delay 0 = localsgd with the same compressor, bit-identical;
#  - real compression changes the run and records the compressor's bytes / H per step.
source "$(dirname "$0")/common.bash"

# d=200, 4 classes: 804 parameters (an 800-float weight, viewed 25×32 by PowerSGD, and 4 biases).
common=(--workers 2 --dataset "$SMALL" --steps 48 --batch 32 --seed 11 --db t.db --warmup 0 --lr 0.05)
# run / last / expect_bytes: tests/integration/common.bash (they use this file's `common`).

variants=("cocod --period 4" "dasgd --period 4 --delay 2" "overlap-local --period 4 --pull-alpha 0.5 --slow-momentum 0.3")
for v in "${variants[@]}"; do
  read -r -a args <<< "--algo $v"
  run base.bin "${args[@]}"
  for c in topk:1 qsgd:bits=32 powersgd:rank=32; do
    run c.bin "${args[@]}" --compress "$c"
    compare_params c.bin base.bin 1e-5 || fail "$v --compress $c differs from $v"
    echo "ok: $v --compress $c = $v"
  done
done

# dasgd d=0 is localsgd, compressed too (same compressor, seed and steps).
for c in topk:0.1 qsgd:bits=4 powersgd:rank=2; do
  run l.bin --algo localsgd --period 4 --compress "$c"
  run d.bin --algo dasgd --period 4 --delay 0 --compress "$c"
  cmp -s d.bin l.bin || fail "dasgd --delay 0 --compress $c differs from localsgd --compress $c"
  echo "ok: dasgd --delay 0 --compress $c = localsgd --compress $c (bit-identical)"
done

run base.bin --algo cocod --period 4
run ctk.bin --algo cocod --period 4 --compress topk:0.05
# (n−1)·8·⌈0.05·804⌉ = 328 bytes per average, one average per 4 steps
expect_bytes "cocod topk:0.05" 82
cmp -s ctk.bin base.bin && fail "topk:0.05 had no effect on cocod"
run oq.bin --algo overlap-local --period 4 --pull-alpha 0.5 --compress qsgd:bits=4
# (n−1)·4·(⌈804/512⌉ + ⌈804·4/32⌉) = 412 bytes per average; overlap-local launches at 11
# of its 12 rounds (none at the last step, as uncompressed): 412·11/48 per step
expect_bytes "overlap-local qsgd:bits=4" "$(awk 'BEGIN{printf "%.12f", 412 * 11 / 48}')"
run dp.bin --algo dasgd --period 4 --delay 3 --compress powersgd:rank=2
# P: 25·2 + 2·2 = 54 floats, Q: 32·2 + 2·2 = 68 floats; 2(n−1)/n·4·(54 + 68) = 488 bytes / 4
expect_bytes "dasgd powersgd:rank=2" 122
echo PASS
