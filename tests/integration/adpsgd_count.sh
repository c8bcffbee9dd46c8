# adpsgd on 2 MPI ranks counts its averagings exactly: each active averaging increments the
# passive's window version once under the window lock, and a passive step writes back the
# version it read, so the versions in the passives' windows at the end must add up to the
# averagings the actives report (a lost update leaves fewer; a torn read of the version word
# leaves garbage), and the active's own window, which nobody writes after setup, must still
# hold version 0 (a mis-addressed window shows another window's data there). Five runs with different seeds, a straggler on the passive in two of them
# so that averagings land while it computes (staleness > 0).
source "$(dirname "$0")/common.bash"

SET="synthetic:n=2000,d=100,classes=4,noise=0.02,test=400"
steps=150
for seed in 1 2 3 4 5; do
  extra=()
  [ $seed -le 2 ] && extra=(--straggler "fixed:rank=1,delay=2ms")
  timeout 300 "$BIN" run --workers 2 --algo adpsgd --dataset "$SET" --steps $steps --batch 16 --lr 0.05 --seed $seed \
    --db t.db --eval-every $steps "${extra[@]}" > out.txt 2>&1 || { cat out.txt; fail "adpsgd run (seed $seed) failed"; }
  line=$(grep "adpsgd averagings:" out.txt) || { cat out.txt; fail "no averaging count printed (seed $seed)"; }
  done_n=$(sed -nE 's/^adpsgd averagings: ([0-9]+) done by actives, ([0-9]+) applied in passive windows$/\1/p' <<<"$line")
  applied=$(sed -nE 's/^adpsgd averagings: ([0-9]+) done by actives, ([0-9]+) applied in passive windows$/\2/p' <<<"$line")
  [ "$done_n" = "$steps" ] || fail "seed $seed: the active reports $done_n averagings, expected one per step ($steps)"
  [ "$applied" = "$done_n" ] || fail "seed $seed: $applied averagings applied in the passive's window, $done_n done: updates lost"
  grep -qE "^adpsgd rank 0 \(active\): $steps averagings, own window version 0$" out.txt ||
    { grep "^adpsgd rank 0" out.txt; fail "seed $seed: the active's own window changed (nobody writes it after setup)"; }
  if [ $seed -le 2 ]; then
    id=$(sql t.db "select max(id) from runs")
    stale=$(sql t.db "select max(staleness) from steps where run_id=$id and rank=1")
    awk -v s="$stale" 'BEGIN{exit !(s > 0)}' || fail "seed $seed: the slow passive recorded staleness $stale, expected > 0"
  fi
  echo "ok: seed $seed: $done_n averagings done, $applied applied ${extra[*]}"
done
echo PASS
