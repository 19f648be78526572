#!/usr/bin/env bash
# The `cover` table of issue #20 (docs/fabric.md, docs/benchmarks.md): for two- and three-level
# fat trees of 16, 128 and 1,024 hosts, plus trees with a failed link and a half-populated leaf,
# generate the tree (gen_fat_tree.py), serve it with ibsim, route it with OpenSM's ftree (real
# LFTs), discover it with `gdrmesh fabric discover`, plan `gdrmesh sweep plan --pattern cover`,
# check the plan with fabric_check.py's own LFT walk, and print one markdown row per tree:
# rounds and directed inter-switch link coverage of `cover` against all-pairs, the lower bounds
# (ceil(U/h) over the leaves; from the tables: CoverPlan::tables_bound, source_bound), and the planning time. A benchmark run by hand, not a ctest.
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

# shellcheck source=lib.sh
source "$here/lib.sh"
fabric_require ibsim opensm ibnetdiscover python3

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
cleanup() {
  fabric_sim_stop
  rm -rf "$work"
}
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
  fabric_sim_start "$d" "cover-$name" || exit 1
  fabric_route "$d" || { echo "routing $name failed"; exit 1; }
  engine="$fabric_engine"
  "${sim_env[@]}" "$gdrmesh" fabric discover -o json --save "$d/fabric.json" >/dev/null \
    2>"$d/discover.err" || { cat "$d/discover.err"; echo "discover failed on $name"; exit 1; }
  fabric_sim_stop
  [[ -n "$keep" ]] && cp "$d/fabric.json" "$keep/$name.json"
  plan_rc=0
  # OpenSM's ftree writes its compute-node order beside its log (minhop does not):
  # GDRMESH_COVER_NO_CA_ORDER=1 plans without it, to compare.
  order=()
  [[ -f "$d/opensm-ftree-ca-order.dump" && -z "${GDRMESH_COVER_NO_CA_ORDER:-}" ]] &&
    order=(--ca-order "$d/opensm-ftree-ca-order.dump")
  "$gdrmesh" sweep plan --pattern cover --fabric "$d/fabric.json" "${order[@]}" -o json \
    >"$d/plan.json" || plan_rc=$?
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
print("| %s | %d | %s | %d | %d | %d (%d: leaves %d, tables %d, source %d) | %d | %d | %s | %s | %.1f ms | %s |" % (
    name, p["hosts"], engine, p["directed_links"], p["routable"], len(p["rounds"]),
    p["lower_bound"], p["leaf_bound"], p["tables_bound"], p["source_bound"], p["covered"], p["all_pairs_rounds"], pct(p["covered"], p["routable"]),
    pct(p["covered"], p["directed_links"]), p["planning_ms"], check))
PY
)")
  echo "${rows[-1]}" >&2
done

echo "| tree | hosts | OpenSM engine | directed ISLs | routable (= all-pairs loads) | cover rounds (lower bound: ceil(U/h) over leaves, from the tables: per destination, per source leaf) | cover loads | all-pairs rounds | cover / routable | cover / all ISLs | planning | LFT walk check |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
exit $rc
