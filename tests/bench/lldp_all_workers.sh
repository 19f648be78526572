#!/usr/bin/env bash
# `gdrmesh fabric discover --lldp --all-workers` at scale (issue #20, RoCE): one coordinator, N
# simulated workers in one process (`gdrmesh worker --simulate N`; each answers that it cannot
# ask lldpd, so every call is the whole round trip without lldpcli's own time). Prints the wall
# time of one all-workers call (and the coordinator's own figure), of the same with
# --max-concurrency 64, and of the N single calls an operator would otherwise run
# (`fabric discover --worker sim-XXXX --lldp`, one CLI process each, one after the other), and
# the rows each way stores.
#   tests/bench/lldp_all_workers.sh [BINARY] [N=256] [SINGLES=N]
set -euo pipefail
bin="${1:-build/cli/gdrmesh}"
n="${2:-256}"
singles="${3:-$n}"
dir="$(mktemp -d /tmp/gdrmesh-lldp-all-XXXXXX)"
coord=""
sim=""
cleanup() {
  for p in $sim $coord; do kill "$p" 2>/dev/null || true; done
  for p in $sim $coord; do wait "$p" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT

export GDRMESH_INSECURE=1
"$bin" coordinator --listen 127.0.0.1:0 --db "$dir/r.db" --port-file "$dir/port" --insecure \
  >"$dir/coord.log" 2>&1 &
coord=$!
for _ in $(seq 200); do [[ -s "$dir/port" ]] && break; sleep 0.05; done
export GDRMESH_COORDINATOR="127.0.0.1:$(cat "$dir/port")"
"$bin" worker --simulate "$n" --coordinator "$GDRMESH_COORDINATOR" >"$dir/sim.log" 2>&1 &
sim=$!
online() { "$bin" workers -o json | grep -c '"state": "online"' || true; }
while [[ $(online) -lt $n ]]; do sleep 0.2; done

now() { date +%s.%N; }
calc() { awk "BEGIN { printf \"%.3f\", $1 }"; }
rows() { "$bin" fabric history --limit 100000 -o json | grep -c '"id":' || true; }

call_all() {  # call_all LABEL [ARGS]: one all-workers call, timed
  local label="$1" t0 t1 rc=0
  shift
  t0=$(now)
  "$bin" fabric discover --lldp --all-workers -o json "$@" >"$dir/all.json" 2>/dev/null || rc=$?
  t1=$(now)
  python3 - "$dir/all.json" "$n" "$label" "$(calc "$t1 - $t0")" "$rc" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
n, label, wall, rc = int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
out = {}
for w in d["workers"]:
    out[w["outcome"]] = out.get(w["outcome"], 0) + 1
assert len(d["workers"]) == n, len(d["workers"])
print("%s: %d workers in %s s wall (coordinator %.3f s), exit %s, outcomes %s, snapshot @%d"
      % (label, n, wall, d["seconds"], rc, out, d["id"]))
PY
}

before=$(rows)
call_all "all-workers, every worker at once"
call_all "all-workers, every worker at once (again)"
call_all "all-workers, --max-concurrency 64" --max-concurrency 64
echo "rows stored by 3 all-workers calls: $(($(rows) - before))"

before=$(rows)
t0=$(now)
for i in $(seq 0 $((singles - 1))); do
  "$bin" fabric discover --worker "$(printf 'sim-%04d' "$i")" --lldp >/dev/null 2>&1 || true
done
t1=$(now)
echo "single calls: $singles x fabric discover --worker NAME --lldp in $(calc "$t1 - $t0") s" \
  "($(calc "($t1 - $t0) / $singles * 1000") ms each), rows stored: $(($(rows) - before))"
