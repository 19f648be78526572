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

# shellcheck source=lib.sh
source "$here/lib.sh"
fabric_require ibsim opensm ibnetdiscover dump_fts ibtracert python3

work="$(mktemp -d "${TMPDIR:-/tmp}/gdrmesh-fabric.XXXXXX")"
sim_pid=""
cleanup() {
  fabric_sim_stop  # only the simulator this script started
  rm -rf "$work"
}
trap cleanup EXIT

python3 "$here/gen_fat_tree.py" "$@" >"$work/net"
hosts=$(grep -c '^Hca' "$work/net")
switches=$(grep -c '^Switch' "$work/net")
echo "fabric: $* -> $hosts hosts, $switches switches"

fabric_sim_start "$work" fabric || exit 1
t0=$(date +%s.%N)
fabric_route "$work" || exit 1
t1=$(date +%s.%N)
echo "opensm: ${fabric_engine:-no routing engine reported} tables, roots $(wc -l <"$work/roots.txt") top-level switches, in $(echo "$t1 - $t0" | bc) s"
# Told its roots, ftree routes every tree generated here, a failed cable included; a fallback
# to minhop would move every route and is a failure of the set-up.
[[ "$fabric_engine" == ftree ]] || {
  grep -E 'ERR|not a fat-tree' "$work/opensm.log" | head -5
  echo "FAILED: OpenSM's ftree did not route the tree (${fabric_engine:-no engine} tables)"; exit 1; }

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
# OpenSM's ftree wrote its compute-node order beside its log: the plan's first round starts
# from it (docs/fabric.md).
"$gdrmesh" sweep plan --pattern cover --fabric "$work/fabric.json" \
  --ca-order "$work/opensm-ftree-ca-order.dump" -o json >"$work/plan.json" || {
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
