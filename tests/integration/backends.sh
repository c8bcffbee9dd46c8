# The backend table from the command line (docs/cli.md, "dsgd-bench list backends"): the listing
# says which rows run here and why not; what a row lacks is refused up front (exit 2, one
# message naming the flag, no database created), before any launch; calibrate takes its
# ranks' communicator from the table.
source "$(dirname "$0")/common.bash"

"$BIN" list backends > list.txt
grep -Eq '^mpi +available' list.txt || { cat list.txt; fail "mpi is not listed as available"; }
grep -Eq '^sim +available' list.txt || { cat list.txt; fail "sim is not listed as available"; }
if [[ ! -e /dev/nvidia0 && ! -e /dev/nvidiactl ]]; then
  grep -Eq '^nccl +not available: .*(no CUDA device|no GPU to use)' list.txt || { cat list.txt; fail "nccl's row does not say why"; }
fi
grep -Eq 'refuses: adpsgd \(one-sided windows\), ps \(one-sided windows\)' list.txt ||
  { cat list.txt; fail "nccl's refusals are not listed"; }

R=("$BIN" run --db t.db --steps 5 --batch 16 --dataset "$SMALL")
expect_error "--backend nccl: --algo adpsgd needs one-sided windows, which backend nccl lacks" \
  "${R[@]}" --backend nccl --algo adpsgd
expect_error "--backend nccl: --algo ps needs one-sided windows" "${R[@]}" --backend nccl --algo ps
expect_error "--compress: runs on host memory only" "${R[@]}" --backend nccl --compress topk:0.1
if [[ ! -e /dev/nvidia0 ]]; then
  expect_error "--backend nccl is not available on this machine" "${R[@]}" --backend nccl
fi
expect_error "--backend: unknown backend 'carrier-pigeon'" "${R[@]}" --backend carrier-pigeon
expect_error "--timing-only: needs a backend with a virtual clock" "${R[@]}" --timing-only true
[[ ! -e t.db ]] || fail "a refused run created the database"
expect_error "calibrate a real fabric" "$BIN" calibrate --backend sim --quick --db c.db
expect_error "--backend nccl is not available on this machine" "$BIN" calibrate --backend nccl --quick --db c.db
echo "backends: ok"
