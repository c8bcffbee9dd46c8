# dsgd-tune's theory prior (tuner/prior.hpp): `recommend --prior on` runs the probe once, prints
# it and the constants, stores it (tune_probes) and says the design comes from the prior; the
# same seed gives the same probe and the same trials; --resume reads the stored probe instead of
# running it again; `bench --strategies prior,tuner-prior` on a tiny grid recommends the prior's
# argmin at the probe's cost, scored on every grid seed; a bad --prior value is refused.
source "$(dirname "$0")/common.bash"
TUNE="$(dirname "$BIN")/dsgd-tune"
[ -x "$TUNE" ] || fail "dsgd-tune is not built next to $BIN"

space=(--dataset "$SMALL" --workers 4 --bandwidth 1Gbps --latency 1ms --lr 0.2 --target acc=0.8
       --algos ssgd,localsgd,dpsgd --period 2,4,8 --batch 16,32 --topologies ring,complete --lr-scaling none
       --max-trial-steps 3000 --trial-time 0.3s)

expect_error "--prior" "$TUNE" recommend "${space[@]}" --trials 12 --race-seeds 2 --prior maybe --db bad.db
[ ! -e bad.db ] || fail "a refused --prior created the database"

# A database holding the compute profiles, copied so both sessions below simulate the same costs.
"$TUNE" grid "${space[@]}" --seeds 2 --db base.db > grid.out 2>&1 || { cat grid.out; fail "grid failed"; }
G=$(tail -n 1 grid.out | sed -n 's/^session_id=\([0-9]*\)$/\1/p')
cp base.db a.db
cp base.db b.db

"$TUNE" recommend "${space[@]}" --trials 12 --race-seeds 2 --prior on --db a.db > a.out 2>&1 || { cat a.out; fail "recommend --prior on failed"; }
cat a.out
A=$(tail -n 1 a.out | sed -n 's/^session_id=\([0-9]*\)$/\1/p')
for line in "probe ssgd b=16 lr=none (sync)" "probe ssgd b=32 lr=none (sync-batch)" "probe localsgd H=8 b=16 lr=none (period)" \
            "probe dpsgd ring b=16 lr=none (gossip)" "probe gradient noise scale" "prior constants: B_noise" \
            "prior's best per algorithm" "the prior's best per algorithm and next best, a third space-filling" \
            "the prior's probe"; do
  grep -qF "$line" a.out || fail "recommend --prior on does not print '$line'"
done
[[ $(sql a.db "SELECT count(*) FROM tune_probes WHERE session_id=$A") == 1 ]] || fail "the probe is not stored with the session"
cost=$(sql a.db "SELECT cost_s FROM tune_probes WHERE session_id=$A")
python3 -c "import sys; assert float('$cost') > 0" || fail "the probe's cost is not positive ($cost)"

# The same seed: the same probe (but for its real seconds) and the same trials.
"$TUNE" recommend "${space[@]}" --trials 12 --race-seeds 2 --prior on --db b.db > b.out 2>&1 || { cat b.out; fail "second recommend failed"; }
B=$(tail -n 1 b.out | sed -n 's/^session_id=\([0-9]*\)$/\1/p')
probe() { sql "$1" "SELECT probe_json FROM tune_probes WHERE session_id=$2" | python3 -c "
import json, sys
j = json.load(sys.stdin); j.pop('wall_s')
for p in j['points']: p.pop('wall_s')
print(json.dumps(j, sort_keys=True))"; }
[[ "$(probe a.db "$A")" == "$(probe b.db "$B")" ]] || { diff <(probe a.db "$A") <(probe b.db "$B"); fail "the same seed gave another probe"; }
trials() { sql "$1" "SELECT phase, config_key, seed, budget_s, reached, time_s, progress, steps FROM trials WHERE session_id=$2 ORDER BY id"; }
[[ "$(trials a.db "$A")" == "$(trials b.db "$B")" ]] || { diff <(trials a.db "$A") <(trials b.db "$B"); fail "the same seed ran other trials"; }

# Without the prior the design is the space-filling one (another set of trials, no probe).
"$TUNE" recommend "${space[@]}" --trials 12 --race-seeds 2 --db b.db > off.out 2>&1 || { cat off.out; fail "recommend without the prior failed"; }
O=$(tail -n 1 off.out | sed -n 's/^session_id=\([0-9]*\)$/\1/p')
grep -q "seeded space-filling sample" off.out || fail "the default (--prior off) design is not the space-filling one"
[[ $(sql b.db "SELECT count(*) FROM tune_probes WHERE session_id=$O") == 0 ]] || fail "a session without the prior stored a probe"

# Resume after losing trials: the stored probe is read, not run again; the same trials come back.
before=$(trials a.db "$A")
sql a.db "DELETE FROM trials WHERE session_id=$A AND id IN (SELECT id FROM trials WHERE session_id=$A ORDER BY id DESC LIMIT 3);
          UPDATE tune_sessions SET status='running' WHERE id=$A"
"$TUNE" recommend --resume "$A" --db a.db > resumed.out 2>&1 || { cat resumed.out; fail "resume failed"; }
grep -q "the probe stored with the session (not run again)" resumed.out || { cat resumed.out; fail "resume ran the probe again"; }
grep -q "the prior's probe .* and 0.0 s real" resumed.out || { cat resumed.out; fail "resume reports a probe's real time"; }
[[ "$(trials a.db "$A")" == "$before" ]] || fail "the resumed session ran other trials"

# bench: the prior alone and the search with it, against the grid.
runs=$(sql base.db "SELECT count(*) FROM runs")
"$TUNE" bench --grid "$G" --db base.db --reps 3 --strategies prior,tuner-prior,tuner --budget-fraction 0.5 > bench.out 2>&1 ||
  { cat bench.out; fail "bench with the prior failed"; }
cat bench.out
[[ $(sql base.db "SELECT count(*) FROM runs") == "$runs" ]] || fail "bench stored runs"
grep -q "prior (probe seed 3): recommends " bench.out || fail "bench does not say what the prior recommends (probe seed past the grid's)"
[ "$(grep -cE '^(prior|tuner-prior|tuner) ' bench.out)" -eq 3 ] || fail "expected the three strategies"
"$TUNE" bench --grid "$G" --db base.db --reps 2 --strategies prior --format json > bench.json || fail "bench --format json failed"
python3 - <<'EOF' || fail "bench JSON: the prior's recommendation, cost or regret seeds are wrong"
import json
j = json.load(open("bench.json"))
rec = j["prior"]["recommended"]
best = min((p for p in j["prior"]["predicted"] if p["time_s"] != "inf"), key=lambda p: p["time_s"])
assert best["config"] == rec, (best, rec)
for rep in j["strategies"][0]["reps"]:
    assert rep["recommended"] == rec
    assert rep["regret_seeds"] == j["seeds"], rep  # it evaluated none of the grid's seeds
    assert 0 < rep["cost_share"] < 0.5, rep
EOF
echo "PASS"
