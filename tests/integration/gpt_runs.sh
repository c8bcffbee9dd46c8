# The transformer workload end to end: a tiny GPT on synthetic-text and on fortunes, single
# rank and ssgd / localsgd under 2 ranks (few steps each), its rows in the database; and
# the bad inputs, each one clear message.
source "$(dirname "$0")/common.bash"

TEXT="synthetic-text:n=20000,test=2000"
GPT=(--workload transformer --model gpt --layers 1 --d-model 32 --heads 2 --seq 16 --vocab 256)

# Single rank: the loss falls from ln 256 = 5.55 nats towards the language's 1.06 entropy.
"$BIN" run "${GPT[@]}" --dataset "$TEXT" --steps 60 --eval-every 30 --batch 8 --lr 0.1 --momentum 0.9 \
  --db t.db > out.txt 2> err.txt || { cat out.txt err.txt; fail "single-rank run failed"; }
id=$(last_run_id out.txt)
loss=$(sql t.db "select test_loss from evals where run_id=$id order by step desc limit 1")
echo "synthetic-text test loss after 60 steps: $loss nats/token"
awk -v l="$loss" 'BEGIN{exit !(l < 3.5 && l > 1.0)}' || fail "test loss $loss not in (1.0, 3.5)"
[ "$(sql t.db "select workload from runs where id=$id")" = transformer ] || fail "workload not recorded"

# ssgd and localsgd under mpiexec -n 2.
for algo in ssgd localsgd; do
  "$BIN" run --workers 2 --algo "$algo" "${GPT[@]}" --dataset "$TEXT" --steps 8 --eval-every 4 --batch 4 \
    --db t.db > out.txt 2> err.txt || { cat out.txt err.txt; fail "$algo on 2 ranks failed"; }
  id=$(last_run_id out.txt)
  [ "$(sql t.db "select status from runs where id=$id")" = completed ] || fail "$algo: status not completed"
  [ "$(sql t.db "select count(distinct rank) from steps where run_id=$id")" = 2 ] || fail "$algo: not 2 ranks"
  echo "ok: $algo on 2 ranks, run $id"
done

# The Debian fortunes text (a few steps; the full convergence run is not for CI).
"$BIN" run "${GPT[@]}" --dataset fortunes --steps 3 --eval-every 3 --batch 2 --db t.db > out.txt 2> err.txt ||
  { cat out.txt err.txt; fail "fortunes run failed"; }

R=("$BIN" run --db bad.db --steps 2 --batch 2 --workload transformer --model gpt --layers 1 --d-model 32 --seq 16)
expect_error "--heads.*does not divide --d-model" "${R[@]}" --heads 3 --dataset "$TEXT"
printf 'a short text of under one hundred bytes, far shorter than a window\n' > short.txt
expect_error "fewer than one window.*--seq 500" "${R[@]}" --heads 2 --seq 500 --dataset text:short.txt
expect_error "--vocab 100 is too small" "${R[@]}" --heads 2 --vocab 100 --dataset "$TEXT"
expect_error "needs text" "${R[@]}" --heads 2 --dataset "synthetic:n=100,d=8,test=20"
expect_error "cannot read" "$BIN" run --db bad.db --steps 2 --batch 2 --dataset "$TEXT"
