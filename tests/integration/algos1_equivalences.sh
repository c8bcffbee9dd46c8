# Equivalences of the SGD variants of algorithms/ on 2 MPI ranks (same seed, docs/algorithms.md):
#  - localsgd --post-local K with K >= steps = ssgd (bit-identical);
#  - dasgd --delay 0 = localsgd (bit-identical); cocod --period k = dasgd --period k --delay k;
#  - diloco with outer lr 1, momentum 0 = localsgd with AdamW inner (1e-5: one rounding per round);
#  - ssgd --overlap true --bucket-mb M (--first-bucket-mb F) = blocking ssgd (bit-identical), one or several buckets;
#  - the variants that delay or anchor differ from localsgd (the knobs do something);
#  - consensus distance is stored at each evaluation where replicas differ, NULL for ssgd.
source "$(dirname "$0")/common.bash"

common=(--workers 2 --dataset "$SMALL" --steps 62 --batch 32 --lr 0.05 --seed 11 --db t.db --eval-every 20)
run() {
  local out="$1"
  shift
  "$BIN" run "${common[@]}" "$@" --save-params "$out" > "$out.txt" || { cat "$out.txt"; fail "run failed: $*"; }
}

run ssgd.bin --algo ssgd
run post.bin --algo localsgd --period 4 --post-local 62
cmp ssgd.bin post.bin || fail "post-local SGD with K >= steps differs from ssgd"
run post20.bin --algo localsgd --period 4 --post-local 20
if cmp -s post20.bin ssgd.bin; then fail "post-local K=20 should differ from ssgd"; fi

run local4.bin --algo localsgd --period 4
run dasgd0.bin --algo dasgd --period 4 --delay 0
cmp local4.bin dasgd0.bin || fail "dasgd with delay 0 differs from localsgd"
run dasgd2.bin --algo dasgd --period 4 --delay 2
if cmp -s dasgd2.bin local4.bin; then fail "dasgd with delay 2 should differ from localsgd"; fi
run cocod.bin --algo cocod --period 4
run dasgd4.bin --algo dasgd --period 4 --delay 4
cmp cocod.bin dasgd4.bin || fail "cocod differs from dasgd with d = k"
if cmp -s cocod.bin local4.bin; then fail "cocod should differ from localsgd"; fi

run adam_local.bin --algo localsgd --period 4 --optimizer adamw --lr 0.005
run diloco1.bin --algo diloco --period 4 --lr 0.005 --outer-lr 1 --outer-momentum 0
compare_params diloco1.bin adam_local.bin 1e-5 || fail "diloco (outer lr 1, momentum 0) differs from localsgd+AdamW"
run diloco.bin --algo diloco --period 4 --lr 0.005
compare_params diloco.bin adam_local.bin 1e-3 && fail "diloco's outer Nesterov step had no effect"

idc=$(last_run_id cocod.bin.txt)
[ "$(sql t.db "select sum(overlap_s) > 0 from steps where run_id=$idc")" = 1 ] ||
  fail "cocod recorded no communication in flight during the local steps"
[ "$(sql t.db "select count(*) from steps where run_id=$idc and bytes_sent > 0")" = $((2 * (62 / 4))) ] ||
  fail "cocod: expected one all-reduce per 4 steps on each rank (15 each)"

run overlap.bin --algo overlap-local --period 4 --pull-alpha 0.5 --slow-momentum 0.3
if cmp -s overlap.bin local4.bin; then fail "overlap-local should differ from localsgd"; fi

# Buckets: 1 MB holds both SVM layers of this model (4·(200·4+4) bytes) in one bucket;
# 1e-6 MB gives one bucket per layer.
run bucket1.bin --algo ssgd --overlap true --bucket-mb 1
run bucket2.bin --algo ssgd --overlap true --bucket-mb 0.000001
cmp ssgd.bin bucket1.bin || fail "one-bucket overlapped ssgd differs from blocking ssgd"
cmp ssgd.bin bucket2.bin || fail "per-layer buckets differ from blocking ssgd"
run bucket3.bin --algo ssgd --overlap true --bucket-mb 1 --first-bucket-mb 0.000001
cmp ssgd.bin bucket3.bin || fail "a small first bucket (then one for the rest) differs from blocking ssgd"
id1=$(last_run_id bucket1.bin.txt)
[ "$(sql t.db "select max(overlap_s) > 0 from steps where run_id=$id1")" = 1 ] || fail "bucketed run has no overlap"

# Consensus distance: NULL for ssgd, a number at every evaluation for localsgd; > 0 at an
# evaluation that falls between two averages (step 62: 62 = 15·4 + 2 local steps).
ids=$(last_run_id ssgd.bin.txt)
idl=$(last_run_id local4.bin.txt)
[ "$(sql t.db "select count(*) from evals where run_id=$ids and consensus_distance is not null")" = 0 ] ||
  fail "ssgd stored a consensus distance"
[ "$(sql t.db "select count(*) from evals where run_id=$idl and consensus_distance is null")" = 0 ] ||
  fail "localsgd evaluation without consensus distance"
[ "$(sql t.db "select consensus_distance > 0 from evals where run_id=$idl and step=62")" = 1 ] ||
  fail "localsgd consensus distance is not positive between averages"
[ "$(sql t.db "select consensus_distance = 0 from evals where run_id=$idl and step=0")" = 1 ] ||
  fail "consensus distance at step 0 (identical initialisation) is not 0"
"$BIN" show "$idl" --db t.db --format json --evals | jq -e '.evals[-1].consensus_distance > 0' > /dev/null ||
  fail "show --format json lacks consensus_distance"
"$BIN" show "$ids" --db t.db --format json --evals | jq -e '.evals[-1].consensus_distance == null' > /dev/null ||
  fail "show --format json: ssgd consensus_distance should be null"
echo PASS
