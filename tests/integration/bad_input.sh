# Bad input: each case exits non-zero with one clear message naming what was wrong, and
# an existing database is left exactly as it was.
source "$(dirname "$0")/common.bash"

"$BIN" run --dataset "$SMALL" --steps 10 --batch 16 --db t.db > /dev/null || fail "setup run failed"
snapshot() { sqlite3 t.db .dump | sha256sum; }
before=$(snapshot)

# expect_error (common.bash) also checks, after each case, that the database is unchanged.
expect_error_also() { [ "$(snapshot)" = "$before" ] || fail "database changed by: ${*:2}"; }

R=("$BIN" run --db t.db --steps 10 --batch 16 --dataset "$SMALL")
expect_error "unknown workload 'resnet9000'" "${R[@]}" --workload resnet9000
expect_error "unknown algorithm 'sgdx'" "${R[@]}" --algo sgdx
expect_error "dataset.*'imagenet'|unknown dataset" "${R[@]}" --dataset imagenet
expect_error "--workers" "${R[@]}" --workers 0
# The same error with stderr closed (its message cannot be printed): still exit 2, not an abort.
rc=0
"${R[@]}" --workers 0 2>&- || rc=$?
[ "$rc" -eq 2 ] || fail "an input error with stderr closed exited $rc (expected 2)"
expect_error "--steps" "${R[@]}" --steps 0
expect_error "--steps" "${R[@]}" --steps -5
expect_error "--lr" "${R[@]}" --lr -1
expect_error "--overlap: applies to --algo ssgd only" "${R[@]}" --algo localsgd --overlap true
# A boolean given bare means true (the same refusal proves it was read as true); a value
# that is not a boolean is refused.
expect_error "--overlap: applies to --algo ssgd only" "${R[@]}" --algo localsgd --overlap
expect_error "overlap.*maybe|maybe.*overlap" "${R[@]}" --overlap maybe
expect_error "missing.svm" "${R[@]}" --dataset libsvm:/nonexistent/missing.svm
expect_error "no-such-dir" "$BIN" run --dataset "$SMALL" --steps 10 --db /tmp/no-such-dir-dsgd/x.db
[ ! -e /tmp/no-such-dir-dsgd ] || fail "directory created"
EXPECT_RC=1 expect_error "/proc" "$BIN" run --dataset "$SMALL" --steps 10 --db /proc/dsgd.db
expect_error "--target|target" "${R[@]}" --target accuracy=high
expect_error "--batch .* larger than" "${R[@]}" --batch 100000

# A database written by a newer schema version is refused and left untouched.
cp t.db newer.db
sqlite3 newer.db "pragma user_version=99"
sum_newer=$(sha256sum newer.db)
set +e
"$BIN" run --dataset "$SMALL" --steps 10 --db newer.db > out.txt 2> err.txt
rc=$?
set -e
[ $rc -ne 0 ] && grep -q "newer" err.txt || { cat err.txt; fail "newer schema not refused"; }
[ "$(sha256sum newer.db)" = "$sum_newer" ] || fail "newer database modified"
"$BIN" runs --db newer.db > /dev/null 2> err.txt && fail "runs accepted a newer schema"
grep -q newer err.txt || fail "runs: no clear message for newer schema"

# Config files: unknown key, wrong type.
echo '{"batch": 16, "bach": 64}' > bad_key.json
expect_error "bad_key.json.*unknown key 'bach'" "${R[@]}" --config bad_key.json
printf 'batch = "large"\n' > bad_type.toml
expect_error "bad_type.toml.*'batch'.*wrong type" "${R[@]}" --config bad_type.toml
expect_error "does-not-exist.json" "${R[@]}" --config does-not-exist.json

# show/runs on bad ids and missing databases.
expect_error "run 999 not found" "$BIN" show 999 --db t.db
expect_error "no database" "$BIN" runs --db missing.db
[ ! -e missing.db ] || fail "runs created a database"

# A flag in a config file is overridden by the command line.
echo '{"algo": "localsgd", "period": 5, "steps": 12}' > good.json
"$BIN" run --config good.json --steps 8 --dataset "$SMALL" --batch 16 --db t.db > out.txt || fail "config run failed"
id=$(last_run_id out.txt)
[ "$(sql t.db "select algorithm || ':' || period || ':' || steps from runs where id=$id")" = "localsgd:5:8" ] ||
  fail "config file + flag override not applied"
echo PASS
