#!/bin/sh
# Guest script (tests/softroce/vm.sh): a cluster sweep over real verbs on Soft-RoCE. Four rxe
# devices rxw1..rxw4, each on its own veth end (vw1..vw4, whose peers sw1..sw4 are ports of the
# bridge br0), all in the initial namespace; four workers w1..w4, each offering only its own
# device (`gdrmesh worker --nic rxwN`). Then:
#   1. an all-pairs verbs sweep on the healthy fabric: must exit 0 with verdict PASS;
#   2. netem delay on vw3 (every packet w3 sends, data or ACK) and the same sweep with
#      best_pair_fraction_min: must exit 1 with w3 (or w3/rxw3) as the top-ranked suspect.
# rxe keeps at most 128 packets (128 KiB at path MTU 1024) unacknowledged per QP, so a delay D
# caps w3's pairs near 128 KiB / D: 30 ms -> ~4 MB/s, against ~10..50 MB/s between healthy
# rxe devices under TCG; D must stay well below the QP's ACK timeout (14 -> 67 ms).
# The reports (with results), exit codes, workers and the SQLite file are exported for
# check_sweep.py. Settings: SWEEP_ITERS, SWEEP_DELAY, SWEEP_FRACTION (defaults below), from
# /opt/share/sweep_env.sh, which run_sweep.sh writes from the host's environment.
set -u
# shellcheck source=/dev/null
. /opt/share/lib_cluster.sh
# shellcheck source=/dev/null
. /opt/share/lib_perftest.sh
# shellcheck source=/dev/null
[ -f /opt/share/sweep_env.sh ] && . /opt/share/sweep_env.sh
G=gdrmesh
IP=/usr/bin/ip
TC=/opt/bin/tc # iproute2's tc, not busybox's applet
SWEEP_ITERS=${SWEEP_ITERS:-300}
SWEEP_DELAY=${SWEEP_DELAY:-30ms}
SWEEP_FRACTION=${SWEEP_FRACTION:-0.35}
cd /tmp || exit 1
: >/tmp/sweep_rcs.txt

say() { echo "SWEEP $*"; }
uptime_s() { cut -d' ' -f1 /proc/uptime; }

export_all() {
  # A clean stop checkpoints the WAL into results.db before it is exported.
  if [ -n "${coordinator:-}" ]; then
    kill "$coordinator" 2>/dev/null
    wait "$coordinator" 2>/dev/null
  fi
  for f in /tmp/sweep-*.json /tmp/sweep-*.txt /tmp/sweep-*.err /tmp/sweep_rcs.txt \
    /tmp/workers.json /tmp/net.txt /tmp/results.db /tmp/coordinator.log /tmp/worker-w*.log; do
    [ -f "$f" ] && /opt/export "$f"
  done
}

die() {
  say "FAILED: $*"
  export_all
  exit 1
}

# ------------------------------------------------------------------ fabric
while read -r m; do
  insmod "/opt/modules/$m" || die "insmod $m"
done </opt/modules/load-order

$IP link add br0 type bridge || die "bridge br0"
$IP link set br0 up || die "br0 up"
# One local address per interface, all in one subnet: each vwN answers ARP only for its own
# address (arp_ignore=1) and accepts packets from the other local addresses (accept_local).
for c in all default; do
  echo 1 >/proc/sys/net/ipv4/conf/$c/arp_ignore
  echo 2 >/proc/sys/net/ipv4/conf/$c/arp_announce
  echo 1 >/proc/sys/net/ipv4/conf/$c/accept_local
  echo 0 >/proc/sys/net/ipv4/conf/$c/rp_filter
done
for i in 1 2 3 4; do
  $IP link add "vw$i" type veth peer name "sw$i" || die "veth vw$i"
  $IP link set "sw$i" master br0 || die "sw$i into br0"
  $IP link set "sw$i" up || die "sw$i up"
  echo 1 >/proc/sys/net/ipv4/conf/vw$i/arp_ignore
  echo 2 >/proc/sys/net/ipv4/conf/vw$i/arp_announce
  echo 1 >/proc/sys/net/ipv4/conf/vw$i/accept_local
  echo 0 >/proc/sys/net/ipv4/conf/vw$i/rp_filter
  $IP addr add "10.78.0.$i/24" dev "vw$i" || die "addr vw$i"
  $IP link set "vw$i" up || die "vw$i up"
  # Policy routing: traffic from 10.78.0.i to another worker's address leaves through vwi
  # (not lo, not another vw); to its own address it still takes the local table (lo).
  for j in 1 2 3 4; do
    [ "$j" = "$i" ] && continue
    $IP route add "10.78.0.$j" dev "vw$i" src "10.78.0.$i" table "11$i" || die "table 11$i"
  done
  $IP rule add pref "11$i" from "10.78.0.$i" iif lo lookup "11$i" || die "rule 11$i"
done
for i in 1 2 3 4; do
  /usr/bin/rdma link add "rxw$i" type rxe netdev "vw$i" || die "rdma link add rxw$i"
done
for i in 1 2 3 4; do
  n=0
  until grep -q ACTIVE "/sys/class/infiniband/rxw$i/ports/1/state" 2>/dev/null &&
    /opt/gid_index "rxw$i" >/dev/null 2>&1; do
    n=$((n + 1))
    [ $n -gt 200 ] && die "rxw$i: port not ACTIVE or no IPv4-mapped GID after 10 s"
    usleep 50000
  done
done
{
  $IP -br addr
  $IP rule
  /usr/bin/rdma link
} >/tmp/net.txt 2>&1
# The fabric itself first: a short pingpong between w1's and w4's devices over the bridge.
ibv_rc_pingpong -d rxw4 -g "$(/opt/gid_index rxw4)" -n 20 >/tmp/sweep-pingpong-server.txt 2>&1 &
pp=$!
pt_wait_tcp_listen 18515 10 || die "ibv_rc_pingpong server on rxw4 did not listen"
ibv_rc_pingpong -d rxw1 -g "$(/opt/gid_index rxw1)" -n 20 127.0.0.1 >/tmp/sweep-pingpong.txt 2>&1 ||
  die "ibv_rc_pingpong rxw1 -> rxw4 over br0 failed: $(cat /tmp/sweep-pingpong.txt)"
wait $pp
say "fabric ready at $(uptime_s)s: rxw1..rxw4 on vw1..vw4 (br0)"

# ------------------------------------------------------------------ cluster
cluster_start_coordinator --heartbeat-ms 200
for i in 1 2 3 4; do
  cluster_start_worker "w$i" "" --nic "rxw$i"
done
cluster_wait_online 4 || die "workers did not come online: $(cat /tmp/worker-w*.log)"
$G workers
$G workers -o json >/tmp/workers.json

printf 'thresholds:\n  best_pair_fraction_min: %s\n' "$SWEEP_FRACTION" >/tmp/cluster.yaml

# sweep NAME ARGS...: one all-pairs verbs sweep; its report (with results) in sweep-NAME.json,
# its exit code in sweep_rcs.txt, the text report of `sweep show` in sweep-NAME.txt.
sweep() {
  name=$1
  shift
  t0=$(uptime_s)
  timeout 300 $G sweep run --pattern all-pairs --transport verbs --size 64KiB \
    --iters "$SWEEP_ITERS" --max-concurrency 1 --name "$name" \
    --results -o json "$@" >"/tmp/sweep-$name.json" 2>"/tmp/sweep-$name.err"
  rc=$?
  t1=$(uptime_s)
  echo "$name rc=$rc" >>/tmp/sweep_rcs.txt
  id=$(grep -o '"id": *"[^"]*"' "/tmp/sweep-$name.json" | head -1 | cut -d'"' -f4)
  if [ -n "$id" ]; then
    $G sweep show "$id" >"/tmp/sweep-$name.txt" 2>&1
    $G sweep show "$id" -o json >"/tmp/sweep-$name-show.json" 2>&1
  fi
  verdict=$(grep -o '"verdict": *"[A-Z]*"' "/tmp/sweep-$name.json" | head -1 | cut -d'"' -f4)
  top=$(tr -d '\n' <"/tmp/sweep-$name.json" | grep -o '"suspects": *\[[^]]*' |
    grep -o '"name": *"[^"]*"' | head -1 | cut -d'"' -f4)
  say "$name: rc=$rc verdict=${verdict:-?} top_suspect=${top:-none} id=${id:-?}" \
    "wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')s"
  [ -f "/tmp/sweep-$name.txt" ] && sed 's/^/  | /' "/tmp/sweep-$name.txt"
}

# The healthy fabric with the default thresholds (every test must pass, integrity included);
# then the same sweep judged again with the threshold of the degraded run, for the record
# (TCG timings are noisy: check_sweep.py reports it, it does not fail on it).
sweep healthy
[ -n "$id" ] && $G sweep judge "$id" --config /tmp/cluster.yaml -o json \
  >/tmp/sweep-healthy-judged.json 2>/tmp/sweep-healthy-judged.err
$TC qdisc add dev vw3 root netem delay "$SWEEP_DELAY" || die "tc netem on vw3"
$TC qdisc show dev vw3 >>/tmp/net.txt 2>&1
say "degraded vw3 (w3/rxw3): netem delay $SWEEP_DELAY"
sweep degraded --config /tmp/cluster.yaml

export_all
# The guest's verdict on the exit codes; check_sweep.py checks the reports and the rows.
rc_h=$(sed -n 's/^healthy rc=//p' /tmp/sweep_rcs.txt)
rc_d=$(sed -n 's/^degraded rc=//p' /tmp/sweep_rcs.txt)
if [ "$rc_h" = 0 ] && [ "$rc_d" = 1 ]; then
  say "VERDICT ok (healthy sweep exit 0, degraded sweep exit 1)"
  exit 0
fi
say "VERDICT FAILED (healthy sweep exit $rc_h, want 0; degraded sweep exit $rc_d, want 1)"
exit 1
