#!/usr/bin/env bash
# Readers under load: one coordinator (status page on), N simulated workers, an all-pairs sweep
# over them kept running, and R concurrent readers for S seconds: four in five read the status
# page's JSON API over HTTP, one in five runs CLI commands (whole processes over gRPC). Prints,
# per query kind, calls, errors, median and p99 (ms), and the sweep's progress meanwhile.
# Exit 1 on any failed read, or when the sweep made no progress while being read.
#   tests/fault/load/readers_load.sh BINARY [N=1024] [R=50] [S=15]
set -euo pipefail
bin="$1"
n="${2:-1024}"
readers="${3:-50}"
seconds="${4:-15}"
dir="$(mktemp -d /tmp/gdrmesh-load-XXXXXX)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
export GDRMESH_INSECURE=1  # loopback only, asked for explicitly (docs/security.md)

"$bin" coordinator --listen 127.0.0.1:0 --db "$dir/r.db" --port-file "$dir/port" \
  --http 127.0.0.1:0 --insecure >"$dir/coord.log" 2>&1 &
pids+=($!)
coord=$!
for _ in $(seq 300); do grep -q "status page on" "$dir/coord.log" 2>/dev/null && break; sleep 0.1; done
grep -q "status page on" "$dir/coord.log" || { cat "$dir/coord.log"; echo "coordinator did not start"; exit 1; }
http="$(sed -n 's|.*status page on \(http://[^/]*\)/.*|\1|p' "$dir/coord.log")"
addr="127.0.0.1:$(cat "$dir/port")"
export GDRMESH_COORDINATOR="$addr"

t0=$(date +%s%N)
"$bin" worker --simulate "$n" --coordinator "$addr" --sim-test-ms 5 >"$dir/sim.log" 2>&1 &
pids+=($!)
online=0
for _ in $(seq 600); do
  online=$(curl -s "$http/api/workers" | grep -o '"state":"online"' | wc -l || true)
  [[ "$online" -ge "$n" ]] && break
  sleep 0.2
done
[[ "$online" -ge "$n" ]] || { tail -20 "$dir/sim.log"; echo "only $online of $n workers registered"; exit 1; }
echo "readers_load: $n simulated workers online in $(( ($(date +%s%N) - t0) / 1000000 )) ms; load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"

sweep=$("$bin" sweep run --pattern all-pairs --size 4KiB --iters 10 --detach -o json |
  /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
echo "readers_load: sweep $sweep running; $readers readers for $seconds s"

rc=0
/usr/bin/python3 "$(dirname "${BASH_SOURCE[0]}")/readers_load.py" "$bin" "$http" "$sweep" \
  "$readers" "$seconds" "$coord" || rc=$?
"$bin" sweep cancel "$sweep" >/dev/null 2>&1 || true
kill -0 "$coord" 2>/dev/null || { echo "readers_load: the coordinator died"; tail -20 "$dir/coord.log"; exit 1; }
exit $rc
