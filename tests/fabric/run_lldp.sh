#!/usr/bin/env bash
# RoCE from LLDP against real lldpd (ctest label `fabric`, tests/fabric/README.md): two network
# namespaces joined by a veth pair, lldpd in each (its own control socket); the "switch" side
# calls itself leaf07 and names its port Ethernet12. An RDMA device cannot exist on a veth here
# (no rdma_rxe module), so the host's RDMA device comes from a generated sysfs tree whose RoCE
# port's GID is bound to the host side of the veth; everything LLDP is real.
#
#   1. `gdrmesh fabric discover --lldp` in the host namespace, polled until lldpd has heard the
#      switch (a deadline, not a fixed sleep): the snapshot must link roce0 to leaf07[Ethernet12]
#      with the switch side's MAC as chassis ID, and say it is an estimate;
#   2. through a real coordinator and a real worker (both in the host namespace):
#      `fabric discover --worker h0001 --lldp` stores the snapshot (source lldp, no findings);
#      then `fabric discover --lldp --all-workers` with two simulated workers beside it stores
#      one snapshot: h0001 answered (its NIC on leaf07[Ethernet12]), the others skipped;
#   3. the switch's lldpd stops (it sends a shutdown LLDPDU): polled until the NIC has no
#      neighbour; `gdrmesh fabric diff` of the two snapshots must be a neighbour_gone finding
#      naming leaf07[Ethernet12], and so must the coordinator's next stored snapshot.
#
#   run_lldp.sh GDRMESH
#
# Exit 77 (ctest: skipped) with the reason when lldpd is not installed or network namespaces
# cannot be made (needs root or CAP_NET_ADMIN).
set -euo pipefail
gdrmesh="$1"

skip() { echo "SKIPPED: $*"; exit 77; }
for tool in lldpd lldpcli ip; do
  command -v "$tool" >/dev/null || skip "$tool is not installed (apt install lldpd iproute2)"
done

tag="g$$"
ns_sw="gdrmesh-lldp-sw-$tag"
ns_h="gdrmesh-lldp-h-$tag"
if_sw="${tag}s"  # interface names: at most 15 characters
if_h="${tag}h"
work="$(mktemp -d "${TMPDIR:-/tmp}/gdrmesh-lldp.XXXXXX")"
chmod 755 "$work"  # lldpcli runs as _lldpd (set-user-ID) and must reach the sockets
pids=()
cleanup() {
  # Only what this script made.
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  ip netns del "$ns_sw" 2>/dev/null || true
  ip netns del "$ns_h" 2>/dev/null || true
  [[ -n "${KEEP:-}" ]] || rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for f in lldpd-sw.log lldpd-h.log discover.err coord.log worker.log sim.log; do
    echo "--- $f"
    tail -20 "$work/$f" 2>/dev/null || true
  done
  exit 1
}

ip netns add "$ns_sw" 2>"$work/netns.err" ||
  skip "cannot make a network namespace (needs root or CAP_NET_ADMIN): $(cat "$work/netns.err")"
ip netns add "$ns_h"
ip link add "$if_sw" type veth peer name "$if_h"
ip link set "$if_sw" netns "$ns_sw"
ip link set "$if_h" netns "$ns_h"
ip -n "$ns_sw" link set "$if_sw" up
ip -n "$ns_h" link set "$if_h" up
ip -n "$ns_h" link set lo up
sw_mac="$(cat "/sys/class/net/$if_sw/address" 2>/dev/null ||
  ip netns exec "$ns_sw" cat "/sys/class/net/$if_sw/address")"

# The host's RDMA device: roce0 port 1, RoCE v2, its GID bound to the veth.
sys="$work/sysfs"
port="$sys/sys/class/infiniband/roce0/ports/1"
mkdir -p "$port/gids" "$port/gid_attrs/ndevs" "$port/gid_attrs/types"
echo "4: ACTIVE" >"$port/state"
echo "Ethernet" >"$port/link_layer"
echo "100 Gb/sec (2X HDR)" >"$port/rate"
echo "fe80:0000:0000:0000:0000:00ff:fe00:0001" >"$port/gids/0"
echo "$if_h" >"$port/gid_attrs/ndevs/0"
echo "RoCE v2" >"$port/gid_attrs/types/0"

cat >"$work/sw.conf" <<EOF
configure system hostname leaf07
configure lldp tx-interval 1
configure lldp portidsubtype local Ethernet12 description "to h0001 roce0"
EOF
cat >"$work/h.conf" <<EOF
configure system hostname h0001
configure lldp tx-interval 1
EOF
ip netns exec "$ns_sw" lldpd -d -O "$work/sw.conf" -u "$work/sw.sock" >"$work/lldpd-sw.log" 2>&1 &
sw_pid=$!
pids+=("$sw_pid")
ip netns exec "$ns_h" lldpd -d -O "$work/h.conf" -u "$work/h.sock" >"$work/lldpd-h.log" 2>&1 &
pids+=("$!")

discover() {  # discover OUT.json: the exit code of `fabric discover --lldp`
  local rc=0
  ip netns exec "$ns_h" "$gdrmesh" fabric discover --lldp --lldp-socket "$work/h.sock" \
    --host h0001 --sysfs-root "$sys" -o json >"$1" 2>"$work/discover.err" || rc=$?
  return "$rc"
}
# Polls `discover` until it exits WANT or DEADLINE seconds pass.
poll() {
  local want="$1" out="$2" deadline=$((SECONDS + 30)) rc
  while true; do
    rc=0
    discover "$out" || rc=$?
    [[ "$rc" == "$want" ]] && return 0
    ((SECONDS < deadline)) || fail "fabric discover --lldp: exit $rc, want $want within 30 s: $(cat "$work/discover.err")"
    sleep 0.2
  done
}

# 1. lldpd hears the switch: the NIC's switch port, from real LLDP frames.
poll 0 "$work/before.json"
python3 - "$work/before.json" "$sw_mac" <<'EOF' || fail "snapshot: $(cat "$work/before.json")"
import json, sys
j = json.load(open(sys.argv[1]))
mac = sys.argv[2]
assert j["format"] == "gdrmesh-fabric-lldp/1" and j["source"] == "lldp", j
assert j["estimate"] == "estimate: RoCE, no forwarding tables; ECMP hides the path", j
assert j["inter_switch_links"] == "unknown" and j["routes"] == "unknown", j
assert [s["name"] for s in j["switches"]] == ["leaf07"], j["switches"]
assert j["switches"][0]["chassis_id"] == mac, (j["switches"][0], mac)
[l] = j["links"]
assert l["host"]["name"] == "h0001 roce0", l
assert l["switch"] == {"name": "leaf07", "chassis_id": mac, "port": "Ethernet12",
                       "port_descr": "to h0001 roce0"}, l
assert j["unknown"] == [], j["unknown"]
EOF
ip netns exec "$ns_h" "$gdrmesh" fabric show "$work/before.json" >"$work/show.txt"
grep -q "estimate: RoCE, no forwarding tables; ECMP hides the path" "$work/show.txt" ||
  fail "fabric show does not say it is an estimate: $(cat "$work/show.txt")"

# 2. Through the coordinator: a real worker in the host namespace asks its lldpd.
in_h=(ip netns exec "$ns_h")
"${in_h[@]}" "$gdrmesh" coordinator --listen 127.0.0.1:0 --db "$work/db" --port-file "$work/port" \
  --insecure >"$work/coord.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do [[ -s "$work/port" ]] && break; sleep 0.1; done
[[ -s "$work/port" ]] || fail "the coordinator did not start"
export GDRMESH_COORDINATOR="127.0.0.1:$(cat "$work/port")" GDRMESH_INSECURE=1
"${in_h[@]}" "$gdrmesh" worker --coordinator "$GDRMESH_COORDINATOR" --name h0001 --no-verbs \
  --no-cuda --insecure --sysfs-root "$sys" --lldp-socket "$work/h.sock" >"$work/worker.log" 2>&1 &
worker_pid=$!
pids+=("$worker_pid")
online() {
  "${in_h[@]}" "$gdrmesh" workers -o json 2>/dev/null | python3 -c '
import json, sys
print(sum(1 for w in json.load(sys.stdin) if w["state"] == "online"))' 2>/dev/null || echo 0
}
for _ in $(seq 1 300); do
  [[ "$(online)" == 1 ]] && break
  kill -0 "$worker_pid" 2>/dev/null || fail "the worker exited"
  sleep 0.1
done
[[ "$(online)" == 1 ]] || fail "the worker did not register"
rc=0
"${in_h[@]}" "$gdrmesh" fabric discover --worker h0001 --lldp -o json >"$work/c1.json" \
  2>"$work/c1.err" || rc=$?
[[ "$rc" == 0 ]] || fail "fabric discover --worker h0001 --lldp: exit $rc: $(cat "$work/c1.json" "$work/c1.err")"
python3 - "$work/c1.json" <<'EOF2' || fail "stored snapshot: $(cat "$work/c1.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["outcome"] == "ok" and d["source"] == "lldp" and not d["findings"], d
snap = d["snapshot"]
assert snap["format"] == "gdrmesh-fabric-lldp/1", snap
assert [l["switch"]["port"] for l in snap["links"]] == ["Ethernet12"], snap["links"]
assert snap["links"][0]["host"]["name"] == "h0001 roce0", snap["links"]
EOF2

# 2b. Every worker at once: the real worker beside two simulated ones (which cannot ask lldpd).
"${in_h[@]}" "$gdrmesh" worker --simulate 2 --coordinator "$GDRMESH_COORDINATOR" --insecure \
  >"$work/sim.log" 2>&1 &
sim_pid=$!
pids+=("$sim_pid")
for _ in $(seq 1 300); do [[ "$(online)" == 3 ]] && break; sleep 0.1; done
[[ "$(online)" == 3 ]] || fail "the simulated workers did not register"
rc=0
"${in_h[@]}" "$gdrmesh" fabric discover --lldp --all-workers -o json >"$work/all.json" \
  2>"$work/all.err" || rc=$?
[[ "$rc" == 1 ]] || fail "fabric discover --lldp --all-workers: exit $rc, want 1 (the simulated workers' findings): $(cat "$work/all.json" "$work/all.err")"
python3 - "$work/all.json" <<'EOF3' || fail "all-workers snapshot: $(cat "$work/all.json")"
import json, sys
d = json.load(open(sys.argv[1]))
ws = {w["worker"]: w for w in d["workers"]}
assert len(ws) == 3, ws
assert ws["h0001"] == {"worker": "h0001", "outcome": "answered", "nics": 1, "with_neighbour": 1}, ws
assert sorted(w["outcome"] for n, w in ws.items() if n != "h0001") == ["skipped", "skipped"], ws
assert d["outcome"] == "ok" and d["worker"] == "all workers" and d["source"] == "lldp", d
assert d["previous_id"] > 0, d  # diffed against the single call's snapshot: nothing changed
assert sorted({f["kind"] for f in d["findings"]}) == ["no_fabric"] and len(d["findings"]) == 2, d
snap = d["snapshot"]
assert snap["answered"] == ["h0001"], snap
assert [(l["host"]["name"], l["switch"]["name"], l["switch"]["port"]) for l in snap["links"]] == \
    [("h0001 roce0", "leaf07", "Ethernet12")], snap["links"]
EOF3
kill "$sim_pid"
wait "$sim_pid" 2>/dev/null || true

# 3. The switch's lldpd stops (shutdown LLDPDU): the neighbour goes, the diff names the port.
kill "$sw_pid"
wait "$sw_pid" 2>/dev/null || true
poll 1 "$work/after.json"
rc=0
"$gdrmesh" fabric diff "$work/before.json" "$work/after.json" -o json >"$work/diff.json" || rc=$?
[[ "$rc" == 1 ]] || fail "fabric diff: exit $rc, want 1 (a change): $(cat "$work/diff.json")"
python3 - "$work/diff.json" <<'EOF' || fail "diff: $(cat "$work/diff.json")"
import json, sys
[d] = json.load(open(sys.argv[1]))
assert d["kind"] == "neighbour_gone" and d["switch"] == "leaf07", d
assert "h0001 roce0/1: its neighbour leaf07[Ethernet12] is gone" in d["message"], d
EOF
rc=0
"${in_h[@]}" "$gdrmesh" fabric discover --worker h0001 --lldp >"$work/c2.txt" 2>&1 || rc=$?
[[ "$rc" == 1 ]] || fail "second stored discovery: exit $rc, want 1 (a finding): $(cat "$work/c2.txt")"
grep -q "neighbour_gone.*h0001 roce0/1: its neighbour leaf07\[Ethernet12\] is gone" "$work/c2.txt" ||
  fail "the stored snapshot has no neighbour_gone finding: $(cat "$work/c2.txt")"
echo "PASS: lldpd saw leaf07[Ethernet12] (chassis $sw_mac) on roce0; its loss is a neighbour_gone finding"
