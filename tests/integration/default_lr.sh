# When --lr is not given each optimizer starts from its own default (SGD 0.05, AdamW 0.001),
# printed in the effective configuration and stored as the run's lr; from the command line, from
# a config file, from a suite entry, and in the tuner's trials (whose base has no lr).
source "$(dirname "$0")/common.bash"

common=(--dataset "$SMALL" --steps 6 --batch 16 --db t.db --eval-every 6)
stored_lr() { sql t.db "select json_extract(config_json, '$.lr') from runs where id=$(last_run_id "$1")"; }
printed_lr() { grep -E '^  lr ' "$1" | sed -E 's/^  lr +//'; }

"$BIN" run "${common[@]}" --algo diloco > diloco.out || { cat diloco.out; fail "diloco run failed"; }
[ "$(printed_lr diloco.out)" = "0.001 (the default of adamw)" ] || fail "diloco printed lr '$(printed_lr diloco.out)'"
[ "$(stored_lr diloco.out)" = 0.001 ] || fail "diloco stored lr $(stored_lr diloco.out)"
"$BIN" run "${common[@]}" --algo localsgd > local.out || fail "localsgd run failed"
[ "$(printed_lr local.out)" = "0.05 (the default of sgd)" ] || fail "localsgd printed lr '$(printed_lr local.out)'"
[ "$(stored_lr local.out)" = 0.05 ] || fail "localsgd stored lr $(stored_lr local.out)"
"$BIN" run "${common[@]}" --algo diloco --optimizer sgd > dsgd.out || fail "diloco with sgd failed"
[ "$(stored_lr dsgd.out)" = 0.05 ] || fail "diloco --optimizer sgd stored lr $(stored_lr dsgd.out)"
"$BIN" run "${common[@]}" --algo diloco --lr 0.01 > given.out || fail "diloco --lr 0.01 failed"
[ "$(printed_lr given.out)" = 0.01 ] || fail "a given lr printed as '$(printed_lr given.out)'"
[ "$(stored_lr given.out)" = 0.01 ] || fail "a given lr stored as $(stored_lr given.out)"
echo "ok: command line (default per optimizer, a given lr kept)"

printf 'algo = "mtdao"\nperiod = 2\n' > adam.toml
"$BIN" run "${common[@]}" --config adam.toml > file.out || { cat file.out; fail "config-file run failed"; }
[ "$(stored_lr file.out)" = 0.001 ] || fail "config file without lr: stored lr $(stored_lr file.out)"
printf 'algo = "mtdao"\nlr = 0.003\n' > adam_lr.toml
"$BIN" run "${common[@]}" --config adam_lr.toml > file2.out || fail "config-file run with lr failed"
[ "$(stored_lr file2.out)" = 0.003 ] || fail "config file with lr 0.003: stored lr $(stored_lr file2.out)"
echo "ok: config file"

# The stored configuration of the diloco run re-runs with the same (effective) rate.
sql t.db "select config_json from runs where id=$(last_run_id diloco.out)" |
  jq '{algo, period, lr, dataset, steps, batch, workload}' > again.json
"$BIN" run --db t.db --eval-every 6 --config again.json > again.out || { cat again.out; fail "re-run of the stored config failed"; }
[ "$(stored_lr again.out)" = 0.001 ] || fail "re-run stored lr $(stored_lr again.out)"
echo "ok: a stored configuration re-runs with its effective lr"

# The tuner's trials: the base has no --lr, so each trial's optimizer picks its default.
"$BIN" calibrate --quick --workers 1 --workload svm --dataset "$SMALL" --batches 16 --db t.db > cal.out 2>&1 ||
  { cat cal.out; fail "calibrate failed"; }
TUNE="$(dirname "$BIN")/dsgd-tune"
"$TUNE" recommend --workers 2 --dataset "$SMALL" --target acc=0.3 --db t.db --algos ssgd,diloco --period 4 \
  --batch 16 --lr-scaling none --trials 4 --trial-time 1s --race-seeds 1 --max-trial-steps 200 > tune.out 2>&1 ||
  { cat tune.out; fail "dsgd-tune recommend failed"; }
for algo in ssgd diloco; do
  want=0.05
  [ "$algo" = diloco ] && want=0.001
  got=$(sql t.db "select group_concat(distinct json_extract(r.config_json, '$.lr')) from trials t join runs r on r.id = t.run_id
                  where r.algorithm = '$algo'")
  [ "$got" = "$want" ] || fail "tuner trials of $algo ran with lr '$got', expected $want"
done
echo "ok: tuner trials"
echo PASS
