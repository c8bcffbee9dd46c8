# ps --ps-mode async (parameter server: 2 workers and 1 dedicated server, each push applied
# at once) trains the Fashion-MNIST SVM to within 2 points of ssgd on 2 workers at the same
# number of samples (the settings of algos1_accuracy.sh; the data is sharded among the 2
# workers, so both runs see the same samples). Skipped (exit 0 with a note) when the Fashion-MNIST
# files are not installed.
source "$(dirname "$0")/common.bash"

if ! "$BIN" run --dataset fashion-mnist --steps 1 --batch 8 --db probe.db > /dev/null 2>&1; then
  echo "SKIP: fashion-mnist is not installed (scripts/install-deps.sh)"
  exit 0
fi

common=(--dataset fashion-mnist --epochs 0.5 --batch 64 --seed 3 --db t.db --eval-every 1000000 --lr-schedule cosine --lr 0.4)
acc() {
  local out id
  out=$("$BIN" run "${common[@]}" "$@") || fail "run failed: $*"
  id=$(echo "$out" | tail -n 1 | sed 's/run_id=//')
  sql t.db "select test_acc from evals where run_id=$id order by step desc limit 1"
}
base=$(acc --workers 2 --algo ssgd)
a=$(acc --workers 3 --algo ps --ps-placement dedicated --ps-mode async)
echo "ssgd: $base, ps async: $a"
awk -v a="$a" -v b="$base" 'BEGIN{exit !(a >= b - 0.02)}' || fail "ps async accuracy $a is more than 2 points below ssgd's $base"
echo PASS
