# localsgd's sync-period schedules (--period-schedule, docs/algorithms.md) from the command line:
# bad input exits 2 naming the flag, before anything is stored; on 2 MPI ranks qsr at a constant
# rate equals localsgd with period floor((alpha/lr)^2) bit for bit; adacomm runs on mpi and sim
# with the same parameters, the same seed twice gives the same model, and its stored averages
# (steps with bytes) are as many as its rounds; qsr's timing-only run averages after the same
# steps as its numerics; dsgd-tune refuses an unknown --period-schedules.
source "$(dirname "$0")/common.bash"
TUNE="$(dirname "$BIN")/dsgd-tune"

base=(run --dataset "$SMALL" --steps 5 --batch 16 --db t.db)
expect_error "--period-schedule: unknown schedule 'sometimes'" "$BIN" "${base[@]}" --algo localsgd --period-schedule sometimes
expect_error "--qsr-alpha: applies to --period-schedule qsr only" "$BIN" "${base[@]}" --algo localsgd --qsr-alpha 0.2
expect_error "--qsr-alpha: --period-schedule qsr needs alpha > 0" "$BIN" "${base[@]}" --algo localsgd --period-schedule qsr
expect_error "--qsr-alpha: --period-schedule qsr needs alpha > 0" "$BIN" "${base[@]}" --algo localsgd --period-schedule qsr --qsr-alpha -1
expect_error "--period-schedule: applies to --algo localsgd only" "$BIN" "${base[@]}" --algo ssgd --period-schedule adacomm
expect_error "--qsr-alpha: applies to --algo localsgd only" "$BIN" "${base[@]}" --algo diloco --qsr-alpha 0.1
expect_error "--period-schedule: adacomm cannot run with --timing-only: its period follows the training loss" \
  "$BIN" run --backend sim --timing-only --workers 4 --dataset "$SMALL" --steps 20 --batch 16 --db t.db --algo localsgd --period-schedule adacomm
expect_error "--period-schedules: unknown schedule 'often'" "$TUNE" recommend --dataset "$SMALL" --workers 2 \
  --target acc=0.5 --trials 2 --algos localsgd --period-schedules constant,often --db t.db
[ ! -e t.db ] || fail "a rejected run created the database"

common=(--workers 2 --dataset "$SMALL" --steps 60 --batch 32 --lr 0.05 --seed 5 --db t.db --eval-every 20 --algo localsgd)
run() {
  local out="$1"
  shift
  "$BIN" run "${common[@]}" "$@" --save-params "$out" > "$out.txt" || { cat "$out.txt"; fail "run failed: $*"; }
}
averages() { sql t.db "select count(*) from steps where run_id=$(last_run_id "$1.txt") and rank=0 and bytes_sent > 0"; }

# (0.05 * sqrt(6.5) / 0.05)^2 = 6.5: H = 6.
alpha=$(awk 'BEGIN{printf "%.17g", 0.05 * sqrt(6.5)}')
run qsr.bin --period 1 --period-schedule qsr --qsr-alpha "$alpha"
run h6.bin --period 6
cmp qsr.bin h6.bin || fail "qsr at a constant rate differs from localsgd --period 6"
[ "$(averages qsr.bin)" = 10 ] || fail "qsr at H=6 over 60 steps: expected 10 averages, got $(averages qsr.bin)"

run ada.bin --period 8 --period-schedule adacomm
run ada2.bin --period 8 --period-schedule adacomm
cmp ada.bin ada2.bin || fail "adacomm: the same seed gave another model"
run ada_sim.bin --period 8 --period-schedule adacomm --backend sim
cmp ada.bin ada_sim.bin || fail "adacomm: sim and mpi differ"
run h8.bin --period 8
n_ada=$(averages ada.bin)
n_h8=$(averages h8.bin)
[ "$n_h8" = 7 ] || fail "constant H=8 over 60 steps: expected 7 averages, got $n_h8"
[ "$n_ada" -gt "$n_h8" ] || fail "adacomm's loss fell, its rounds should be shorter than H_0: $n_ada vs $n_h8 averages"
echo "ok: adacomm averaged $n_ada times in 60 steps (constant H_0=8: $n_h8)"
details=$(sql t.db "select json_extract(config_json, '$.\"algorithm-details\".\"period-schedule\"') from runs where id=$(last_run_id ada.bin.txt)")
[ "$details" = adacomm ] || fail "adacomm's algorithm-details are not stored: '$details'"

# qsr under a cosine rate: the timing-only run averages after the same steps as the numerics.
cos=(--workers 2 --dataset "$SMALL" --steps 120 --batch 32 --lr 0.05 --seed 5 --db t.db --eval-every 120
  --algo localsgd --period 2 --period-schedule qsr --qsr-alpha 0.1 --lr-schedule cosine --backend sim --warmup 0)
"$BIN" run "${cos[@]}" > num.txt || { cat num.txt; fail "qsr sim run failed"; }
"$BIN" run "${cos[@]}" --timing-only > tim.txt || { cat tim.txt; fail "qsr timing-only run failed"; }
steps_of() { sql t.db "select group_concat(step) from (select step from steps where run_id=$(last_run_id "$1") and rank=0 and bytes_sent > 0 order by step)"; }
[ "$(steps_of num.txt)" = "$(steps_of tim.txt)" ] ||
  fail "qsr: timing-only averages after $(steps_of tim.txt), the numerics after $(steps_of num.txt)"
echo "ok: qsr averages after steps $(steps_of num.txt) in both"
echo PASS
