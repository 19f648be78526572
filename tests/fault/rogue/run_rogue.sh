#!/usr/bin/env bash
# The rogue-client test (issue #9): a real coordinator and an honest worker, attacked by a
# Python grpcio client built from the repo's .proto (tests/fault/rogue/rogue_client.py).
#   run_rogue.sh GDRMESH_BINARY SOURCE_DIR
set -euo pipefail
bin="$1"
src="$2"
py=/usr/bin/python3  # Debian's python3 with python3-grpcio and python3-grpc-tools
if ! "$py" -c 'import grpc, google.protobuf' 2>/dev/null || [[ ! -x /usr/bin/grpc_python_plugin ]]; then
  echo "SKIP: python3-grpcio / python3-protobuf / protobuf-compiler-grpc not installed (deploy/install-deps.sh)"
  exit 77
fi
work="$(mktemp -d /tmp/gdrmesh-rogue.XXXXXX)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
insecure=()
if "$bin" coordinator --help 2>/dev/null | grep -q -- '--insecure'; then insecure=(--insecure); fi

"$bin" coordinator --listen 127.0.0.1:0 --port-file "$work/port" --db "$work/results.db" \
  --heartbeat-ms 500 "${insecure[@]}" >"$work/coordinator.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [[ -s "$work/port" ]] && break; sleep 0.1; done
[[ -s "$work/port" ]] || { cat "$work/coordinator.log"; echo "coordinator did not start"; exit 1; }
addr="127.0.0.1:$(cat "$work/port")"
export GDRMESH_COORDINATOR="$addr"
"$bin" worker --coordinator "$addr" --name honest1 --no-verbs --no-cuda "${insecure[@]}" \
  >"$work/worker.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
  "$bin" workers "${insecure[@]}" 2>/dev/null | grep -q honest1 && break
  sleep 0.1
done
# One honest result first, so the store holds a PASSED row the probes must leave alone.
"$bin" test honest1 honest1 --size 64KiB --iters 20 "${insecure[@]}" >"$work/honest.txt" || {
  cat "$work/honest.txt" "$work/coordinator.log" "$work/worker.log"
  exit 1
}
rc=0
"$py" "$src/tests/fault/rogue/rogue_client.py" --addr "$addr" --proto-dir "$src/proto" \
  --honest-worker honest1 --db "$work/results.db" || rc=$?
# The coordinator survived every probe.
kill -0 "${pids[0]}" || { echo "FAIL: the coordinator died"; cat "$work/coordinator.log"; rc=1; }
if [[ $rc -ne 0 ]]; then tail -40 "$work/coordinator.log"; fi
exit $rc
