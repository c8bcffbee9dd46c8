# The threaded variants learn, with real OS threads on 2 MPI ranks (2 threads each), at the
# same number of samples as ssgd (--epochs: a step of T threads trains T batches per rank):
#  - hogwild on a sparse SVM (rcv1-like synthetic rows, 1 % density) converges to within 1
#    point of ssgd's test accuracy, across ps (1 worker + 1 server) and across gossip;
#  - lasgd on the Fashion-MNIST SVM reaches within 2 points of ssgd (as algos1_accuracy.sh),
#    pdasgd with S = 2 within 5 (skipped without Fashion-MNIST).
source "$(dirname "$0")/common.bash"

SPARSE="synthetic:n=16000,d=4000,density=0.01,classes=2,noise=0.02,test=2000,sparse=true"
common=(--workers 2 --dataset "$SPARSE" --epochs 2 --batch 32 --seed 5 --db t.db --eval-every 1000000 --lr 0.5)
within() {  # within NAME A BASE POINTS
  echo "$1: $2 (ssgd $3)"
  awk -v a="$2" -v b="$3" -v p="$4" 'BEGIN{exit !(a >= b - p && b > 0.6)}' ||
    fail "$1: accuracy $2 is more than $4 below ssgd's $3"
}
base=$(acc --algo ssgd)
within "hogwild --across gossip T=2 (sparse)" "$(acc --algo hogwild --across gossip --local-threads 2)" "$base" 0.01
# ps with 1 worker and 1 server: ssgd's samples are those of 1 worker.
base1=$(acc --algo ssgd --workers 1)
within "hogwild --across ps T=2 (sparse)" "$(acc --algo hogwild --across ps --local-threads 2)" "$base1" 0.01
id=$(sql t.db "SELECT max(id) FROM runs")
[[ "$(sql t.db "SELECT count(*) FROM steps WHERE run_id=$id AND rank=0 AND staleness IS NOT NULL")" -gt 0 ]] ||
  fail "hogwild --across ps stored no staleness"

skip_without_fashion_mnist
common=(--workers 2 --dataset fashion-mnist --epochs 0.5 --batch 64 --seed 3 --db t.db --eval-every 1000000 --lr-schedule cosine --lr 0.4)
base=$(acc --algo ssgd)
within "lasgd H=8 T=2" "$(acc --algo lasgd --period 8 --local-threads 2)" "$base" 0.02
# Stale gradients cost accuracy at ssgd's lr here (measured: S = 1 0.793, S = 2 0.771 against
# ssgd's 0.813): pdasgd is checked to learn, 5 points being the bound of what was measured.
within "pdasgd S=2" "$(acc --algo pdasgd --pd-staleness 2)" "$base" 0.05
echo PASS
