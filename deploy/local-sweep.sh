#!/usr/bin/env bash
# The main job on one machine: a coordinator and three local workers, and an acceptance run of
# the embedded default config (deploy/local-sweep.yaml: all-pairs write/read/send bandwidth at
# three sizes and write latency) that the coordinator plans, runs, judges and stores
# (SQLite file, JUnit XML and a JSON report). Uses the verbs transport where the workers have
# an RDMA device, otherwise the emulated transport (labelled as such in every result: it is
# never RDMA).
#
#   deploy/local-sweep.sh [--db FILE] [--config FILE] [--workers N]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${GDRMESH_BIN:-$root/build/cli/gdrmesh}"
db="$PWD/gdrmesh-local.db"
config="$root/deploy/local-sweep.yaml"
nworkers=3
while (( $# )); do
  case "$1" in
    --db) db="$2"; shift 2 ;;
    --config) config="$2"; shift 2 ;;
    --workers) nworkers="$2"; shift 2 ;;
    *) echo "usage: $0 [--db FILE] [--config FILE] [--workers N]" >&2; exit 2 ;;
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

# One machine, loopback only: plaintext, asked for explicitly (--insecure; the coordinator
# refuses it on any other address). A cluster uses certificates: docs/security.md.
"$bin" coordinator --listen 127.0.0.1:0 --db "$db" --port-file "$work/port" --insecure \
  >"$work/coordinator.log" 2>&1 &
pids+=($!)
for _ in $(seq 200); do [[ -s "$work/port" ]] && break; sleep 0.05; done
[[ -s "$work/port" ]] || { cat "$work/coordinator.log" >&2; exit 1; }
GDRMESH_COORDINATOR="127.0.0.1:$(cat "$work/port")"
GDRMESH_INSECURE=1
export GDRMESH_COORDINATOR GDRMESH_INSECURE
echo "coordinator at $GDRMESH_COORDINATOR, results in $db"

names=()
for i in $(seq 1 "$nworkers"); do names+=("local-$i"); done
for w in "${names[@]}"; do
  "$bin" worker --name "$w" >"$work/$w.log" 2>&1 &
  pids+=($!)
done
for _ in $(seq 200); do
  n=$("$bin" workers -o json 2>/dev/null | grep -c '"state": "online"' || true)
  [[ "$n" -ge "$nworkers" ]] && break
  sleep 0.05
done
"$bin" workers
echo
echo "acceptance run of $config (JUnit: $PWD/gdrmesh-local-junit.xml, report: $PWD/gdrmesh-local-report.json)"
"$bin" accept --config "$config" --junit "$PWD/gdrmesh-local-junit.xml" \
  --report "$PWD/gdrmesh-local-report.json"
