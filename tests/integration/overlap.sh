# Non-blocking collectives: ssgd --overlap true (each layer's gradient all-reduce launched
# from the backward hook) gives bit-identical parameters to the blocking path, records
# overlap_s > 0 (communication in flight during compute), and the blocking path records 0.
source "$(dirname "$0")/common.bash"

common=(--workers 2 --dataset "synthetic:n=4000,d=100000,density=0.01,classes=4,test=400" --steps 30 --batch 32
  --algo ssgd --db t.db)
"$BIN" run "${common[@]}" --overlap false --save-params blocking.bin > a.txt || fail "blocking run failed"
"$BIN" run "${common[@]}" --overlap true --save-params overlap.bin > b.txt || fail "overlap run failed"
cmp blocking.bin overlap.bin || fail "overlapped all-reduce changed the parameters"
a=$(last_run_id a.txt)
b=$(last_run_id b.txt)
"$BIN" show "$a" --db t.db --format json | jq -e '.overlap_s == 0' > /dev/null || fail "blocking run has overlap"
"$BIN" show "$b" --db t.db --format json | jq -e '.overlap_s > 0 and .bytes_sent_per_step == 1600016' > /dev/null ||
  fail "overlapped run: $("$BIN" show "$b" --db t.db --format json | jq '{overlap_s, bytes_sent_per_step}')"
# Two requests per step (bias, weights), each with a non-negative overlap no longer than the step.
[ "$(sqlite3 t.db "select count(*) from steps where run_id=$b and (overlap_s < 0 or overlap_s > step_s)")" = 0 ] ||
  fail "overlap outside [0, step]"
echo PASS
