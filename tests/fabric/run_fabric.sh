#!/usr/bin/env bash
# One fabric test (ctest label `fabric`, tests/fabric/README.md): generate a fat tree, start ibsim
# on it, let OpenSM route it once (ftree), discover it with `gdrmesh fabric discover` under
# umad2sim, and check the snapshot against ibnetdiscover and dump_fts (nodes, links, every LFT
# entry) and `gdrmesh fabric path` against ibtracert. No kernel RDMA support is needed.
#
# Then unplugs one leaf up-link through ibsim's console (Unlink) and checks that `fabric diff`
# names exactly that link. Then plans `sweep plan --pattern cover` on the snapshot and checks, walking the LFTs in
# fabric_check.py (not the planner's code), that it loads every directed inter-switch link in
# at most MAX_ROUNDS rounds.
#
#   run_fabric.sh GDRMESH TRACE_PAIRS MAX_ROUNDS GEN_ARGS...
#   e.g. run_fabric.sh build/cli/gdrmesh 40 2 --levels 2 --hosts 16
#
# Exit 77 (ctest: skipped) with the reason when ibsim, OpenSM or infiniband-diags are missing.
set -euo pipefail
gdrmesh="$1"
pairs="$2"
max_rounds="$3"
shift 3
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

skip() { echo "SKIPPED: $*"; exit 77; }
for tool in ibsim opensm ibnetdiscover dump_fts ibtracert python3; do
  command -v "$tool" >/dev/null || skip "$tool is not installed (deploy/install-deps.sh installs ibsim-utils opensm infiniband-diags)"
done
umad2sim="$(dpkg -L libumad2sim0 2>/dev/null | grep '/libumad2sim.so$' | head -1 || true)"
[[ -n "$umad2sim" && -f "$umad2sim" ]] || skip "libumad2sim.so not found (package libumad2sim0, with ibsim-utils)"

work="$(mktemp -d "${TMPDIR:-/tmp}/gdrmesh-fabric.XXXXXX")"
sim_pid=""
cleanup() {
  # Only the simulator this script started.
  [[ -n "$sim_pid" ]] && kill "$sim_pid" 2>/dev/null || true
  [[ -n "$sim_pid" ]] && wait "$sim_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

python3 "$here/gen_fat_tree.py" "$@" >"$work/net"
hosts=$(grep -c '^Hca' "$work/net")
switches=$(grep -c '^Switch' "$work/net")
first_host=$(grep -m1 '^Hca' "$work/net" | sed 's/.*"\(h[0-9]*\)".*/\1/')
echo "fabric: $* -> $hosts hosts, $switches switches"

# ibsim reads its console from a fifo held open by this script (closing it would end ibsim);
# its socket name is unique to this run, so tests can run side by side.
export IBSIM_SOCKNAME="gdrmesh-fabric-$$"
mkfifo "$work/console"
ibsim -s -N 4096 -S 1024 -P 16384 "$work/net" <"$work/console" >"$work/ibsim.log" 2>&1 &
sim_pid=$!
exec 9>"$work/console"
# Ready when it says so (an event in its log, waited for with a bound, not a sleep).
for _ in $(seq 1 300); do
  grep -q "Network simulator ready" "$work/ibsim.log" && break
  kill -0 "$sim_pid" 2>/dev/null || { cat "$work/ibsim.log"; echo "ibsim exited"; exit 1; }
  sleep 0.1
done
grep -q "Network simulator ready" "$work/ibsim.log" || { tail "$work/ibsim.log"; echo "ibsim not ready after 30 s"; exit 1; }

sim_env=(env SIM_HOST="$first_host" LD_PRELOAD="$umad2sim" OSM_TMP_DIR="$work" OSM_CACHE_DIR="$work")
t0=$(date +%s.%N)
"${sim_env[@]}" opensm -o -R ftree -f "$work/opensm.log" >"$work/opensm.out" 2>&1 || {
  tail -20 "$work/opensm.log"; echo "opensm failed"; exit 1; }
t1=$(date +%s.%N)
engine=$(grep -oE '(ftree|minhop|updn|dor) tables configured' "$work/opensm.log" | tail -1 || true)
echo "opensm: ${engine:-no routing engine reported} in $(echo "$t1 - $t0" | bc) s"

t0=$(date +%s.%N)
"${sim_env[@]}" "$gdrmesh" fabric discover -o json --save "$work/fabric.json" >/dev/null 2>"$work/discover.err" || {
  cat "$work/discover.err"; echo "gdrmesh fabric discover failed"; exit 1; }
t1=$(date +%s.%N)
echo "gdrmesh fabric discover: $(echo "$t1 - $t0" | bc) s"

"${sim_env[@]}" ibnetdiscover >"$work/ibnetdiscover.txt" 2>/dev/null
"${sim_env[@]}" dump_fts >"$work/dump_fts.txt" 2>/dev/null
python3 "$here/fabric_check.py" compare "$work/fabric.json" "$work/ibnetdiscover.txt" "$work/dump_fts.txt"
if [[ "$pairs" -gt 0 ]]; then
  "${sim_env[@]}" python3 "$here/fabric_check.py" trace "$work/fabric.json" "$pairs" "$gdrmesh"
fi
"$gdrmesh" sweep plan --pattern cover --fabric "$work/fabric.json" -o json >"$work/plan.json" || {
  cat "$work/plan.json"; echo "gdrmesh sweep plan --pattern cover failed"; exit 1; }
python3 "$here/fabric_check.py" cover "$work/fabric.json" "$work/plan.json" "$max_rounds"
# A fault through ibsim's console: unplug the first host's leaf's first up-link; a new
# discovery must differ from the first by exactly that link, named by switch and port.
read -r leaf port < <(python3 - "$work/net" <<'PY'
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
        if m.group(2) == "h0001":
            first = cur
ups = [p for p, r in sw[first] if r in sw]
print(first, min(ups))
PY
)
echo "Unlink \"$leaf\"[$port]" >&9
found=""
for _ in $(seq 1 50); do
  "${sim_env[@]}" "$gdrmesh" fabric discover -o json --save "$work/after.json" >/dev/null 2>&1 || true
  rc=0
  "$gdrmesh" fabric diff "$work/fabric.json" "$work/after.json" -o json >"$work/diff.json" || rc=$?
  if [[ $rc -eq 1 ]]; then found=1; break; fi
  sleep 0.1  # ibsim reads its console on its own thread: poll for the change, bounded
done
[[ -n "$found" ]] || { echo "fabric diff saw no change after Unlink $leaf[$port]"; exit 1; }
python3 - "$work/diff.json" "$leaf" "$port" <<'PY'
import json, sys
findings = json.load(open(sys.argv[1]))
leaf, port = sys.argv[2], sys.argv[3]
gone = [f for f in findings if f["kind"] == "link_gone"]
ok = len(findings) == 1 and len(gone) == 1 and "%s[%s]" % (leaf, port) in gone[0]["message"]
print("diff after Unlink %s[%s]: %s -> %s" % (leaf, port, [f["message"] for f in findings],
                                             "ok" if ok else "WRONG"))
sys.exit(0 if ok else 1)
PY
[[ -n "${GDRMESH_FABRIC_KEEP:-}" ]] && cp "$work/fabric.json" "$GDRMESH_FABRIC_KEEP"
exit 0
