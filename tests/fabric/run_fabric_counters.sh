#!/usr/bin/env bash
# Port counters around a sweep's rounds, end to end (ctest label `fabric`, tests/fabric/README.md):
# a fat tree served by ibsim and routed by OpenSM, discovered with `gdrmesh fabric discover
# --save`; a real coordinator with `--fabric` and `fabric_reader: reader` in its config; one real
# worker `reader` under umad2sim (it reads the switch ports' PortCounters through ibsim) and
# simulated workers named after the fabric's hosts. A one-round sweep between two hosts of
# different leaves; while it is held (the simulated workers stopped with SIGSTOP once the reader
# has read the counters before the round), ibsim's console raises the up-link's
# SymbolErrorCounter (`PerformanceSet "leaf"[port] PortCounters.SymbolErrorCounter=N`), checked
# with perfquery before the workers go on. The sweep is run as an operator accepts a cluster
# (`gdrmesh accept`): every pair passes, but the link must fail it (exit 1, verdict FAIL, the
# reason naming the link by both ends). The report must give that link the verdict "errors" (and
# the links no test crossed "not_covered"), name it as the top suspect with the counters'
# evidence, list it in `sweep show`'s table and the JUnit fabric suite, and store the change.
#
#   run_fabric_counters.sh GDRMESH GEN_ARGS...   e.g. run_fabric_counters.sh build/cli/gdrmesh --levels 2 --hosts 16
#
# Exit 77 (ctest: skipped) with the reason when ibsim, OpenSM or infiniband-diags are missing.
# Waits are for events (a line in a log, a file, a counter read back), each bounded.
set -euo pipefail
gdrmesh="$1"
shift
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# shellcheck source=lib.sh
source "$here/lib.sh"
fabric_require ibsim opensm ibnetdiscover perfquery python3 sqlite3

work="$(mktemp -d "${TMPDIR:-/tmp}/gdrmesh-fabric-counters.XXXXXX")"
sim_pid="" coord_pid="" workers_pid="" reader_pid="" sweep_pid=""
cleanup() {
  # Only the processes this script started; stopped workers are continued first.
  [[ -n "$workers_pid" ]] && kill -CONT "$workers_pid" 2>/dev/null || true
  for p in "$sweep_pid" "$workers_pid" "$reader_pid" "$coord_pid"; do
    [[ -n "$p" ]] && kill "$p" 2>/dev/null || true
  done
  for p in "$sweep_pid" "$workers_pid" "$reader_pid" "$coord_pid"; do
    [[ -n "$p" ]] && wait "$p" 2>/dev/null || true
  done
  fabric_sim_stop
  if [[ -n "${GDRMESH_FABRIC_KEEP_DIR:-}" ]]; then echo "kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
fail() {
  echo "FAILED: $*"
  for f in coordinator.log reader.log workers.log sweep.err; do
    [[ -f "$work/$f" ]] && { echo "--- $f (last lines)"; tail -20 "$work/$f"; }
  done
  exit 1
}
await() {
  local what="$1" tries="$2"
  shift 2
  for _ in $(seq 1 "$tries"); do
    "$@" && return 0
    sleep 0.1
  done
  fail "$what"
}

python3 "$here/gen_fat_tree.py" "$@" >"$work/net"
hosts=$(grep -c '^Hca' "$work/net")
echo "fabric: $* -> $hosts hosts"

fabric_sim_start "$work" fabric-counters || fail "ibsim"
fabric_route "$work" || fail "opensm"
"${sim_env[@]}" "$gdrmesh" fabric discover --save "$work/fabric.json" -o json >/dev/null \
  2>"$work/discover.err" || { cat "$work/discover.err"; fail "gdrmesh fabric discover"; }

# The pair: the first host and the first host of another leaf; the planted port: the up-link
# its path leaves the first leaf by (read from the LFTs by `gdrmesh fabric path`).
read -r src dst leaf port leaf_lid < <(python3 - "$work/fabric.json" "$gdrmesh" <<'PY'
import json, subprocess, sys
f = json.load(open(sys.argv[1]))
switches = {s["name"]: s for s in f["switches"]}
leaf_of = {}  # node description ("h0001 mlx5_0") -> its leaf
for s in f["switches"]:
    for p in s["ports"]:
        node = p.get("remote", {}).get("node", "")
        if node and node not in switches:
            leaf_of[node] = s["name"]
hosts = sorted(leaf_of)
src = hosts[0]
dst = next(h for h in hosts if leaf_of[h] != leaf_of[src])
path = json.loads(subprocess.check_output([sys.argv[2], "fabric", "path", sys.argv[1], src, dst,
                                           "-o", "json"]))
hop = path[0]["hops"][0]
print(src.split(" ")[0], dst.split(" ")[0], hop["switch"], hop["out_port"],
      switches[hop["switch"]]["lid"])
PY
)
[[ -n "$leaf" && -n "$port" ]] || fail "no path from $src to $dst"
echo "pair $src -> $dst leaves $leaf by port $port (LID $leaf_lid)"

export GDRMESH_INSECURE=1
printf 'fabric_reader: reader\nfabric_thresholds:\n  SymbolErrorCounter: 120/h\n' >"$work/cluster.yaml"
"$gdrmesh" coordinator --insecure --listen 127.0.0.1:0 --db "$work/r.db" --port-file "$work/port" \
  --heartbeat-ms 2000 --fabric "$work/fabric.json" --config "$work/cluster.yaml" \
  >"$work/coordinator.log" 2>&1 &
coord_pid=$!
await "coordinator port file within 30 s" 300 test -s "$work/port"
addr="127.0.0.1:$(cat "$work/port")"
# The reader: a real worker whose management port is ibsim's (umad2sim).
"${sim_env[@]}" "$gdrmesh" worker --coordinator "$addr" --name reader --no-verbs --no-cuda \
  --insecure >"$work/reader.log" 2>&1 &
reader_pid=$!
"$gdrmesh" worker --simulate "$hosts" --sim-fabric "$work/fabric.json" --sim-bandwidth-gbps 100 \
  --sim-test-ms 1 --coordinator "$addr" >"$work/workers.log" 2>&1 &
workers_pid=$!
online() {
  [[ $(GDRMESH_COORDINATOR="$addr" "$gdrmesh" workers -o json 2>/dev/null | grep -c '"state": "online"' || true) -ge $((hosts + 1)) ]]
}
await "$hosts simulated workers and the reader online within 60 s" 600 online

# Hold the round: the simulated workers stop; the sweep reads the counters before its round and
# waits for its tests.
kill -STOP "$workers_pid"
# As an operator accepts a cluster: `gdrmesh accept` with a config of one sweep.
printf 'sweeps:\n  - pattern: all-pairs\n    hosts: [%s, %s]\n    size: 64KiB\n    iters: 10\n' \
  "$src" "$dst" >"$work/accept.yaml"
GDRMESH_COORDINATOR="$addr" "$gdrmesh" accept --config "$work/accept.yaml" \
  --junit "$work/junit.xml" -o json >"$work/sweep.json" 2>"$work/sweep.err" &
sweep_pid=$!
await "the reader read the counters before the round within 60 s" 600 \
  grep -q "round 0: counters of [0-9]* switch ports read before it by reader$" "$work/coordinator.log"
echo "PerformanceSet \"$leaf\"[$port] PortCounters.SymbolErrorCounter=1234" >&9
read_back() {
  "${sim_env[@]}" perfquery "$leaf_lid" "$port" 2>/dev/null | grep -Eq 'SymbolErrorCounter:\.*1234$'
}
await "ibsim applied PerformanceSet within 30 s (perfquery $leaf_lid $port)" 300 read_back
kill -CONT "$workers_pid"
rc=0
wait "$sweep_pid" || rc=$?
sweep_pid=""
# Every pair passed; the link's errors fail the sweep, and accept exits 1 (docs/fabric.md).
[[ $rc -eq 1 ]] || { cat "$work/sweep.err"; fail "accept exited $rc, not 1 for a link with errors"; }
id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["progress"]["id"])' "$work/sweep.json")
GDRMESH_COORDINATOR="$addr" "$gdrmesh" sweep show "$id" -o json >"$work/report.json" \
  2>"$work/report.err" || true
python3 - "$work/report.json" "$leaf" "$port" <<'PY' || fail "the report does not name $leaf[$port] with its symbol errors"
import json, sys
r = json.load(open(sys.argv[1]))
leaf, port = sys.argv[2], sys.argv[3]
end = "%s[%s]" % (leaf, port)
links = r.get("links", [])
for l in links:
    print("link %s: %s %s" % (l["link"], l["verdict"], "; ".join(l.get("evidence", []))))
bad = [l for l in links if l["verdict"] not in ("ok", "not_covered")]
p = r.get("progress", {})
print("verdict %s: %s" % (p.get("verdict"), p.get("reason")))
sus = r.get("suspects", [])
top = sus[0] if sus else {}
print("top suspect: %s %s (score %s)" % (top.get("kind"), top.get("name"), top.get("score")))
for e in top.get("evidence", []):
    print("  " + e)
ok = len(bad) == 1 and end in bad[0]["link"] and bad[0]["verdict"] == "errors"
ok = ok and len(links) > 1
ok = ok and top.get("kind") == "link" and end in top.get("name", "")
ok = ok and any(("1,234 symbol errors on %s during round 0" % end) in e for e in top.get("evidence", []))
ok = ok and any("/h (threshold 120/h)" in e for e in top.get("evidence", []))
# The sweep's stored verdict fails on the link, named by both ends with its evidence.
ok = ok and p.get("verdict") == "FAIL"
want = "link %s: errors: 1,234 symbol errors on %s" % (bad[0]["link"] if bad else "?", end)
ok = ok and p.get("reason", "").startswith(want)
# The links no test of the one-pair sweep crossed are said to be so.
ok = ok and any(l["verdict"] == "not_covered" for l in links)
sys.exit(0 if ok else 1)
PY
# The table lists the bad link first, with both ends; the JUnit fabric suite fails its case.
GDRMESH_COORDINATOR="$addr" "$gdrmesh" sweep show "$id" >"$work/report.txt" 2>&1 || true
grep -A3 "^links (" "$work/report.txt" || true
grep -Eq "^errors +[^ ].*$leaf\[$port\].*$leaf port $port \(0x" "$work/report.txt" ||
  fail "sweep show does not list $leaf[$port] with errors and both ends"
grep -q "^reason .*$leaf\[$port\].*errors" "$work/report.txt" ||
  fail "sweep show's reason does not name $leaf[$port]"
grep -q "<failure message=\"link errors: 1,234 symbol errors on $leaf\[$port\]" "$work/junit.xml" ||
  fail "the JUnit fabric suite does not fail $leaf[$port]"
rows=$(sqlite3 "file:$work/r.db?mode=ro" "SELECT delta FROM link_counter_deltas WHERE sweep_id = '$id' \
  AND counter = 'SymbolErrorCounter' AND switch_name = '$leaf' AND port = $port")
echo "stored: SymbolErrorCounter of $leaf[$port] in round 0: $rows"
[[ "$rows" == "1234" ]] || fail "the change was not stored as a row (got '$rows')"
exit 0
