#!/usr/bin/env bash
# Fabric discovery through the coordinator (ctest label `fabric`, tests/fabric/README.md): a real
# coordinator and a real worker whose libibumad is redirected to ibsim by umad2sim
# (SIM_HOST=<first host>). `gdrmesh fabric discover --worker` asks the worker, the coordinator
# stores the snapshot; a link is unplugged through ibsim's console (Unlink); a second discovery
# is stored with a link_gone finding; `gdrmesh fabric diff previous latest` names exactly that
# link by switch and port. A second worker without InfiniBand answers a finding, not an error.
# OpenSM then routes around the unplugged cable and a third discovery stores the new tables.
# Restarted on the same database with the first snapshot as --fabric, the coordinator adopts the
# newest stored snapshot again and logs which and why; a cover sweep of simulated workers named
# after the fabric's hosts, run after the restart, must be traced through that snapshot's tables:
# every stored path names it and none crosses the unplugged cable, and the coverage note counts
# its links (one cable fewer than the file's).
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
  for f in coord.log worker.log noib.log coord2.log sim.log cover.err; do
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
# The number of workers online (no Python start per poll: each costs 0.1-0.3 s here).
online() {
  "$gdrmesh" workers -o json 2>/dev/null | grep -c '"state": "online"' || true
}
for _ in $(seq 1 300); do [[ "$(online)" -ge 2 ]] && break; sleep 0.1; done
[[ "$(online)" -ge 2 ]] || fail "the workers did not register"

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

# 5. OpenSM routes the fabric again around the unplugged cable (as a subnet manager does after the
# port goes down); the next discovery stores the new tables: an ok snapshot without findings (the
# links are those of the one before) with one cable fewer than the first.
fabric_reroute "$work" || fail "opensm after Unlink"
[[ "$fabric_engine" == ftree ]] ||
  fail "OpenSM routed the tree without ${leaf}[$port] by ${fabric_engine:-nothing}, not ftree"
rc=0
"$gdrmesh" fabric discover --worker "$first_host" -o json >"$work/d3.json" 2>"$work/d3.err" || rc=$?
[[ $rc -eq 0 ]] ||
  fail "discovery after OpenSM routed again exited $rc: $(cat "$work/d3.json" "$work/d3.err")"

# 6. A restart keeps the adoption: the coordinator started again on the same database with the
# first snapshot as its --fabric (discovered before the stored ones) adopts the newest stored
# snapshot with tables again, and its log says which and why.
latest=$(python3 -c '
import json, sys
json.dump(json.load(open(sys.argv[1]))["snapshot"], open(sys.argv[2], "w"))
print(json.load(open(sys.argv[3]))["id"])' "$work/d1.json" "$work/fabric.json" "$work/d3.json")
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
# The workers are matched against the fabric the sweeps will use: the adopted snapshot.
grep -q "workers this database knows, against @$latest)" "$work/coord2.log" ||
  { cat "$work/coord2.log"; fail "the workers were not matched against the adopted @$latest"; }

# 7. A sweep after the restart is traced through the adopted snapshot's tables, not the file's:
# simulated workers named after the fabric's hosts, a cover sweep. Its stored paths must all name
# @latest and never cross the unplugged cable (either end), and its coverage note must count the
# directed inter-switch links of @latest: two fewer than fabric.json's, whose tables still send
# traffic over that cable, so a coordinator that kept the file fails every one of these checks.
export GDRMESH_COORDINATOR="127.0.0.1:$(cat "$work/port")"
hosts=$(grep -c '^Hca' "$work/net")
"$gdrmesh" worker --simulate "$hosts" --sim-fabric "$work/fabric.json" --sim-bandwidth-gbps 100 \
  --sim-test-ms 1 --coordinator "$GDRMESH_COORDINATOR" >"$work/sim.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do [[ "$(online)" -ge "$hosts" ]] && break; sleep 0.1; done
[[ "$(online)" -ge "$hosts" ]] || fail "$hosts simulated workers did not register after the restart"
rc=0
"$gdrmesh" sweep run --pattern cover --direction bidir --size 64KiB --iters 10 -o json \
  >"$work/cover.json" 2>"$work/cover.err" || rc=$?
[[ $rc -le 1 ]] ||
  fail "sweep run --pattern cover after the restart exited $rc: $(cat "$work/cover.err")"
# One Python start reads it all: `sweep show ID -o json`, the stored paths (test_path_hops) and
# `gdrmesh result` of one of its tests.
python3 - "$gdrmesh" "$work" "$latest" "$leaf" "$port" <<'PY' ||
import json, re, sqlite3, subprocess, sys
gdrmesh, work, latest, leaf, port = sys.argv[1:]
port = int(port)
first = work + "/fabric.json"
sweep = json.load(open(work + "/cover.json"))["progress"]["id"]
show = json.loads(subprocess.check_output([gdrmesh, "sweep", "show", sweep, "-o", "json"]))
db = sqlite3.connect("file:%s/db?mode=ro" % work, uri=True)
rows = db.execute("SELECT test_id, direction, hop, switch_name, in_port, out_port, fabric "
                  "FROM test_path_hops WHERE sweep_id = ?", (sweep,)).fetchall()
tests = [r[0] for r in db.execute("SELECT test_id FROM results WHERE run_id = ?", (sweep,))]
result = json.loads(subprocess.check_output([gdrmesh, "result", tests[0], "-o", "json"])
                    if tests else "{}")
src = "@" + latest
def directed_isls(snap):
    sw = {s["name"] for s in snap["switches"]}
    return sum(1 for s in snap["switches"] for p in s["ports"]
               if p.get("remote", {}).get("node") in sw)
adopted = json.load(open(work + "/d3.json"))["snapshot"]
file_snap = json.load(open(first))
want, file_links = directed_isls(adopted), directed_isls(file_snap)
# The other end of the unplugged cable, from the first snapshot (the adopted one lacks it).
far = next((p["remote"]["node"], p["remote"]["port"]) for s in file_snap["switches"]
           if s["name"] == leaf for p in s["ports"] if p["port"] == port)
ends = {(leaf, port), far}
errors = []
if want != file_links - 2:
    errors.append("@%s has %d directed inter-switch links, %s %d: not one cable fewer"
                  % (latest, want, first, file_links))
notes = show.get("notes", [])
cov = [n for n in notes if n.startswith("fabric coverage: ") and "carried" in n]
for n in cov + [n for n in notes if n.startswith("cover: ")]:
    print("note: " + n)
m = re.match(r"fabric coverage: (\d+) of (\d+) directed inter-switch links carried tests "
             r"\((\d+) tests traced through the LFTs of (\S+)\)", cov[0]) if cov else None
if not m:
    errors.append("no coverage note")
else:
    if m.group(4) != src:
        errors.append("coverage traced through %s, not %s" % (m.group(4), src))
    if int(m.group(2)) != want:
        errors.append("coverage counts %s directed links, @%s has %d (%s %d)"
                      % (m.group(2), latest, want, first, file_links))
    if int(m.group(1)) != int(m.group(2)):
        errors.append("the cover sweep left %d directed links unloaded"
                      % (int(m.group(2)) - int(m.group(1))))
traced = {r[0] for r in rows}
other = sorted({r[6] for r in rows} - {src})
crossing = sorted({"%s %s hop %s" % (r[0][:8], r[1], r[2]) for r in rows
                   if (r[3], r[4]) in ends or (r[3], r[5]) in ends})
if not tests or traced != set(tests):
    errors.append("paths stored for %d of %d tests" % (len(traced), len(tests)))
if other:
    errors.append("paths stored through %s, not only %s" % (other, src))
if crossing:
    errors.append("%d hops cross the unplugged %s[%d] <-> %s[%d]: %s"
                  % (len(crossing), leaf, port, far[0], far[1], crossing[:3]))
single = {h["fabric"] for h in result.get("fabric_path", [])}
if single != {src}:
    errors.append("gdrmesh result shows a path from %s, not %s" % (sorted(single), src))
for e in errors:
    print("MISMATCH: " + e)
print("cover sweep after the restart: %d tests, %d hops stored, through %s; %d hops over "
      "%s[%d] <-> %s[%d]; coverage counts %s directed links (@%s: %d, %s: %d) -> %s"
      % (len(tests), len(rows), sorted({r[6] for r in rows}), len(crossing), leaf, port, far[0],
         far[1], m.group(2) if m else "no", latest, want, first.rsplit("/", 1)[-1], file_links,
         "ok" if not errors else "WRONG"))
sys.exit(1 if errors else 0)
PY
  fail "the sweep after the restart was not traced through @$latest"
exit 0
