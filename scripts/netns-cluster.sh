#!/usr/bin/env bash
# Two "hosts" on one machine: two Linux network namespaces joined by a veth pair, MPICH over
# TCP between them, optionally a token-bucket shaped link; runs one command across them and
# always tears everything down (docs/cluster.md, "Two hosts on one machine").
#
#   sudo scripts/netns-cluster.sh [--rate 100mbit] [--burst 256kb] [--tbf-latency 50ms] [--mtu 1500] \
#        [--wire-overhead 24] [--tcp-cc cubic] [--keep-workdir] \
#        -- ./build/dsgd-bench run --workers 2 --hostfile {hostfile} ...
#
# What it builds (names end in this script's pid, so two copies do not collide):
#   namespaces  dsgd-<pid>-a, dsgd-<pid>-b ("host a", "host b"), loopback up in each;
#   a veth pair, renamed eth0 in both, 10.213.7.1/30 (a) <-> 10.213.7.2/30 (b): a private /30
#   that exists only inside these two namespaces (no route, no address outside them);
#   with --rate: `tc qdisc add dev eth0 root tbf rate RATE burst BURST latency LAT` on both
#   ends (each direction of the link shaped; this kernel has no netem); tbf charges a packet
#   its frame without FCS (MTU + 14 bytes); --wire-overhead 24 adds FCS, preamble and
#   inter-frame gap (`stab overhead 24`, with gso_max_segs 1 so that every frame is charged),
#   which a real Ethernet wire spends too;
#   --tcp-cc (default cubic, Linux's default; this VM's host uses bbr) inside both namespaces;
#   a work directory (mktemp) with
#     hosts        the MPICH (Hydra) hostfile: "10.213.7.1:1" and "10.213.7.2:1";
#     launch       Hydra's -launcher-exec: called as an ssh would be (options, host, command),
#                  it runs the command in the host's namespace with `ip netns exec`;
#     mpiexec      a wrapper: mpiexec -iface eth0 -launcher ssh -launcher-exec launch
#                  -genv UCX_TLS tcp,self -genv UCX_NET_DEVICES eth0 -genv UCX_RNDV_THRESH inf "$@"
#                  (MPICH ch4:ucx over TCP on the veth; the ranks see two hosts, so no shared
#                  memory between them). UCX_RNDV_THRESH=inf (eager protocol at every size): with
#                  MPICH 4.0.2 + UCX 1.13 over TCP and the default rendezvous a shaped 4 MB
#                  all-reduce at 100 Mbit/s took 572-630 ms, eager 328-348 ms (ideal ~335).
#                  (Same stack: MPI_Finalize could hang when the ranks reached it apart; dsgd-bench
#                  now calls MPI_Barrier first. docs/cluster.md, "Two hosts on one machine".)
# The command runs inside namespace a with DSGD_MPIEXEC=<the wrapper>, so `dsgd-bench run
# --workers 2 --hostfile {hostfile}` self-launches exactly as on a real cluster
# (`mpiexec -n 2 -f hosts dsgd-bench run ...`). In the command's arguments {hostfile} and
# {mpiexec} are replaced by the paths above. The command's environment also names the hosts
# for launchers of their own (bench/ddp_check.py --netns): DSGD_NETNS_ADDR (host a's address),
# DSGD_NETNS_PEER (host b's namespace, for `ip netns exec`), DSGD_NETNS_PEER_ADDR. Both hosts share the file system (same build,
# same dataset, one database), as a cluster with a shared home would.
#
# Needs root (CAP_NET_ADMIN), ip and tc (Debian package iproute2), mpiexec (MPICH).
# Exit code: the command's; 2 on bad usage or a missing prerequisite.
set -euo pipefail

usage() {
  sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'
  exit 2
}

RATE="" BURST="256kb" TBF_LATENCY="50ms" MTU=1500 TCP_CC=cubic OVERHEAD="" KEEP=0
while [ $# -gt 0 ]; do
  case "$1" in
    --rate) RATE="$2"; shift 2 ;;
    --burst) BURST="$2"; shift 2 ;;
    --tbf-latency) TBF_LATENCY="$2"; shift 2 ;;
    --mtu) MTU="$2"; shift 2 ;;
    --tcp-cc) TCP_CC="$2"; shift 2 ;;  # TCP congestion control inside the namespaces ("" keeps the host's)
    --wire-overhead) OVERHEAD="$2"; shift 2 ;;  # bytes tbf adds per packet (24: Ethernet FCS + preamble + IFG)
    --keep-workdir) KEEP=1; shift ;;  # leave the hostfile and scripts (not the namespaces) for inspection
    -h|--help) usage ;;
    --) shift; break ;;
    *) echo "netns-cluster: unknown option '$1' (the command goes after --)" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "netns-cluster: no command (give it after --)" >&2; exit 2; }

if [ "$(id -u)" -ne 0 ]; then
  echo "netns-cluster: needs root (network namespaces, veth and tc need CAP_NET_ADMIN); run it with sudo" >&2
  exit 2
fi
for tool in ip tc mpiexec; do
  command -v "$tool" > /dev/null ||
    { echo "netns-cluster: '$tool' not found (apt-get install iproute2 mpich; scripts/install-deps.sh --tests)" >&2; exit 2; }
done

TAG="dsgd-$$"
NS_A="$TAG-a" NS_B="$TAG-b"
IP_A=10.213.7.1 IP_B=10.213.7.2
WORK=$(mktemp -d /tmp/dsgd-netns.XXXXXX)

cleanup() {
  local rc=$?
  set +e
  # Processes still inside our namespaces (a proxy of a killed run) are ours: end them by pid.
  for ns in "$NS_A" "$NS_B"; do
    if ip netns list 2> /dev/null | grep -qw "$ns"; then
      for pid in $(ip netns pids "$ns" 2> /dev/null); do kill -KILL "$pid" 2> /dev/null; done
      ip netns del "$ns" 2> /dev/null  # also removes the veth end inside it, and its qdisc
    fi
  done
  ip link del "${TAG}a" 2> /dev/null  # the veth, if setup stopped before moving it
  if [ "$KEEP" = 1 ]; then echo "netns-cluster: work directory kept: $WORK" >&2; else rm -rf "$WORK"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

setup() {
  ip netns add "$NS_A"
  ip netns add "$NS_B"
  ip link add "${TAG}a" type veth peer name "${TAG}b"
  ip link set "${TAG}a" netns "$NS_A"
  ip link set "${TAG}b" netns "$NS_B"
  local ns ifname addr
  for ns in "$NS_A" "$NS_B"; do
    if [ "$ns" = "$NS_A" ]; then ifname="${TAG}a" addr=$IP_A; else ifname="${TAG}b" addr=$IP_B; fi
    ip -n "$ns" link set "$ifname" name eth0
    ip -n "$ns" link set eth0 mtu "$MTU"
    # With a size table the qdisc charges skb length + overhead: one GSO super-packet would be
    # charged the headers of one frame, so send one frame per packet instead.
    if [ -n "$OVERHEAD" ]; then ip -n "$ns" link set eth0 gso_max_segs 1; fi
    ip -n "$ns" addr add "$addr/30" dev eth0
    ip -n "$ns" link set lo up
    ip -n "$ns" link set eth0 up
    if [ -n "$TCP_CC" ]; then ip netns exec "$ns" sysctl -q -w net.ipv4.tcp_congestion_control="$TCP_CC"; fi
    if [ -n "$RATE" ]; then
      # tbf counts each packet as its Ethernet frame without FCS (MTU + 14 bytes); --wire-overhead 24
      # adds FCS, preamble and inter-frame gap (a size table), so the rate is that of a real wire.
      tc -n "$ns" qdisc add dev eth0 root ${OVERHEAD:+stab overhead "$OVERHEAD" linklayer ethernet} \
        tbf rate "$RATE" burst "$BURST" latency "$TBF_LATENCY"
    fi
  done
}
if ! setup 2> "$WORK/setup.err"; then
  echo "netns-cluster: cannot create the namespaces/veth/tc ($(head -n 1 "$WORK/setup.err"))" >&2
  exit 2
fi

printf '%s:1\n%s:1\n' "$IP_A" "$IP_B" > "$WORK/hosts"

# Hydra calls the launcher as it would call ssh: [options...] HOST COMMAND... (options such
# as -x take no value). The command is one shell string, as ssh would hand it to the remote shell.
cat > "$WORK/launch" << EOF
#!/usr/bin/env bash
while [ \$# -gt 0 ] && [ "\${1#-}" != "\$1" ]; do shift; done
host="\$1"; shift
case "\$host" in
  $IP_A) ns=$NS_A ;;
  $IP_B) ns=$NS_B ;;
  *) echo "netns-cluster launch: unknown host '\$host'" >&2; exit 255 ;;
esac
exec ip netns exec "\$ns" /bin/sh -c "\$*"
EOF
REAL_MPIEXEC=$(command -v mpiexec)
cat > "$WORK/mpiexec" << EOF
#!/usr/bin/env bash
exec "$REAL_MPIEXEC" -iface eth0 -launcher ssh -launcher-exec "$WORK/launch" \\
  -genv UCX_TLS tcp,self -genv UCX_NET_DEVICES eth0 -genv UCX_RNDV_THRESH inf "\$@"
EOF
chmod +x "$WORK/launch" "$WORK/mpiexec"

args=()
for a in "$@"; do
  a="${a//\{hostfile\}/$WORK/hosts}"
  a="${a//\{mpiexec\}/$WORK/mpiexec}"
  args+=("$a")
done
echo "netns-cluster: hosts $IP_A ($NS_A) and $IP_B ($NS_B), veth eth0, MTU $MTU, link ${RATE:-unshaped}${RATE:+ (tbf burst $BURST, latency $TBF_LATENCY)}" >&2
# In the background and waited for, so that a SIGINT/SIGTERM to this script runs the trap at
# once (bash defers traps while a foreground child runs); the command gets the signal too.
ip netns exec "$NS_A" env DSGD_MPIEXEC="$WORK/mpiexec" DSGD_NETNS_HOSTFILE="$WORK/hosts" \
  DSGD_NETNS_ADDR="$IP_A" DSGD_NETNS_PEER="$NS_B" DSGD_NETNS_PEER_ADDR="$IP_B" "${args[@]}" &
CHILD=$!
# The signal is passed on, and the command gets up to 10 s to stop (dsgd-bench's launcher turns
# it into one Ctrl-C for mpiexec, and rank 0 stores the run as interrupted) before the trap
# kills what is left in the namespaces.
forward() {
  kill -"$1" "$CHILD" 2> /dev/null
  local i
  for i in $(seq 1 100); do
    kill -0 "$CHILD" 2> /dev/null || break
    sleep 0.1
  done
  exit "$2"
}
trap 'forward INT 130' INT
trap 'forward TERM 143' TERM
set +e
wait "$CHILD"
rc=$?
set -e
exit "$rc"
