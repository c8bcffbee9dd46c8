# Topologies from the command line: list, print (matrix and spectral gap), refuse bad
# specs; a degenerate hier:1x2 gives the same emulated numbers as complete on 2 workers.
source "$(dirname "$0")/common.bash"

"$BIN" list topologies | grep -q "torus" || fail "list topologies lacks torus"
"$BIN" topology ring --workers 8 > ring.txt || fail "topology ring failed"
grep -q "spectral gap 0.19526" ring.txt || { cat ring.txt; fail "ring gap for 8 workers is not 1-(1+2cos(2pi/8))/3"; }
"$BIN" topology torus:2x4 --workers 8 --format json > torus.json
jq -e '.workers == 8 and (.mixing | length) == 8' torus.json > /dev/null || fail "topology json malformed"
jq -e '[.mixing[] | add] | all(. > 0.999999 and . < 1.000001)' torus.json > /dev/null || fail "rows do not sum to 1"

for bad in "torus:3x3" "moebius" "hier:3x2"; do
  set +e
  "$BIN" topology "$bad" --workers 4 > out.txt 2> err.txt
  rc=$?
  set -e
  [ $rc -ne 0 ] && grep -q "$bad" err.txt || { cat err.txt; fail "topology $bad accepted or unclear"; }
  set +e
  "$BIN" run --workers 4 --topology "$bad" --dataset "$SMALL" --steps 5 --db t.db > out.txt 2> err.txt
  rc=$?
  set -e
  [ $rc -ne 0 ] && grep -q "$bad" err.txt || { cat err.txt; fail "run --topology $bad accepted or unclear"; }
  echo "ok: $bad -> $(head -n 1 err.txt)"
done
[ ! -e t.db ] || [ "$(sqlite3 t.db 'select count(*) from runs')" = 0 ] || fail "a refused run was stored"

# hier:1x2 is complete with extra steps: the same emulated comm (each within 15% of the other:
# the mean of 25 timed steps of two busy-polling MPI ranks on a shared 2-core machine).
common=(--workers 2 --dataset "synthetic:n=2000,d=100000,density=0.001,classes=2,test=200" --steps 30 --batch 16
  --bandwidth 100Mbps --latency 1ms --db t.db)
"$BIN" run "${common[@]}" --topology complete > a.txt || fail "complete run failed"
"$BIN" run "${common[@]}" --topology hier:1x2 > b.txt || fail "hier:1x2 run failed"
ca=$("$BIN" show "$(last_run_id a.txt)" --db t.db --format json | jq .comm_s)
cb=$("$BIN" show "$(last_run_id b.txt)" --db t.db --format json | jq .comm_s)
echo "comm per step: complete $ca s, hier:1x2 $cb s"
awk -v a="$ca" -v b="$cb" 'BEGIN{r=a/b; exit !(r > 0.85 && r < 1.0 / 0.85)}' || fail "hier:1x2 and complete differ"
echo PASS
