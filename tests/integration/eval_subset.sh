# --eval-subset N: the run evaluates on a fixed, class-stratified N-row subset of the test set,
# says so with the interval it gives, and records it; training is unchanged (same seed: the
# same training losses); N at least the test set's rows is the whole set; text keeps N evenly
# spaced windows.
source "$(dirname "$0")/common.bash"

common=(--dataset "$SMALL" --steps 30 --batch 16 --eval-every 10 --seed 5 --db t.db)
"$BIN" run "${common[@]}" > full.out || { cat full.out; fail "full-set run failed"; }
"$BIN" run "${common[@]}" --eval-subset 200 > sub.out || { cat sub.out; fail "subset run failed"; }
grep -q "eval-set      200 of 800 test rows, class-stratified" sub.out || { cat sub.out; fail "no eval-set line"; }
grep -q "eval-set " full.out && fail "the full-set run printed an eval-set line"
S=$(last_run_id sub.out)
[[ $(sql t.db "SELECT json_extract(config_json, '$.\"eval-set\".rows') FROM runs WHERE id=$S") == 200 ]] ||
  fail "eval-set not recorded"
train() { grep '^eval step' "$1" | awk '{print $8}'; }
[[ "$(train full.out)" == "$(train sub.out)" ]] || fail "training changed with --eval-subset"
# A second subset run evaluates on the same rows: the same test accuracies.
"$BIN" run "${common[@]}" --eval-subset 200 > sub2.out || fail "second subset run failed"
acc() { grep '^eval step' "$1" | awk '{print $NF}'; }
[[ "$(acc sub.out)" == "$(acc sub2.out)" ]] || fail "the subset is not the same rows every run"
"$BIN" run "${common[@]}" --eval-subset 5000 > big.out || fail "--eval-subset above the test set's rows failed"
[[ "$(acc big.out)" == "$(acc full.out)" ]] || fail "--eval-subset 5000 of 800 rows is not the whole set"
# Text: N evenly spaced windows of --seq tokens; training unchanged; N at least the windows: all.
text=(--workload transformer --dataset synthetic-text:n=20000 --steps 6 --batch 2 --layers 1 --d-model 16 --heads 2
  --seq 16 --eval-every 3 --db t.db)
"$BIN" run "${text[@]}" > tfull.out || { cat tfull.out; fail "text full-set run failed"; }
"$BIN" run "${text[@]}" --eval-subset 10 > tsub.out || { cat tsub.out; fail "text subset run failed"; }
grep -q "eval-set      10 of 124 test windows of 16 tokens, evenly spaced" tsub.out ||
  { cat tsub.out; fail "no eval-set line for text"; }
[[ "$(train tfull.out)" == "$(train tsub.out)" ]] || fail "training changed with --eval-subset on text"
loss() { grep '^eval step' "$1" | awk '{print $10}'; }
[[ "$(loss tfull.out)" != "$(loss tsub.out)" ]] || fail "the text subset evaluated the whole set"
T=$(last_run_id tsub.out)
[[ $(sql t.db "SELECT json_extract(config_json, '$.\"eval-set\".windows') FROM runs WHERE id=$T") == 10 ]] ||
  fail "text eval-set not recorded"
"$BIN" run "${text[@]}" --eval-subset 5000 > tbig.out || fail "text --eval-subset above its windows failed"
[[ "$(loss tbig.out)" == "$(loss tfull.out)" ]] || fail "text --eval-subset above its windows is not the whole set"
echo PASS
