# adpsgd counts its averagings exactly, on MPI (2 and 4 ranks) and on sim (4 workers): each
# active averaging increments the passive's window version once under the window lock, and a
# passive step writes back the version it read, so the versions in the passives' windows at
# the end must add up to the averagings the actives report (a lost update leaves fewer; a
# torn read of the version word leaves garbage), and every active's own window, which nobody
# writes after setup, must still hold version 0 (a mis-addressed window shows another
# window's data there). On 4 ranks two actives (0, 2) contend for each passive (1, 3) while
# the passive locks its own window: the case of a lock that does not exclude the own rank.
# Several seeds, a straggler on a passive in some of them so that averagings land while it
# computes (staleness > 0). On sim, no rank's last step holds the end-of-run barrier's wait.
source "$(dirname "$0")/common.bash"

SET="synthetic:n=2000,d=100,classes=4,noise=0.02,test=400"
steps=150
# check_counts WORKERS SEED LABEL: reads out.txt of the run just done.
check_counts() {
  local workers=$1 seed=$2 label=$3 actives=$((($1 + 1) / 2))
  local line done_n applied want=$((actives * steps))
  line=$(grep "adpsgd averagings:" out.txt) || { cat out.txt; fail "$label: no averaging count printed"; }
  done_n=$(sed -nE 's/^adpsgd averagings: ([0-9]+) done by actives, ([0-9]+) applied in passive windows$/\1/p' <<<"$line")
  applied=$(sed -nE 's/^adpsgd averagings: ([0-9]+) done by actives, ([0-9]+) applied in passive windows$/\2/p' <<<"$line")
  [ "$done_n" = "$want" ] || fail "$label: the actives report $done_n averagings, expected one per step each ($want)"
  [ "$applied" = "$done_n" ] || fail "$label: $applied averagings applied in the passives' windows, $done_n done: updates lost"
  for ((r = 0; r < workers; r += 2)); do
    grep -qE "^adpsgd rank $r \(active\): $steps averagings, own window version 0$" out.txt ||
      { grep "^adpsgd rank $r" out.txt; fail "$label: active $r's own window changed (nobody writes it after setup)"; }
  done
  echo "ok: $label: $done_n averagings done, $applied applied"
}

for seed in 1 2 3 4 5; do
  extra=()
  [ $seed -le 2 ] && extra=(--straggler "fixed:rank=1,delay=2ms")
  timeout 300 "$BIN" run --workers 2 --algo adpsgd --dataset "$SET" --steps $steps --batch 16 --lr 0.05 --seed $seed \
    --db t.db --eval-every $steps "${extra[@]}" > out.txt 2>&1 || { cat out.txt; fail "adpsgd run (seed $seed) failed"; }
  check_counts 2 $seed "mpi 2 ranks, seed $seed ${extra[*]}"
  if [ $seed -le 2 ]; then
    id=$(sql t.db "select max(id) from runs")
    stale=$(sql t.db "select max(staleness) from steps where run_id=$id and rank=1")
    awk -v s="$stale" 'BEGIN{exit !(s > 0)}' || fail "seed $seed: the slow passive recorded staleness $stale, expected > 0"
  fi
done

# 4 ranks on this machine's cores (oversubscribed: more contention, not less).
for seed in 1 2 3; do
  extra=()
  [ $seed -eq 1 ] && extra=(--straggler "fixed:rank=3,delay=2ms")
  timeout 300 "$BIN" run --workers 4 --algo adpsgd --dataset "$SET" --steps $steps --batch 16 --lr 0.05 --seed $seed \
    --db t.db --eval-every $steps "${extra[@]}" > out.txt 2>&1 || { cat out.txt; fail "adpsgd 4 ranks (seed $seed) failed"; }
  check_counts 4 $seed "mpi 4 ranks, seed $seed ${extra[*]}"
done

# sim: the same counts through SimWorld's windows (compute profile from the last real run).
prof=$(sql t.db "select max(id) from runs")
for seed in 1 2; do
  timeout 300 "$BIN" run --backend sim --profile-from "$prof" --workers 4 --algo adpsgd --dataset "$SET" --steps $steps --batch 16 --lr 0.05 \
    --seed $seed --db t.db --eval-every $steps --straggler "fixed:rank=1,delay=2ms" > out.txt 2>&1 ||
    { cat out.txt; fail "adpsgd sim 4 workers (seed $seed) failed"; }
  check_counts 4 $seed "sim 4 workers, seed $seed"
  # The actives run ahead of the slow passive and meet it only after their last step: that
  # wait (~steps x 2 ms of virtual time) belongs to no step (Algorithm::end_run), so no
  # rank's last step may stand out from its others.
  id=$(sql t.db "select max(id) from runs")
  for r in 0 1 2 3; do
    last=$(sql t.db "select step_s from steps where run_id=$id and rank=$r and step=$((steps - 1))")
    most=$(sql t.db "select max(step_s) from steps where run_id=$id and rank=$r and timed=1 and step<$((steps - 1))")
    awk -v l="$last" -v m="$most" 'BEGIN{exit !(l > 0 && l <= 2 * m)}' ||
      fail "sim seed $seed: rank $r's last step took $last s, its others at most $m s: the end-of-run barrier was counted in it"
  done
done
echo PASS
