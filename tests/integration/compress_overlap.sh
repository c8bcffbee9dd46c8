# ssgd --compress with --overlap true (each bucket compressed by its own compressor, started
# from the backward hook through the compressors' non-blocking form), 2 MPI ranks, same seed:
#  - one bucket = blocking ssgd --compress, bit-identical (topk, qsgd, PowerSGD);
#  - one bucket per layer at identity settings (topk:1, qsgd:bits=32) = uncompressed
#    ssgd --overlap, bit-identical (the rank-order sum of two values is the all-reduce's);
#  - bytes per step = Σ over buckets of the compressor's formula; communication overlaps.
source "$(dirname "$0")/common.bash"

# d=200, 4 classes: layers "weights" (800 floats) and "bias" (4): per-layer buckets.
common=(--workers 2 --dataset "$SMALL" --steps 40 --batch 32 --seed 11 --db t.db --warmup 0 --lr 0.05 --momentum 0)
run() {
  local out="$1"
  shift
  "$BIN" run "${common[@]}" --algo ssgd "$@" --save-params "$out" > "$out.txt" 2>&1 || { cat "$out.txt"; fail "run failed: $*"; }
}
last() { sql t.db "select $1 from summaries order by run_id desc limit 1"; }

for c in topk:0.1 qsgd:bits=4 powersgd:rank=2; do
  run b.bin --compress "$c"
  run o.bin --compress "$c" --overlap true --bucket-mb 100
  cmp -s o.bin b.bin || fail "ssgd --overlap (one bucket) --compress $c differs from blocking --compress $c"
  echo "ok: one bucket --compress $c = blocking (bit-identical)"
done

run plain.bin --overlap true --bucket-mb 0
for c in topk:1 qsgd:bits=32; do
  run c.bin --compress "$c" --overlap true --bucket-mb 0
  cmp -s c.bin plain.bin || fail "ssgd --overlap --bucket-mb 0 --compress $c differs from uncompressed"
  echo "ok: per-layer buckets --compress $c = ssgd --overlap (bit-identical)"
done

run q.bin --compress qsgd:bits=4 --overlap true --bucket-mb 0
# bias: (⌈4/512⌉ + ⌈4·4/32⌉) = 2 words; weights: ⌈800/512⌉ + ⌈800·4/32⌉ = 102 words; (n−1)·4·104
got=$(last bytes_sent_per_step)
awk -v g="$got" 'BEGIN{d=g-416; if(d<0)d=-d; exit !(d < 1e-6)}' || fail "per-layer qsgd:bits=4: $got bytes per step, expected 416"
echo "ok: per-layer qsgd:bits=4 sends $got bytes per step"
awk -v a="$(last final_test_acc)" 'BEGIN{exit !(a >= 0.6)}' || fail "per-layer qsgd:bits=4 accuracy $(last final_test_acc)"
[ "$(sql t.db "select count(*) from steps where run_id=(select max(run_id) from summaries) and timed=1 and overlap_s>0")" -gt 0 ] ||
  fail "ssgd --overlap --compress recorded no overlap"
echo PASS
