#!/usr/bin/env bash
# The rogue-client test (issues #9, #23): a real coordinator and an honest worker over mutual
# TLS, attacked by a Python grpcio client built from the repo's .proto
# (tests/fault/rogue/rogue_client.py) that holds worker certificates of the cluster CA.
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
# Mutual TLS throughout (issue #23): the rogue holds worker certificates of the cluster CA, one
# per fake worker name, as a compromised host (or a stolen certificate) would.
pki="$work/pki"
"$bin" certs init --dir "$pki" >/dev/null
"$bin" certs issue --dir "$pki" --role coordinator --name coordinator --san 127.0.0.1 >/dev/null
"$bin" certs issue --dir "$pki" --role admin --name rogue-admin >/dev/null
for n in honest1 rogue-probe rogue-ooo rogue-claim-a rogue-claim-b rogue-guess-a rogue-guess-b \
  rogue-collude-a rogue-collude-b rogue-read rogue-write rogue-hostmem-a rogue-hostmem-b \
  rogue-self rogue-class-a rogue-class-b; do
  "$bin" certs issue --dir "$pki" --role worker --name "$n" >/dev/null
done
# The expected inventory of one host class (docs/config.md): its figures are bounded by 100 Gb/s
# whatever port rate its hosts register.
cat >"$work/cluster.yaml" <<'YAML'
host_classes:
  - name: rogue-lab
    match: "rogue-class-*"
    expect:
      nics: 1
      nic_rate_gbps: 100
YAML

"$bin" coordinator --listen 127.0.0.1:0 --port-file "$work/port" --db "$work/results.db" \
  --heartbeat-ms 500 --tls-dir "$pki/coordinator" --config "$work/cluster.yaml" \
  >"$work/coordinator.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [[ -s "$work/port" ]] && break; sleep 0.1; done
[[ -s "$work/port" ]] || { cat "$work/coordinator.log"; echo "coordinator did not start"; exit 1; }
addr="127.0.0.1:$(cat "$work/port")"
export GDRMESH_COORDINATOR="$addr"
"$bin" worker --coordinator "$addr" --name honest1 --no-verbs --no-cuda \
  --tls-dir "$pki/honest1" >"$work/worker.log" 2>&1 &
pids+=($!)
export GDRMESH_TLS_DIR="$pki/rogue-admin"
for _ in $(seq 100); do
  "$bin" workers 2>/dev/null | grep -q honest1 && break
  sleep 0.1
done
# One honest result first, so the store holds a PASSED row the probes must leave alone.
"$bin" test honest1 honest1 --size 64KiB --iters 20 >"$work/honest.txt" || {
  cat "$work/honest.txt" "$work/coordinator.log" "$work/worker.log"
  exit 1
}
rc=0
"$py" "$src/tests/fault/rogue/rogue_client.py" --addr "$addr" --proto-dir "$src/proto" \
  --pki "$pki" --admin rogue-admin --honest-worker honest1 --db "$work/results.db" || rc=$?
# Every violation is logged at WARNING naming the worker (docs/results-trust.md).
for w in rogue-read rogue-write rogue-hostmem-b; do
  grep -q "WARNING: protocol violation by worker $w " "$work/coordinator.log" || {
    echo "FAIL: no WARNING line in the coordinator's log for $w's protocol violation"
    rc=1
  }
done
# The coordinator survived every probe.
kill -0 "${pids[0]}" || { echo "FAIL: the coordinator died"; cat "$work/coordinator.log"; rc=1; }
if [[ $rc -ne 0 ]]; then tail -40 "$work/coordinator.log"; fi
exit $rc
