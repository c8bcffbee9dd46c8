# Two hosts on one machine (scripts/netns-cluster.sh): 2 ranks in two network namespaces joined
# by a veth pair shaped to 100 Mbit/s (tbf, burst 256 KB), MPICH over TCP, launched through the
# hostfile path exactly as on a cluster (`dsgd-bench run --workers 2 --hostfile HOSTS`, mpiexec
# starting the second proxy with the launcher script). Checks:
#   - the run completes and is stored with 2 workers, a step row per timed step from each rank,
#     and the hostfile it was given;
#   - the traffic crossed the shaped veth: host a's eth0 qdisc sent at least 90 % of
#     steps × 4,000,004 bytes (rank 0's share of the all-reduces);
#   - comm per step is within 15 % of the emulation's prediction for the link's nominal rate,
#     --bandwidth 100Mbps with the default goodput model (TCP/IPv4 over Ethernet, MTU 1500):
#     S / (12.5e6 × 1448/1538) = 339.9 ms for the 4 MB gradient. 15 %, not the 5 % the
#     model reached in docs/cluster.md's table: TCP on a loaded 2-core CI machine varies
#     (the medians there were within 2 % of the model, single runs within ±3 % of their median).
# Skips (exit 0, one line) when not root, without ip/tc, or when namespaces cannot be created
# (a container without CAP_NET_ADMIN). Everything is torn down by the script's trap, also on
# failure or timeout; the run is bounded to 100 s, the test to < 2 minutes.
SCRIPT="$(cd "$(dirname "$0")/../.." && pwd)/scripts/netns-cluster.sh"  # before common.bash cds away
source "$(dirname "$0")/common.bash"

[ "$(id -u)" -eq 0 ] || { echo "SKIP: not root (network namespaces and tc need CAP_NET_ADMIN)"; exit 0; }
command -v ip > /dev/null && command -v tc > /dev/null ||
  { echo "SKIP: ip/tc not installed (apt-get install iproute2)"; exit 0; }
probe="dsgd-probe-$$"
if ! ip netns add "$probe" 2> /dev/null; then
  echo "SKIP: cannot create network namespaces here (no CAP_NET_ADMIN, e.g. an unprivileged container)"
  exit 0
fi
ip netns del "$probe"

DATA="synthetic:n=4000,d=1000000,density=0.001,classes=2,test=400"
BYTES=4000004
STEPS=16
# The command runs inside host a's namespace: the run, then that end's qdisc counters.
rc=0
timeout 100 "$SCRIPT" --rate 100mbit --burst 256kb -- bash -c \
  '"$0" run --workers 2 --hostfile {hostfile} --dataset "$1" --algo ssgd --steps "$2" --batch 16 \
     --eval-every 1000 --db "$3" > run.txt 2> run.err; rc=$?; tc -s qdisc show dev eth0 > tc.txt; exit $rc' \
  "$BIN" "$DATA" "$STEPS" "$PWD/t.db" > script.txt 2>&1 || rc=$?
[ "$rc" -eq 0 ] || { cat script.txt run.txt run.err 2> /dev/null; fail "the two-namespace run failed (exit $rc)"; }
ip netns list | grep -q "^dsgd-[0-9]*-[ab]" && echo "note: other dsgd namespaces exist (another run in parallel?)"

id=$(last_run_id run.txt)
"$BIN" show "$id" --db t.db --format json > run.json
jq -e '.status == "completed" and .workers == 2' run.json > /dev/null ||
  fail "run $id is not completed with 2 workers: $(jq -c '{status, workers}' run.json)"
jq -e --argjson b "$BYTES" '.bytes_sent_per_step == $b' run.json > /dev/null ||
  fail "bytes_sent_per_step $(jq .bytes_sent_per_step run.json) != $BYTES"
jq -e '.config.hostfile | test("/hosts$")' run.json > /dev/null || fail "the run does not record the hostfile"
timed=$(jq .timed_steps run.json)
for rank in 0 1; do
  n=$(sql t.db "select count(*) from steps where run_id=$id and rank=$rank and timed=1")
  [ "$n" = "$timed" ] || fail "rank $rank stored $n timed steps, expected $timed"
done

sent=$(sed -n 's/^ *Sent \([0-9]*\) bytes.*/\1/p' tc.txt | head -n 1)
[ -n "$sent" ] || { cat tc.txt; fail "no qdisc counters from host a's eth0"; }
awk -v s="$sent" -v n="$STEPS" -v b="$BYTES" 'BEGIN { exit !(s >= 0.9 * n * b) }' ||
  fail "host a's eth0 sent $sent bytes, less than 90% of $STEPS steps x $BYTES: the ranks did not talk over the veth"

measured=$(jq -r .comm_s run.json)
# algo_auto on 2 ranks = recursive doubling, one exchange of S: S / goodput (no --latency).
predicted=$(awk -v S="$BYTES" 'BEGIN { printf "%.6f", S / (12.5e6 * 1448 / 1538) }')
nominal=$(awk -v S="$BYTES" 'BEGIN { printf "%.6f", S / 12.5e6 }')
printf '%-44s %10s\n' "comm per step, 2 namespaces, 100 Mbit/s tbf" seconds
printf '%-44s %10.4f\n' "measured" "$measured" "predicted, goodput model (MTU 1500)" "$predicted" \
  "predicted, nominal rate (--link-efficiency 1)" "$nominal"
awk -v m="$measured" -v p="$predicted" 'BEGIN { printf "%-44s %10.3f\n", "measured / predicted", m / p;
  exit !(m >= 0.85 * p && m <= 1.15 * p) }' ||
  fail "comm $measured s is not within 15% of the goodput model's $predicted s"
echo PASS
