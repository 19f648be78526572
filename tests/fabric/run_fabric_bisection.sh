#!/usr/bin/env bash
# The `bisection` plan on a real subnet manager's tables (ctest label `fabric`,
# tests/fabric/README.md): generate a fat tree, serve it with ibsim, route it with OpenSM's ftree,
# discover it with `gdrmesh fabric discover`, plan `gdrmesh sweep plan --pattern bisection`, and
# check the cut with fabric_check.py's own walk of the LFTs (every pair's path both ways over the
# top level, each host once, the bound from the cables' widths and speeds). Also: without
# --fabric the plan is refused naming --fabric.
#
#   run_fabric_bisection.sh GDRMESH GEN_ARGS...   e.g. ... build/cli/gdrmesh --levels 3 --hosts 128
#
# Exit 77 (ctest: skipped) with the reason when ibsim or OpenSM are missing.
set -euo pipefail
gdrmesh="$1"
shift
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

skip() { echo "SKIPPED: $*"; exit 77; }
for tool in ibsim opensm python3; do
  command -v "$tool" >/dev/null || skip "$tool is not installed (deploy/install-deps.sh installs ibsim-utils opensm)"
done
umad2sim="$(dpkg -L libumad2sim0 2>/dev/null | grep '/libumad2sim.so$' | head -1 || true)"
[[ -n "$umad2sim" && -f "$umad2sim" ]] || skip "libumad2sim.so not found (package libumad2sim0, with ibsim-utils)"

work="$(mktemp -d "${TMPDIR:-/tmp}/gdrmesh-fabric-bisection.XXXXXX")"
sim_pid=""
cleanup() {
  # Only the simulator this script started.
  [[ -n "$sim_pid" ]] && kill "$sim_pid" 2>/dev/null || true
  [[ -n "$sim_pid" ]] && wait "$sim_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# Refused without a fabric, naming the option.
rc=0
"$gdrmesh" sweep plan --pattern bisection -o json >"$work/nofabric.out" 2>&1 || rc=$?
if [[ $rc -eq 0 ]] || ! grep -q -- "--fabric" "$work/nofabric.out"; then
  cat "$work/nofabric.out"; echo "FAILED: sweep plan --pattern bisection without --fabric: rc $rc"; exit 1
fi

python3 "$here/gen_fat_tree.py" "$@" >"$work/net"
first_host=$(grep -m1 '^Hca' "$work/net" | sed 's/.*"\(h[0-9]*\)".*/\1/')
export IBSIM_SOCKNAME="gdrmesh-fabric-bisection-$$"
mkfifo "$work/console"
ibsim -s -N 4096 -S 1024 -P 16384 "$work/net" <"$work/console" >"$work/ibsim.log" 2>&1 &
sim_pid=$!
exec 9>"$work/console"
for _ in $(seq 1 300); do  # ready when its log says so (bounded)
  grep -q "Network simulator ready" "$work/ibsim.log" && break
  kill -0 "$sim_pid" 2>/dev/null || { cat "$work/ibsim.log"; echo "ibsim exited"; exit 1; }
  sleep 0.1
done
grep -q "Network simulator ready" "$work/ibsim.log" || { tail "$work/ibsim.log"; echo "ibsim not ready after 30 s"; exit 1; }
sim_env=(env SIM_HOST="$first_host" LD_PRELOAD="$umad2sim" OSM_TMP_DIR="$work" OSM_CACHE_DIR="$work")
"${sim_env[@]}" opensm -o -R ftree -f "$work/opensm.log" >"$work/opensm.out" 2>&1 || {
  tail -20 "$work/opensm.log"; echo "opensm failed"; exit 1; }
engine=$(grep -oE '(ftree|minhop|updn|dor) tables configured' "$work/opensm.log" | tail -1 || true)
echo "fabric: $* routed by ${engine:-?}"
"${sim_env[@]}" "$gdrmesh" fabric discover -o json --save "$work/fabric.json" >/dev/null 2>"$work/discover.err" || {
  cat "$work/discover.err"; echo "gdrmesh fabric discover failed"; exit 1; }
"$gdrmesh" sweep plan --pattern bisection --fabric "$work/fabric.json" -o json >"$work/plan.json" || {
  cat "$work/plan.json"; echo "gdrmesh sweep plan --pattern bisection failed"; exit 1; }
"$gdrmesh" sweep plan --pattern bisection --fabric "$work/fabric.json" | tail -1
python3 "$here/fabric_check.py" bisection "$work/fabric.json" "$work/plan.json"
