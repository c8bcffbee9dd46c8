# --backend nccl without a usable GPU (no driver, no device: the normal case on CI and on the
# build machines): run and calibrate refuse it up front, exit 2, one message naming the reason
# and the backends that are available, no crash and no database. On a machine with a GPU the
# refusal does not apply and this test says so (scripts/gpu-check.sh checks that case).
source "$(dirname "$0")/common.bash"

if command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1; then
  echo "SKIP: a GPU is usable here; the refusal applies without one (scripts/gpu-check.sh runs the nccl backend)"
  exit 0
fi
expect_error "--backend nccl is not available on this machine: .*(no NVIDIA driver|not built|no CUDA device)" \
  "$BIN" run --backend nccl --dataset "$SMALL" --steps 5 --db t.db
grep -q "use --backend mpi" err.txt || { cat err.txt; fail "the refusal does not name the available backends"; }
[ ! -e t.db ] || fail "a refused run created its database"
expect_error "--backend nccl is not available on this machine" \
  "$BIN" calibrate --backend nccl --workers 1 --quick --db c.db
[ ! -e c.db ] || fail "a refused calibration created its database"
"$BIN" list backends > list.txt || fail "list backends failed"
grep -q "^nccl   not available: " list.txt || { cat list.txt; fail "list backends does not mark nccl unavailable"; }
echo "ok: nccl refused without a GPU"
