# Equivalences of the part-2 variants on 2 real MPI ranks (same seed, same final parameters):
#  - zero (no quantisation) = ssgd, bit-identical, with momentum (reduce-scatter adds the
#    same two values as the all-reduce; the shard step is the same elementwise update);
#  - dpsgd on complete (W = 1/2 everywhere on 2 ranks) = ssgd within 1e-5 relative
#    (averaging models instead of gradients rounds differently; plain SGD);
#  - ssgd --compress topk:1 and qsgd:bits=32 = ssgd bit-identical; powersgd at full rank
#    (rank ≥ m of every layer) = ssgd within 1e-4;
#  - on 1 worker dpsgd (both delays) and zero equal serial ssgd bit for bit;
#  - the recorded bytes per step equal each variant's formula (docs/algorithms.md).
source "$(dirname "$0")/common.bash"

# d=200, 4 classes: 804 parameters = 3216 bytes (weights 800 viewed 25×32 by PowerSGD, bias 4 as 2×2).
common=(--dataset "$SMALL" --steps 60 --batch 32 --lr 0.05 --seed 11 --db t.db)
run2() { "$BIN" run --workers 2 "$@" > out.txt 2>&1 || { cat out.txt; fail "run failed: $*"; }; }
bytes_of_last_run() { sql t.db "select bytes_sent_per_step from summaries order by run_id desc limit 1"; }
acc_of_last_run() { sql t.db "select final_test_acc from summaries order by run_id desc limit 1"; }
# expect_acc NAME MIN: the last run's final test accuracy is at least MIN.
expect_acc() {
  local acc
  acc=$(acc_of_last_run)
  awk -v a="$acc" -v m="$2" 'BEGIN{exit !(a >= m)}' || fail "$1: final accuracy $acc below $2"
  echo "ok: $1 reaches accuracy $acc (>= $2)"
}
expect_bytes() {
  local got
  got=$(bytes_of_last_run)
  awk -v g="$got" -v w="$2" 'BEGIN{exit !(g+0 == w+0)}' || fail "$1: recorded $got bytes per step, formula says $2"
  echo "ok: $1 sends $got bytes per step"
}

run2 --algo ssgd "${common[@]}" --momentum 0.9 --save-params ssgd_m.bin
run2 --algo zero "${common[@]}" --momentum 0.9 --save-params zero_m.bin
cmp ssgd_m.bin zero_m.bin || fail "zero differs from ssgd"
expect_bytes zero 3216  # 2 · (n−1)/n · 3216
grep -q '"model-state-bytes":' <(sql t.db "select config_json from runs order by id desc limit 1") ||
  fail "zero: model-state-bytes not stored"
ssgd_acc=$(acc_of_last_run)  # (of the zero run: the same model)
# 4 bits with groups of 1 value: scale = |v|/7, every code is ±7, dequantisation is exact
# up to rounding: the whole quantised path (all-to-all gradients, weight differences) = ssgd.
run2 --algo zero "${common[@]}" --momentum 0.9 --zero-bits 4 --zero-group 1 --save-params zero4g1.bin
compare_params zero4g1.bin ssgd_m.bin 1e-5 || fail "zero 4-bit with group 1 differs from ssgd"
run2 --algo zero "${common[@]}" --momentum 0.9 --zero-bits 4 --save-params zero4.bin
if cmp -s zero4.bin ssgd_m.bin; then fail "zero 4-bit should differ from ssgd"; fi
expect_acc "zero 4-bit" "$(awk -v a="$ssgd_acc" 'BEGIN{print a - 0.03}')"
expect_bytes "zero 4-bit" 440  # grads 4·55·1/2·2 + weights (n−1)·4·55, 55 = ⌈402/128⌉ + ⌈402/8⌉

run2 --algo ssgd "${common[@]}" --momentum 0 --save-params ssgd.bin
run2 --algo dpsgd --topology complete "${common[@]}" --momentum 0 --save-params dpsgd.bin
compare_params dpsgd.bin ssgd.bin 1e-5 || fail "dpsgd on complete differs from ssgd"
expect_bytes dpsgd 3216  # one neighbour · 3216
run2 --algo dpsgd --dpsgd-delay 1 "${common[@]}" --momentum 0 --save-params dpsgd1.bin
if cmp -s dpsgd1.bin ssgd.bin; then fail "dpsgd delay 1 (gradient at the local model) should differ"; fi
expect_acc "dpsgd delay 1" 0.6
[ "$(sql t.db "select count(*) from steps where run_id=(select max(run_id) from summaries) and timed=1 and overlap_s>0")" -gt 0 ] ||
  fail "dpsgd delay 1 recorded no overlap"

for c in topk:1 qsgd:bits=32; do
  run2 --algo ssgd --compress "$c" "${common[@]}" --momentum 0 --save-params c.bin
  cmp c.bin ssgd.bin || fail "--compress $c differs from no compression"
  echo "ok: --compress $c = ssgd"
done
expect_bytes qsgd:bits=32 3216  # (n−1)·4·804
run2 --algo ssgd --compress powersgd:rank=64 "${common[@]}" --momentum 0 --save-params p.bin
compare_params p.bin ssgd.bin 1e-4 || fail "powersgd at full rank differs from ssgd"
# Compressed runs learn (4 classes: chance is 0.25) and send what their formulas say.
run2 --algo ssgd --compress topk:0.01 "${common[@]}" --momentum 0 --save-params t.bin
expect_bytes topk:0.01 72  # (n−1)·8·⌈0.01·804⌉
expect_acc topk:0.01 0.6
run2 --algo ssgd --compress qsgd:bits=4 "${common[@]}" --momentum 0 --save-params q.bin
expect_bytes qsgd:bits=4 412  # (n−1)·4·(⌈804/512⌉ + ⌈804·4/32⌉)
expect_acc qsgd:bits=4 0.6
run2 --algo ssgd --compress powersgd:rank=2 "${common[@]}" --momentum 0 --save-params p2.bin
expect_bytes powersgd:rank=2 488  # 4·(25·2 + 2·2) + 4·(32·2 + 2·2)
expect_acc powersgd:rank=2 0.6
run2 --algo ssgd --compress qsgd:bits=4 "${common[@]}" --momentum 0 --save-params q2.bin
cmp q.bin q2.bin || fail "qsgd is not reproducible with the same seed"

one=(--workers 1 "${common[@]}" --momentum 0.9)
"$BIN" run --algo ssgd "${one[@]}" --save-params one.bin > /dev/null || fail "1-worker ssgd failed"
for a in "dpsgd" "dpsgd --dpsgd-delay 1" "zero"; do
  # shellcheck disable=SC2086
  "$BIN" run --algo $a "${one[@]}" --save-params one_a.bin > /dev/null || fail "1-worker $a failed"
  cmp one.bin one_a.bin || fail "$a on 1 worker differs from serial SGD"
  echo "ok: $a on 1 worker = serial"
done
echo PASS
