#!/usr/bin/env bash
# Fabric discovery through the coordinator (ctest label `fabric`, tests/fabric/README.md): a real
# coordinator and a real worker whose libibumad is redirected to ibsim by umad2sim
# (SIM_HOST=<first host>). `gdrmesh fabric discover --worker` asks the worker, the coordinator
# stores the snapshot; a link is unplugged through ibsim's console (Unlink); a second discovery
# is stored with a link_gone finding; `gdrmesh fabric diff previous latest` names exactly that
# link by switch and port. A second worker without InfiniBand answers a finding, not an error.
# Restarted on the same database with the first snapshot as --fabric, the coordinator adopts the
# newest stored snapshot again and logs which and why.
#
#   run_fabric_coordinator.sh GDRMESH GEN_ARGS...
#
# Exit 77 (ctest: skipped) with the reason when ibsim, OpenSM or umad2sim are missing.
set -euo pipefail
gdrmesh="$1"
shift
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# shellcheck source=lib.sh
source "$here/lib.sh"
fabric_require ibsim opensm ibnetdiscover python3

work="$(mktemp -d "${TMPDIR:-/tmp}/gdrmesh-fabric-coord.XXXXXX")"
pids=()
cleanup() {
  # Only the processes this script started.
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  fabric_sim_stop
  [[ -n "${KEEP:-}" ]] || rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for f in coord.log worker.log noib.log; do
    echo "--- $f"
    tail -20 "$work/$f" 2>/dev/null || true
  done
  exit 1
}

python3 "$here/gen_fat_tree.py" "$@" >"$work/net"
fabric_sim_start "$work" fabric-coord || fail "ibsim"
fabric_route "$work" || fail "opensm failed"

# The coordinator (no preload: it never touches the fabric itself) and two workers.
"$gdrmesh" coordinator --listen 127.0.0.1:0 --db "$work/db" --port-file "$work/port" \
  --insecure >"$work/coord.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do [[ -s "$work/port" ]] && break; sleep 0.1; done
[[ -s "$work/port" ]] || fail "the coordinator did not start"
export GDRMESH_COORDINATOR="127.0.0.1:$(cat "$work/port")" GDRMESH_INSECURE=1
"${sim_env[@]}" "$gdrmesh" worker --coordinator "$GDRMESH_COORDINATOR" --name "$first_host" \
  --no-verbs --no-cuda --insecure >"$work/worker.log" 2>&1 &
pids+=($!)
"$gdrmesh" worker --coordinator "$GDRMESH_COORDINATOR" --name noib --no-verbs --no-cuda \
  --insecure >"$work/noib.log" 2>&1 &
pids+=($!)
online() {
  "$gdrmesh" workers -o json 2>/dev/null | python3 -c '
import json, sys
print(sum(1 for w in json.load(sys.stdin) if w["state"] == "online"))' 2>/dev/null || echo 0
}
for _ in $(seq 1 300); do [[ "$(online)" == 2 ]] && break; sleep 0.1; done
[[ "$(online)" == 2 ]] || fail "the workers did not register"

# 1. The first discovery through the coordinator: stored, no finding on a healthy tree.
rc=0
"$gdrmesh" fabric discover --worker "$first_host" -o json >"$work/d1.json" 2>"$work/d1.err" || rc=$?
[[ $rc -eq 0 ]] || fail "fabric discover --worker $first_host exited $rc: $(cat "$work/d1.json" "$work/d1.err")"
python3 - "$work/d1.json" "$work/net" <<'PY' || fail "first snapshot wrong"
import json, sys
d = json.load(open(sys.argv[1]))
net = open(sys.argv[2]).read()
hosts = sum(1 for l in net.splitlines() if l.startswith("Hca"))
switches = sum(1 for l in net.splitlines() if l.startswith("Switch"))
ok = (d["outcome"] == "ok" and d["id"] > 0 and d["hosts"] == hosts and d["switches"] == switches
      and len(d["snapshot"]["links"]) == d["links"] and not d["findings"])
print("stored @%d: %d switches, %d hosts, %d links, %d findings -> %s"
      % (d["id"], d["switches"], d["hosts"], d["links"], len(d["findings"]), "ok" if ok else "WRONG"))
sys.exit(0 if ok else 1)
PY

# 2. A worker without InfiniBand: a stored finding, never a crash (only where this host has no
# umad interface of its own, else that worker would find one).
if [[ ! -e /sys/class/infiniband_mad/abi_version ]]; then
  rc=0
  "$gdrmesh" fabric discover --worker noib >"$work/noib.out" 2>&1 || rc=$?
  [[ $rc -eq 3 ]] || fail "discover on a worker without InfiniBand exited $rc, expected 3: $(cat "$work/noib.out")"
  grep -q "no InfiniBand device on noib" "$work/noib.out" || fail "no finding named the worker: $(cat "$work/noib.out")"
  echo "worker without InfiniBand: $(grep -m1 'no InfiniBand device on noib' "$work/noib.out" | cut -c1-100)"
fi

# 3. A fault through ibsim's console: unplug the first host's leaf's first up-link.
read -r leaf port < <(python3 - "$work/net" "$first_host" <<'PY'
import re, sys
sw, cur, first = {}, None, None
for line in open(sys.argv[1]):
    m = re.match(r'^(Switch|Hca)\s+\d+\s+"([^"]+)"', line)
    if m:
        cur = m.group(2) if m.group(1) == "Switch" else None
        continue
    m = re.match(r'^\[(\d+)\]\s+"([^"]+)"', line)
    if m and cur:
        sw.setdefault(cur, []).append((int(m.group(1)), m.group(2)))
        if m.group(2) == sys.argv[2]:
            first = cur
ups = [p for p, r in sw[first] if r in sw]
print(first, min(ups))
PY
)
echo "Unlink \"$leaf\"[$port]" >&9
# ibsim applies its console on its own thread: discover until a stored snapshot has findings
# (bounded; each try is a real discovery, stored).
found=""
for _ in $(seq 1 50); do
  rc=0
  "$gdrmesh" fabric discover --worker "$first_host" -o json >"$work/d2.json" 2>"$work/d2.err" || rc=$?
  if [[ $rc -eq 1 ]]; then found=1; break; fi
  [[ $rc -eq 0 ]] || fail "second discovery exited $rc: $(cat "$work/d2.json" "$work/d2.err")"
  sleep 0.1
done
[[ -n "$found" ]] || fail "no stored discovery saw a change after Unlink $leaf[$port]"

# 4. The stored snapshots diffed by reference name exactly that link.
rc=0
"$gdrmesh" fabric diff previous latest -o json >"$work/diff.json" 2>"$work/diff.err" || rc=$?
[[ $rc -eq 1 ]] || fail "fabric diff previous latest exited $rc: $(cat "$work/diff.json" "$work/diff.err")"
"$gdrmesh" fabric history -o json >"$work/history.json" || fail "fabric history failed"
"$gdrmesh" fabric show latest >"$work/show.txt" || fail "fabric show latest failed"
python3 - "$work/diff.json" "$work/d2.json" "$work/history.json" "$leaf" "$port" <<'PY' || fail "diff of the stored snapshots wrong"
import json, sys
diff = json.load(open(sys.argv[1]))
stored = json.load(open(sys.argv[2]))
history = json.load(open(sys.argv[3]))
leaf, port = sys.argv[4], int(sys.argv[5])
name = "%s[%d]" % (leaf, port)
def names_link(findings):
    # The finding's switch and port are one end of the link (the `a` end between switches:
    # docs/fabric.md), the message names both.
    if len(findings) != 1 or findings[0]["kind"] != "link_gone":
        return False
    f = findings[0]
    return name in f["message"] and "%s[%d]" % (f["switch"], f["port"]) in f["message"]
ok_snaps = [h for h in history if h["outcome"] == "ok"]
ok = (names_link(diff) and names_link(stored["findings"]) and stored["previous_id"] > 0
      and len(ok_snaps) >= 2 and ok_snaps[0]["id"] == stored["id"])
print("fabric diff previous latest after Unlink %s: %s; stored @%d against @%d: %s -> %s"
      % (name, [f["message"] for f in diff], stored["id"], stored["previous_id"],
         [f["kind"] for f in stored["findings"]], "ok" if ok else "WRONG"))
sys.exit(0 if ok else 1)
PY

# 5. A restart keeps the adoption: the coordinator started again on the same database with the
# first snapshot as its --fabric (discovered before the stored ones) adopts the newest stored
# snapshot with tables again, and its log says which and why.
python3 -c 'import json, sys; json.dump(json.load(open(sys.argv[1]))["snapshot"], open(sys.argv[2], "w"))' \
  "$work/d1.json" "$work/fabric.json"
latest=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["id"])' "$work/d2.json")
kill "${pids[0]}"
wait "${pids[0]}" 2>/dev/null || true
rm -f "$work/port"
"$gdrmesh" coordinator --listen 127.0.0.1:0 --db "$work/db" --port-file "$work/port" \
  --fabric "$work/fabric.json" --insecure >"$work/coord2.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do [[ -s "$work/port" ]] && break; sleep 0.1; done
[[ -s "$work/port" ]] || { cat "$work/coord2.log"; fail "the restarted coordinator did not start"; }
grep -q "fabric: snapshot @$latest from $first_host (discovered [^)]*) replaces $work/fabric.json" \
  "$work/coord2.log" || { cat "$work/coord2.log"; fail "the restart did not adopt @$latest again"; }
echo "restart: $(grep -o "fabric: snapshot @$latest from [^,]*" "$work/coord2.log" | head -1)"
exit 0
