#!/usr/bin/env bash
# The main job on one machine: a coordinator and two local workers, a sweep of pair tests
# between them (every operation at the default sizes, plus latency), results printed and stored
# in a SQLite file. Uses the verbs transport where both workers have an RDMA device, otherwise
# the emulated transport (labelled as such in every result: it is never RDMA).
#
#   deploy/local-sweep.sh [--db FILE] [--sizes "4KiB 64KiB 1MiB"] [--iters N]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${GDRMESH_BIN:-$root/build/cli/gdrmesh}"
db="$PWD/gdrmesh-local.db"
sizes="4KiB 64KiB 1MiB"
iters=200
while (( $# )); do
  case "$1" in
    --db) db="$2"; shift 2 ;;
    --sizes) sizes="$2"; shift 2 ;;
    --iters) iters="$2"; shift 2 ;;
    *) echo "usage: $0 [--db FILE] [--sizes \"4KiB 64KiB\"] [--iters N]" >&2; exit 2 ;;
  esac
done
[[ -x "$bin" ]] || { echo "local-sweep: $bin not built: run deploy/build.sh" >&2; exit 2; }

work="$(mktemp -d /tmp/gdrmesh-local.XXXXXX)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

"$bin" coordinator --listen 127.0.0.1:0 --db "$db" --port-file "$work/port" \
  >"$work/coordinator.log" 2>&1 &
pids+=($!)
for _ in $(seq 200); do [[ -s "$work/port" ]] && break; sleep 0.05; done
[[ -s "$work/port" ]] || { cat "$work/coordinator.log" >&2; exit 1; }
GDRMESH_COORDINATOR="127.0.0.1:$(cat "$work/port")"
export GDRMESH_COORDINATOR
echo "coordinator at $GDRMESH_COORDINATOR, results in $db"

for w in local-a local-b; do
  "$bin" worker --name "$w" >"$work/$w.log" 2>&1 &
  pids+=($!)
done
for _ in $(seq 200); do
  n=$("$bin" workers -o json 2>/dev/null | grep -c '"state": "online"' || true)
  [[ "$n" -ge 2 ]] && break
  sleep 0.05
done
"$bin" workers

run_id="local-$(date -u +%Y%m%dT%H%M%SZ)"
failed=0
for op in write read send; do
  for size in $sizes; do
    if ! "$bin" test local-a local-b --op "$op" --size "$size" --iters "$iters" \
         --run-id "$run_id" >/dev/null; then
      failed=$((failed + 1))
    fi
  done
done
"$bin" test local-a local-b --mode lat --size 2 --iters 1000 --run-id "$run_id" >/dev/null \
  || failed=$((failed + 1))
echo
"$bin" results --run-id "$run_id" --limit 100
echo
if (( failed )); then
  echo "local sweep $run_id: $failed test(s) did not pass"
  exit 1
fi
echo "local sweep $run_id: all tests passed"
