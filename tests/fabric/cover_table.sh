#!/usr/bin/env bash
# The `cover` table of issue #20 (docs/fabric.md, docs/benchmarks.md): for two- and three-level
# fat trees of 16, 128 and 1,024 hosts, plus trees with a failed link and a half-populated leaf,
# generate the tree (gen_fat_tree.py), serve it with ibsim, route it with OpenSM's ftree (real
# LFTs), discover it with `gdrmesh fabric discover`, plan `gdrmesh sweep plan --pattern cover`,
# check the plan with fabric_check.py's own LFT walk, and print one markdown row per tree:
# rounds and directed inter-switch link coverage of `cover` against all-pairs, the lower bounds
# (ceil(U/h) over the leaves; from the tables: CoverPlan::tables_bound), and the planning time. A benchmark run by hand, not a ctest.
#
#   cover_table.sh GDRMESH [KEEP_DIR]
#     KEEP_DIR: also keep each tree's snapshot there (NAME.json), e.g. for tests/bench.
#   GDRMESH_COVER_CASES="2level_16 3level_1024" cover_table.sh ...   only those cases
#
# Exits 1 when a plan fails its check (the row says FAILED), 77 when the tools are missing.
set -euo pipefail
gdrmesh="$1"
keep="${2:-}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

skip() { echo "SKIPPED: $*"; exit 77; }
for tool in ibsim opensm python3; do
  command -v "$tool" >/dev/null || skip "$tool is not installed (deploy/install-deps.sh installs ibsim-utils opensm)"
done
umad2sim="$(dpkg -L libumad2sim0 2>/dev/null | grep '/libumad2sim.so$' | head -1 || true)"
[[ -n "$umad2sim" && -f "$umad2sim" ]] || skip "libumad2sim.so not found (package libumad2sim0)"

# NAME | generator arguments
cases=(
  "2level_16|--levels 2 --hosts 16"
  "2level_128|--levels 2 --hosts 128"
  "2level_1024|--levels 2 --hosts 1024"
  "3level_16|--levels 3 --hosts 16"
  "3level_128|--levels 3 --hosts 128"
  "3level_1024|--levels 3 --hosts 1024"
  "2level_1024_failed_link|--levels 2 --hosts 1024 --fail-link"
  "3level_1024_failed_link|--levels 3 --hosts 1024 --fail-link"
  "2level_1024_half_leaf|--levels 2 --hosts 1024 --half-leaf"
  "3level_1024_half_leaf|--levels 3 --hosts 1024 --half-leaf"
)
only="${GDRMESH_COVER_CASES:-}"

work="$(mktemp -d "${TMPDIR:-/tmp}/gdrmesh-cover-table.XXXXXX")"
sim_pid=""
stop_sim() {
  exec 9>&- 2>/dev/null || true
  [[ -n "$sim_pid" ]] && kill "$sim_pid" 2>/dev/null || true
  [[ -n "$sim_pid" ]] && wait "$sim_pid" 2>/dev/null || true
  sim_pid=""
}
cleanup() { stop_sim; rm -rf "$work"; }
trap cleanup EXIT

rc=0
rows=()
for c in "${cases[@]}"; do
  name="${c%%|*}"
  read -r -a args <<<"${c#*|}"
  if [[ -n "$only" && " $only " != *" $name "* ]]; then continue; fi
  d="$work/$name"
  mkdir -p "$d"
  python3 "$here/gen_fat_tree.py" "${args[@]}" >"$d/net"
  first_host=$(grep -m1 '^Hca' "$d/net" | sed 's/.*"\(h[0-9]*\)".*/\1/')
  export IBSIM_SOCKNAME="gdrmesh-cover-$$-$name"
  mkfifo "$d/console"
  ibsim -s -N 4096 -S 1024 -P 16384 "$d/net" <"$d/console" >"$d/ibsim.log" 2>&1 &
  sim_pid=$!
  exec 9>"$d/console"
  for _ in $(seq 1 300); do  # ready when its log says so (bounded)
    grep -q "Network simulator ready" "$d/ibsim.log" && break
    kill -0 "$sim_pid" 2>/dev/null || { cat "$d/ibsim.log"; echo "ibsim exited"; exit 1; }
    sleep 0.1
  done
  sim_env=(env SIM_HOST="$first_host" LD_PRELOAD="$umad2sim" OSM_TMP_DIR="$d" OSM_CACHE_DIR="$d")
  "${sim_env[@]}" opensm -o -R ftree -f "$d/opensm.log" >"$d/opensm.out" 2>&1 || {
    tail -20 "$d/opensm.log"; echo "opensm failed on $name"; exit 1; }
  engine=$(grep -oE '(ftree|minhop|updn|dor) tables configured' "$d/opensm.log" | tail -1 |
           cut -d' ' -f1 || true)
  "${sim_env[@]}" "$gdrmesh" fabric discover -o json --save "$d/fabric.json" >/dev/null \
    2>"$d/discover.err" || { cat "$d/discover.err"; echo "discover failed on $name"; exit 1; }
  stop_sim
  [[ -n "$keep" ]] && cp "$d/fabric.json" "$keep/$name.json"
  plan_rc=0
  "$gdrmesh" sweep plan --pattern cover --fabric "$d/fabric.json" -o json >"$d/plan.json" ||
    plan_rc=$?
  check="FAILED"
  if [[ $plan_rc -eq 0 ]] &&
     python3 "$here/fabric_check.py" cover "$d/fabric.json" "$d/plan.json" 1000 >"$d/check.txt"; then
    check="ok"
  else
    rc=1
    cat "$d/check.txt" 2>/dev/null || true
  fi
  rows+=("$(python3 - "$name" "${engine:-?}" "$d/plan.json" "$check" <<'PY'
import json, sys
name, engine, plan_path, check = sys.argv[1:5]
p = json.load(open(plan_path))
pct = lambda a, b: "%.1f %%" % (100.0 * a / b) if b else "-"
print("| %s | %d | %s | %d | %d | %d (%d: leaves %d, tables %d) | %d | %d | %s | %s | %.1f ms | %s |" % (
    name, p["hosts"], engine, p["directed_links"], p["routable"], len(p["rounds"]),
    p["lower_bound"], p["leaf_bound"], p["tables_bound"], p["covered"], p["all_pairs_rounds"], pct(p["covered"], p["routable"]),
    pct(p["covered"], p["directed_links"]), p["planning_ms"], check))
PY
)")
  echo "${rows[-1]}" >&2
done

echo "| tree | hosts | OpenSM engine | directed ISLs | routable (= all-pairs loads) | cover rounds (lower bound: ceil(U/h) over leaves, from the tables) | cover loads | all-pairs rounds | cover / routable | cover / all ISLs | planning | LFT walk check |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
exit $rc
