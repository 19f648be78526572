#!/usr/bin/env bash
# The fabric chain end to end (ctest label `fabric`, tests/fabric/README.md): a fat tree served
# by ibsim and routed by OpenSM, discovered by `gdrmesh fabric discover --save`; then a real
# coordinator with `--fabric` and simulated workers named after the fabric's hosts, with one bad
# switch port planted (`--sim-fault port:SWITCH[PORT]:0.25`: every test whose path, traced from
# the LFTs, crosses it runs at a quarter of the bandwidth), run an all-pairs sweep. The planted
# link must be the top suspect of the stored report (`gdrmesh sweep show ID -o json`), every test between two hosts
# of the fabric must have its path stored, and the report must tell the sweep's coverage.
#
#   run_fabric_blame.sh GDRMESH GEN_ARGS...    e.g. run_fabric_blame.sh build/cli/gdrmesh --levels 2 --hosts 16
#
# Exit 77 (ctest: skipped) with the reason when ibsim, OpenSM or infiniband-diags are missing.
# Waits are for events (a line in a log, a file, a count of workers), each bounded.
set -euo pipefail
gdrmesh="$1"
shift
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# shellcheck source=lib.sh
source "$here/lib.sh"
fabric_require ibsim opensm ibnetdiscover python3 sqlite3

work="$(mktemp -d "${TMPDIR:-/tmp}/gdrmesh-fabric-blame.XXXXXX")"
sim_pid="" coord_pid="" workers_pid=""
cleanup() {
  # Only the processes this script started.
  for p in "$workers_pid" "$coord_pid"; do
    [[ -n "$p" ]] && kill "$p" 2>/dev/null || true
  done
  for p in "$workers_pid" "$coord_pid"; do
    [[ -n "$p" ]] && wait "$p" 2>/dev/null || true
  done
  fabric_sim_stop
  if [[ -n "${GDRMESH_FABRIC_KEEP_DIR:-}" ]]; then echo "kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
fail() {
  echo "FAILED: $*"
  for f in coordinator.log workers.log sweep.err; do
    [[ -f "$work/$f" ]] && { echo "--- $f (last lines)"; tail -20 "$work/$f"; }
  done
  exit 1
}
# Waits (bounded) until the command succeeds: every step waits for an event, never a fixed time.
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

fabric_sim_start "$work" fabric-blame || fail "ibsim"
fabric_route "$work" || fail "opensm"
"${sim_env[@]}" "$gdrmesh" fabric discover --save "$work/fabric.json" -o json >/dev/null \
  2>"$work/discover.err" || { cat "$work/discover.err"; fail "gdrmesh fabric discover"; }
# The snapshot is all the rest needs: the simulator goes.
fabric_sim_stop

# The planted link: the first host's leaf's first up-link (a port cabled to another switch).
read -r leaf port < <(python3 - "$work/fabric.json" "$first_host" <<'PY'
import json, sys
f = json.load(open(sys.argv[1]))
switches = {s["name"] for s in f["switches"]}
for s in f["switches"]:
    ports = s["ports"]
    if any(p.get("remote", {}).get("node", "").split(" ")[0] == sys.argv[2] for p in ports):
        ups = sorted(p["port"] for p in ports if p.get("remote", {}).get("node") in switches)
        print(s["name"], ups[0])
        break
PY
)
[[ -n "$leaf" && -n "$port" ]] || fail "no up-link found for $first_host's leaf"
echo "planted: port:$leaf[$port]:0.25"

export GDRMESH_INSECURE=1
# A start with a file that is no snapshot stops, naming the option and the fix.
echo '{"not": "a snapshot"}' >"$work/bad.json"
rc=0
"$gdrmesh" coordinator --insecure --listen 127.0.0.1:0 --db "$work/bad.db" --fabric "$work/bad.json" \
  >"$work/bad.log" 2>&1 || rc=$?
[[ $rc -eq 2 ]] && grep -q -- "--fabric $work/bad.json: .*fabric discover --save" "$work/bad.log" || {
  cat "$work/bad.log"; fail "a coordinator with --fabric on a bad file: exit $rc"; }
printf 'thresholds:\n  bandwidth_gbps_min: 50\n' >"$work/cluster.yaml"
# OpenSM's ftree wrote its compute-node order beside its log: cover sweeps start from it.
ca_order="$work/opensm-ftree-ca-order.dump"
[[ -s "$ca_order" ]] || fail "OpenSM wrote no $ca_order"
"$gdrmesh" coordinator --insecure --listen 127.0.0.1:0 --db "$work/r.db" --port-file "$work/port" \
  --fabric "$work/fabric.json" --fabric-ca-order "$ca_order" --config "$work/cluster.yaml" \
  >"$work/coordinator.log" 2>&1 &
coord_pid=$!
await "coordinator port file within 30 s" 300 test -s "$work/port"
addr="127.0.0.1:$(cat "$work/port")"
grep -q "fabric $work/fabric.json: " "$work/coordinator.log" || fail "the coordinator did not announce its fabric"
# A new database knows no worker yet: every HCA is reported without one, at start.
grep -q "fabric: 0 of 0 workers matched to HCAs; HCAs without a worker: h0001 mlx5_0" \
  "$work/coordinator.log" || fail "the coordinator did not report the HCAs without a worker"
"$gdrmesh" worker --simulate "$hosts" --sim-fabric "$work/fabric.json" \
  --sim-fault "port:$leaf[$port]:0.25" --sim-bandwidth-gbps 100 --sim-test-ms 1 \
  --coordinator "$addr" >"$work/workers.log" 2>&1 &
workers_pid=$!
online() {
  [[ $(GDRMESH_COORDINATOR="$addr" "$gdrmesh" workers -o json 2>/dev/null | grep -c '"state": "online"' || true) -ge $hosts ]]
}
await "$hosts simulated workers online within 60 s" 600 online

rc=0
GDRMESH_COORDINATOR="$addr" "$gdrmesh" sweep run --pattern all-pairs --size 64KiB --iters 10 \
  -o json >"$work/sweep.json" 2>"$work/sweep.err" || rc=$?
[[ $rc -eq 1 ]] || fail "sweep run exited $rc (expected 1: the slow pairs fail)"
id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["progress"]["id"])' "$work/sweep.json")
# The stored report, as an operator reads it later.
GDRMESH_COORDINATOR="$addr" "$gdrmesh" sweep show "$id" -o json >"$work/report.json" \
  2>"$work/report.err" || true
python3 - "$work/report.json" "$leaf" "$port" "$hosts" <<'PY' || fail "the report does not blame $leaf[$port]"
import json, sys
r = json.load(open(sys.argv[1]))
leaf, port, hosts = sys.argv[2], sys.argv[3], int(sys.argv[4])
sus = r.get("suspects", [])
top = sus[0] if sus else {}
print("top suspect: %s %s (score %s)" % (top.get("kind"), top.get("name"), top.get("score")))
for e in top.get("evidence", []):
    print("  " + e)
notes = r.get("notes", [])
for n in notes:
    if n.startswith("fabric"):
        print("note: " + n)
ok = top.get("kind") == "link" and ("%s[%s]" % (leaf, port)) in top.get("name", "")
ok = ok and any(n.startswith("fabric: %d of %d workers matched" % (hosts, hosts)) for n in notes)
ok = ok and any(n.startswith("fabric coverage: ") for n in notes)
# No fabric_reader here: the link is judged from the slow pairs' paths alone, named first in the
# sweep's reason, and its verdict says that no counters were read.
reason = r.get("progress", {}).get("reason", "")
print("reason: " + reason)
ok = ok and reason.startswith("link ") and ("%s[%s]" % (leaf, port)) in reason.split(":")[0]
bad = [l for l in r.get("links", []) if ("%s[%s]" % (leaf, port)) in l.get("link", "")]
ok = ok and len(bad) == 1 and bad[0].get("verdict") == "slow_pairs"
ok = ok and any(e.startswith("no counters were read") for e in (bad[0].get("evidence", []) if bad else []))
sys.exit(0 if ok else 1)
PY
# `gdrmesh test` between two matched workers stores its path both ways, as a sweep's tests do,
# and `gdrmesh result ID` shows it (from the LFTs of the coordinator's fabric file).
first=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["hosts"][0]["name"].split()[0])' "$work/fabric.json")
last=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["hosts"][-1]["name"].split()[0])' "$work/fabric.json")
rc=0
GDRMESH_COORDINATOR="$addr" "$gdrmesh" test "$first" "$last" --size 64KiB --iters 10 -o json \
  >"$work/test.json" 2>"$work/test.err" || rc=$?
[[ $rc -le 1 ]] || { cat "$work/test.err"; fail "gdrmesh test $first $last exited $rc"; }
test_id=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d=d[0] if isinstance(d,list) else d; print(d["test_id"])' "$work/test.json")
GDRMESH_COORDINATOR="$addr" "$gdrmesh" result "$test_id" -o json >"$work/result.json" 2>"$work/result.err" ||
  { cat "$work/result.err"; fail "gdrmesh result $test_id failed"; }
GDRMESH_COORDINATOR="$addr" "$gdrmesh" result "$test_id" >"$work/result.txt" 2>&1 || true
python3 - "$work/result.json" "$work/fabric.json" <<'PY' || { cat "$work/result.txt"; fail "the single test's path is not shown"; }
import json, sys
hops = json.load(open(sys.argv[1])).get("fabric_path", [])
fwd = [h for h in hops if h["direction"] == "forward"]
rev = [h for h in hops if h["direction"] == "reverse"]
print("single test path: %d hops forward, %d reverse, from %s" % (len(fwd), len(rev), {h["fabric"] for h in hops}))
ok = len(fwd) >= 3 and len(rev) == len(fwd) and all(h["fabric"] == sys.argv[2] for h in hops)
sys.exit(0 if ok else 1)
PY
grep -q "^path (switch\[in port>out port\], from the LFTs of $work/fabric.json)" "$work/result.txt" ||
  { cat "$work/result.txt"; fail "gdrmesh result does not print the path"; }
# Every test has its path stored, both directions, hop by hop.
tests=$(sqlite3 "file:$work/r.db?mode=ro" "SELECT COUNT(*) FROM results WHERE run_id = '$id'")
traced=$(sqlite3 "file:$work/r.db?mode=ro" \
  "SELECT COUNT(DISTINCT test_id) FROM test_path_hops WHERE sweep_id = '$id' AND direction = 'reverse'")
echo "paths stored: $traced of $tests tests (both directions)"
[[ "$tests" -gt 0 && "$traced" -eq "$tests" ]] || fail "paths stored for $traced of $tests tests"
grep -q "simulated" "$work/workers.log" || fail "the workers did not say they are simulated"

# `cover` as a runnable pattern: its few rounds must carry tests over every routable directed
# inter-switch link (the coverage note, from the paths of the tests that ran).
rc=0
GDRMESH_COORDINATOR="$addr" "$gdrmesh" sweep run --pattern cover --direction bidir --size 64KiB \
  --iters 10 -o json >"$work/cover.json" 2>"$work/cover.err" || rc=$?
[[ $rc -le 1 ]] || { cat "$work/cover.err"; fail "sweep run --pattern cover exited $rc"; }
python3 - "$work/cover.json" <<'PY' || fail "the cover sweep does not load every routable link"
import json, re, sys
r = json.load(open(sys.argv[1]))
notes = r.get("notes", [])
plan = [n for n in notes if n.startswith("cover: ")]
cov = [n for n in notes if n.startswith("fabric coverage: ") and "carried" in n]
for n in plan + cov:
    print("cover note: " + n)
m = re.match(r"cover: (\d+) rounds .* load (\d+) of (\d+) routable", plan[0]) if plan else None
c = re.match(r"fabric coverage: (\d+) of (\d+) directed", cov[0]) if cov else None
ok = bool(m and c) and int(m.group(2)) == int(m.group(3)) and int(c.group(1)) >= int(m.group(3))
ok = ok and int(m.group(1)) <= 2
ok = ok and any("seeded with OpenSM's compute-node order" in n for n in plan)
sys.exit(0 if ok else 1)
PY
# The sweep ran the pairs `sweep plan --ca-order` plans for the same fabric and order (the workers
# are named after the hosts; each pair one bidirectional test; the localiser's retests left out).
"$gdrmesh" sweep plan --pattern cover --fabric "$work/fabric.json" --ca-order "$ca_order" -o json \
  >"$work/cover-plan.json" || fail "sweep plan --pattern cover --ca-order"
"$gdrmesh" sweep plan --pattern cover --fabric "$work/fabric.json" -o json \
  >"$work/cover-greedy.json" || fail "sweep plan --pattern cover"
cover_id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["progress"]["id"])' "$work/cover.json")
sqlite3 "file:$work/r.db?mode=ro" \
  "SELECT r.initiator_worker, r.target_worker FROM results r JOIN sweep_verdicts v
   ON v.sweep_id = r.run_id AND v.test_id = r.test_id WHERE r.run_id = '$cover_id' AND v.retest = 0" \
  >"$work/cover-ran.txt"
python3 - "$work/cover-plan.json" "$work/cover-greedy.json" "$work/cover-ran.txt" <<'PY' ||
import json, sys
def planned(path):
    return sorted(tuple(sorted((p["a"].split()[0], p["b"].split()[0])))
                  for rnd in json.load(open(path))["rounds"] for p in rnd)
want, greedy = planned(sys.argv[1]), planned(sys.argv[2])
ran = sorted(tuple(sorted(l.strip().split("|"))) for l in open(sys.argv[3]) if l.strip())
print("cover sweep: %d tests, the plan with OpenSM's order %d pairs (%s the greedy's own)" %
      (len(ran), len(want), "same pairs as" if want == greedy else "other pairs than"))
sys.exit(0 if ran == want else 1)
PY
  fail "the cover sweep did not run the pairs of sweep plan --ca-order"
exit 0
