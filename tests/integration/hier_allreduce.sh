# Two-level all-reduce on hier:GxW topologies (Communicator::set_hierarchy, MPI backend):
# reduce-scatter inside each group, all-reduce of each shard between the groups, all-gather
# inside the group, blocking and non-blocking (ssgd --overlap: three chained phases).
#  - 2 ranks, hier:2x1: every phase runs (groups of one rank); a sum of two floats is exact
#    and commutative, so the result equals the flat all-reduce's bit for bit;
#  - 4 ranks, hier:2x2: the same gradients summed as (a+b)+(c+d): equal to the flat run to
#    float rounding; blocking and overlapped two-level runs are bit-identical (same phases);
#  - the run's stored config says which all-reduce ran; bytes per step are the ring's.
source "$(dirname "$0")/common.bash"

common=(--dataset "$SMALL" --steps 24 --batch 16 --lr 0.05 --seed 5 --db t.db --eval-every 12 --warmup 2)
run() {
  local out="$1"
  shift
  "$BIN" run "${common[@]}" "$@" --save-params "$out" > "$out.txt" 2>&1 || { cat "$out.txt"; fail "run failed: $*"; }
}

run flat2.bin --workers 2 --topology complete
run hier2.bin --workers 2 --topology hier:2x1
cmp flat2.bin hier2.bin || fail "two-level all-reduce on hier:2x1 differs from the flat one"
id=$(last_run_id hier2.bin.txt)
[ "$(sql t.db "select json_extract(config_json, '$.allreduce') from runs where id=$id")" = "two-level: 2 groups of 1" ] ||
  fail "hier:2x1 run does not record its two-level all-reduce"
idf=$(last_run_id flat2.bin.txt)
[ "$(sql t.db "select json_extract(config_json, '$.allreduce') is null from runs where id=$idf")" = 1 ] ||
  fail "a flat run records a two-level all-reduce"

run flat4.bin --workers 4 --topology complete
run hier4.bin --workers 4 --topology hier:2x2
compare_params hier4.bin flat4.bin 1e-6 || fail "two-level all-reduce on hier:2x2 differs from the flat one"
run hier4o.bin --workers 4 --topology hier:2x2 --overlap true
cmp hier4.bin hier4o.bin || fail "non-blocking two-level all-reduce differs from the blocking one"
id4=$(last_run_id hier4.bin.txt)
[ "$(sql t.db "select json_extract(config_json, '$.allreduce') from runs where id=$id4")" = "two-level: 2 groups of 2" ] ||
  fail "hier:2x2 run does not record its two-level all-reduce"
# ring accounting: 2(n-1)/n of the gradient's bytes per rank per step, flat or two-level
[ "$(sql t.db "select count(distinct bytes_sent) from steps where run_id=$id4")" = 1 ] || fail "bytes per step vary"
[ "$(sql t.db "select cast(bytes_sent as int) from steps where run_id=$id4 limit 1")" = \
  "$(sql t.db "select cast(bytes_sent as int) from steps where run_id=$(last_run_id flat4.bin.txt) limit 1")" ] ||
  fail "two-level bytes per step differ from the ring's"
echo "ok"
