# ps --ps-mode async (parameter server: 2 workers and 1 dedicated server, each push applied
# at once) trains the Fashion-MNIST SVM to within 2 points of ssgd on 2 workers at the same
# number of samples (the settings of algos1_accuracy.sh; the data is sharded among the 2
# workers, so both runs see the same samples). Skipped (exit 0 with a note) when the Fashion-MNIST
# files are not installed.
source "$(dirname "$0")/common.bash"

skip_without_fashion_mnist

common=(--dataset fashion-mnist --epochs 0.5 --batch 64 --seed 3 --db t.db --eval-every 1000000 --lr-schedule cosine --lr 0.4)
base=$(acc --workers 2 --algo ssgd)
a=$(acc --workers 3 --algo ps --ps-placement dedicated --ps-mode async)
echo "ssgd: $base, ps async: $a"
awk -v a="$a" -v b="$base" 'BEGIN{exit !(a >= b - 0.02)}' || fail "ps async accuracy $a is more than 2 points below ssgd's $base"
echo PASS
