# Each SGD variant of algorithms/ reaches within 2 points of ssgd's test accuracy on the
# Fashion-MNIST SVM at the same number of samples (2 workers, half an epoch each, same seed,
# cosine learning-rate decay so that the final iterate is not dominated by SGD noise).
# Skipped (exit 0 with a note) when the Fashion-MNIST files are not installed.
source "$(dirname "$0")/common.bash"

skip_without_fashion_mnist

common=(--workers 2 --dataset fashion-mnist --epochs 0.5 --batch 64 --seed 3 --db t.db --eval-every 1000000 --lr-schedule cosine)
base=$(acc --algo ssgd --lr 0.4)
echo "ssgd: $base"
check() {
  local name="$1"
  shift
  local a
  a=$(acc "$@")
  echo "$name: $a (ssgd $base)"
  awk -v a="$a" -v b="$base" 'BEGIN{exit !(a >= b - 0.02)}' || fail "$name: accuracy $a is more than 2 points below ssgd's $base"
}
check "localsgd H=8" --algo localsgd --period 8 --lr 0.4
check "post-local K=100 H=8" --algo localsgd --period 8 --post-local 100 --lr 0.4
check "diloco H=8 (AdamW inner, constant lr)" --algo diloco --period 8 --lr 0.02 --lr-schedule constant
check "cocod k=8" --algo cocod --period 8 --lr 0.4
check "dasgd H=8 d=4" --algo dasgd --period 8 --delay 4 --lr 0.4
check "overlap-local tau=8 alpha=0.6 beta=0.5" --algo overlap-local --period 8 --pull-alpha 0.6 --slow-momentum 0.5 --lr 0.4
check "ssgd bucketed overlap" --algo ssgd --overlap true --bucket-mb 0.01 --lr 0.4
check "palsgd H=8 d=4 p=0.1 alpha=0.5" --algo palsgd --period 8 --delay 4 --pull-prob 0.1 --pull-alpha 0.5 --lr 0.4
check "mtdao H=8 H_m=16 H_v=32 (AdamW, constant lr)" --algo mtdao --period 8 --period-m 16 --period-v 32 --lr 0.02 \
  --lr-schedule constant
check "osp f=0.25" --algo osp --osp-fraction 0.25 --lr 0.4
check "oldsgd H=8 (overlapped gossip)" --algo oldsgd --period 8 --lr 0.4
echo PASS
