# `dsgd-bench run --workers 2` self-launches through mpiexec, completes, prints the
# summary and run_id last, and its rows are in the database (2 ranks × steps step rows,
# evaluations, a summary); runs/show read them back; JSON has every documented key; rank 0's
# database writes do not show up in the other rank's steps.
source "$(dirname "$0")/common.bash"

"$BIN" run --workers 2 --dataset "$SMALL" --algo ssgd --steps 40 --eval-every 10 --batch 32 \
  --target acc=0.5 --db t.db --tag "two,\"ranks\"" > out.txt 2> err.txt || { cat out.txt err.txt; fail "run failed"; }
cat out.txt
id=$(last_run_id out.txt)
[ "$(grep -c '^eval step' out.txt)" -eq 5 ] || fail "expected 5 evaluation lines"
[ "$(sql t.db "select status from runs where id=$id")" = completed ] || fail "status not completed"
[ "$(sql t.db "select workers from runs where id=$id")" = 2 ] || fail "workers not 2"
[ "$(sql t.db "select count(*) from steps where run_id=$id")" = 80 ] || fail "expected 80 step rows"
[ "$(sql t.db "select count(distinct rank) from steps where run_id=$id")" = 2 ] || fail "expected rows of 2 ranks"
[ "$(sql t.db "select count(*) from evals where run_id=$id")" = 5 ] || fail "expected 5 eval rows"
[ "$(sql t.db "select count(*) from steps where run_id=$id and comm_s + wait_s > 0")" -gt 0 ] || fail "no comm recorded"
[ "$(sql t.db "select count(*) from summaries where run_id=$id")" = 1 ] || fail "no summary"
sql t.db "select mpi_version, host, cpu_model, git_commit, build_type from runs where id=$id" | grep -q MPICH ||
  fail "MPI version not recorded"
[ "$(sql t.db "pragma journal_mode")" = wal ] || fail "database not in WAL mode"

"$BIN" runs --db t.db | grep -q "ssgd" || fail "runs does not list the run"
"$BIN" show "$id" --db t.db --format json > show.json
for key in run_id status workload dataset algorithm backend workers batch period steps seed \
  throughput_samples_per_s step_time_s compute_s comm_s wait_s overlap_s data_s bytes_sent_per_step \
  final_train_loss final_test_loss final_test_acc time_to_target_s steps_to_target; do
  jq -e "has(\"$key\")" show.json > /dev/null || fail "show --format json lacks $key"
done
jq -e '.workers == 2 and .status == "completed" and .throughput_samples_per_s > 0 and .final_test_acc > 0.5' \
  show.json > /dev/null || fail "unexpected values in show json: $(cat show.json)"
jq -e '.tag == "two,\"ranks\""' show.json > /dev/null || fail "tag not stored verbatim"
jq -e '.time_to_target_s != null and .steps_to_target <= 40' show.json > /dev/null || fail "target not reached"
# bytes per step for ssgd on 2 ranks: 2(n-1)/n × model bytes = model bytes (200×4+4 floats)
jq -e '.bytes_sent_per_step == 3216' show.json > /dev/null || fail "bytes_sent_per_step $(jq .bytes_sent_per_step show.json) != 3216"
"$BIN" show "$id" --db t.db | grep -q "throughput" || fail "show table lacks throughput"

# After each evaluation rank 0 writes the rows to the database and prints the progress line
# while the other rank waits untimed: that must not reappear as rank 1's wait in its next
# step. The median of rank 1's steps right after an evaluation against the median of all its
# steps: 1.3-1.5 here when the ranks resume together (caches cooled by the evaluation), 9
# when rank 1 waits for the write.
"$BIN" run --workers 2 --dataset "$SMALL" --steps 400 --eval-every 40 --batch 32 --db t.db > out3.txt 2>&1 ||
  { cat out3.txt; fail "400-step run failed"; }
id3=$(last_run_id out3.txt)
median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
all=$(sql t.db "select step_s from steps where run_id=$id3 and rank=1" | median)
after=$(sql t.db "select step_s from steps where run_id=$id3 and rank=1 and step > 0 and step % 40 = 0" | median)
awk -v a="$after" -v m="$all" 'BEGIN{exit !(a < 4 * m)}' ||
  fail "rank 1's steps after an evaluation: median $after s against $all s over all its steps (rank 0's database write counted as its wait)"

# Under an explicit mpiexec the world communicator is used as it is.
"$MPIEXEC" -n 2 "$BIN" run --workers 2 --dataset "$SMALL" --steps 20 --batch 32 --db t.db > out2.txt 2>&1 ||
  { cat out2.txt; fail "run under mpiexec failed"; }
id2=$(last_run_id out2.txt)
[ "$(sql t.db "select count(*) from steps where run_id=$id2")" = 40 ] || fail "expected 40 step rows under mpiexec"
echo PASS
