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

# shellcheck source=lib.sh
source "$here/lib.sh"
fabric_require ibsim opensm ibnetdiscover python3

work="$(mktemp -d "${TMPDIR:-/tmp}/gdrmesh-fabric-bisection.XXXXXX")"
sim_pid=""
cleanup() {
  fabric_sim_stop  # only the simulator this script started
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
fabric_sim_start "$work" fabric-bisection || exit 1
fabric_route "$work" || exit 1
echo "fabric: $* routed by ${fabric_engine:-?}"
"${sim_env[@]}" "$gdrmesh" fabric discover -o json --save "$work/fabric.json" >/dev/null 2>"$work/discover.err" || {
  cat "$work/discover.err"; echo "gdrmesh fabric discover failed"; exit 1; }
"$gdrmesh" sweep plan --pattern bisection --fabric "$work/fabric.json" -o json >"$work/plan.json" || {
  cat "$work/plan.json"; echo "gdrmesh sweep plan --pattern bisection failed"; exit 1; }
"$gdrmesh" sweep plan --pattern bisection --fabric "$work/fabric.json" | tail -1
python3 "$here/fabric_check.py" bisection "$work/fabric.json" "$work/plan.json"
