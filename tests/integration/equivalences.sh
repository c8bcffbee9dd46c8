# The equivalences of docs/algorithms.md on real MPI ranks (plain SGD, same seed):
#  - localsgd with H=1 on 2 ranks gives the same final parameters as ssgd on 2 ranks;
#  - the same seed twice gives bit-identical parameters;
#  - a 1-worker run gives the same model whether launched alone or under mpiexec -n 1.
# Tolerance: averaging models vs averaging gradients rounds differently in float32;
# 1e-5 relative after 60 steps is far below any real divergence (which is O(lr)).
source "$(dirname "$0")/common.bash"

common=(--dataset "$SMALL" --steps 60 --batch 32 --lr 0.05 --momentum 0 --seed 11 --db t.db)
"$BIN" run --workers 2 --algo ssgd "${common[@]}" --save-params ssgd.bin > /dev/null || fail "ssgd run failed"
"$BIN" run --workers 2 --algo localsgd --period 1 "${common[@]}" --save-params local.bin > /dev/null ||
  fail "localsgd run failed"
compare_params local.bin ssgd.bin 1e-5 || fail "localsgd H=1 differs from ssgd"

"$BIN" run --workers 2 --algo ssgd "${common[@]}" --save-params ssgd2.bin > /dev/null || fail "repeat failed"
cmp ssgd.bin ssgd2.bin || fail "same seed gave different parameters"

"$BIN" run --workers 2 --algo localsgd --period 4 "${common[@]}" --save-params local4.bin > /dev/null ||
  fail "localsgd H=4 failed"
if cmp -s local4.bin ssgd.bin; then fail "localsgd H=4 should differ from ssgd"; fi

"$BIN" run --workers 1 --algo ssgd "${common[@]}" --save-params one.bin > /dev/null || fail "1-worker run failed"
"$MPIEXEC" -n 1 "$BIN" run --workers 1 --algo ssgd "${common[@]}" --save-params one_mpi.bin > /dev/null ||
  fail "1-worker run under mpiexec failed"
cmp one.bin one_mpi.bin || fail "1-worker run differs under mpiexec"
echo PASS
