#!/usr/bin/env bash
# Query latency on a large history (issue #10: "queries stay fast as history grows"), against
# the real coordinator: starts `gdrmesh coordinator --db DB --http ...` on a database made by
# gen_history and times each query N times, one after the other, from this machine's loopback.
# Prints, per query: median and p99 (ms), the answer's size in bytes, and the coordinator's RSS
# (now and peak) at the end.
#   tests/bench/history_queries.sh [BINARY] DB [N=50]
# Make DB with: build/tests/bench/gen_history --db /tmp/history.db   (1024 hosts, 365 nights)
#
# HTTP calls are timed by curl (time_total: connect to last byte, keep-alive off). CLI calls
# (`gdrmesh results`, `gdrmesh sweeps`, `gdrmesh sweep show`) are timed as whole processes, so
# they include the CLI's start-up and its gRPC connection (the "cli: true" baseline line times
# `gdrmesh --version`-sized overhead: `gdrmesh workers` on an empty registry).
# Pair history: /api/history and `gdrmesh history` when this build has them, else the store
# query they are expected to run is timed through /api/results?worker= (the nearest call).
set -euo pipefail
bin="${1:-build/cli/gdrmesh}"
db="${2:?usage: history_queries.sh [BINARY] DB [N]}"
n="${3:-50}"
[[ -x "$bin" ]] || { echo "history_queries: $bin is not an executable" >&2; exit 2; }
[[ -f "$db" ]] || { echo "history_queries: $db does not exist (make it with gen_history)" >&2; exit 2; }
command -v curl >/dev/null || { echo "history_queries: needs curl" >&2; exit 2; }
dir="$(mktemp -d /tmp/gdrmesh-hq-XXXXXX)"
coord=""
trap '[[ -n "$coord" ]] && kill "$coord" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$dir"' EXIT

t0=$(date +%s%N)
# Plaintext on loopback, asked for explicitly (docs/security.md); the CLI calls below likewise.
insecure=()
if "$bin" coordinator --help 2>/dev/null | grep -q -- '--insecure'; then
  insecure=(--insecure)
  export GDRMESH_INSECURE=1
fi
"$bin" coordinator --listen 127.0.0.1:0 --db "$db" --port-file "$dir/port" --http 127.0.0.1:0 \
  "${insecure[@]}" >"$dir/coord.log" 2>&1 &
coord=$!
for _ in $(seq 1200); do
  grep -q "status page on" "$dir/coord.log" 2>/dev/null && break
  kill -0 "$coord" 2>/dev/null || { cat "$dir/coord.log" >&2; exit 1; }
  sleep 0.1
done
grep -q "status page on" "$dir/coord.log" || { echo "coordinator did not start" >&2; exit 1; }
t1=$(date +%s%N)
http="$(sed -n 's|.*status page on \(http://[^/]*\)/.*|\1|p' "$dir/coord.log")"
export GDRMESH_COORDINATOR="127.0.0.1:$(cat "$dir/port")"
echo "coordinator up in $(( (t1 - t0) / 1000000 )) ms on $db ($(du -h "$db" | cut -f1)); $n calls each; load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"

# stats FILE: median and p99 of the numbers in FILE (ms), nearest rank.
stats() {
  sort -n "$1" | awk '{a[NR]=$1} END {
    m = a[int((NR + 1) / 2)]; r = int(NR * 0.99 + 0.999); if (r > NR) r = NR;
    printf "median %8.2f ms   p99 %8.2f ms", m, a[r] }'
}
# Each query runs N times, or until BUDGET_S seconds have gone (then fewer calls: the line says
# how many), so that a slow "before" build does not take an hour.
budget_s="${BUDGET_S:-60}"
over() { (( $(date +%s) - start >= budget_s )); }
calls() { local c; c=$(wc -l <"$dir/t"); (( c < n )) && printf ' (%d calls: %ss budget)' "$c" "$budget_s"; return 0; }
time_http() {  # NAME PATH
  local name="$1" path="$2" f="$dir/t" code size start
  : >"$f"
  start=$(date +%s)
  for _ in $(seq "$n"); do
    over && break
    read -r code size t < <(curl -s -o /dev/null -H 'Connection: close' \
      -w '%{http_code} %{size_download} %{time_total}\n' "$http$path")
    if [[ "$code" != 200 ]]; then
      printf '%-44s HTTP %s\n' "$name" "$code"
      return 0
    fi
    awk -v t="$t" 'BEGIN { printf "%.3f\n", t * 1000 }' >>"$f"
  done
  printf '%-44s %s   %9s bytes%s\n' "$name" "$(stats "$f")" "$size" "$(calls)"
}
time_cli() {  # NAME ARGS...
  local name="$1" f="$dir/t" a b start
  shift
  : >"$f"
  start=$(date +%s)
  for _ in $(seq "$n"); do
    over && break
    a=$(date +%s%N)
    if ! "$@" >"$dir/out" 2>"$dir/err"; then
      printf '%-44s failed: %s\n' "$name" "$(head -c 200 "$dir/err")"
      return 0
    fi
    b=$(date +%s%N)
    awk -v d=$((b - a)) 'BEGIN { printf "%.3f\n", d / 1e6 }' >>"$f"
  done
  printf '%-44s %s   %9s bytes%s\n' "$name" "$(stats "$f")" "$(wc -c <"$dir/out")" "$(calls)"
}

sweeps_json="$(curl -s "$http/api/sweeps?limit=50")"
latest="$(printf '%s' "$sweeps_json" | grep -o '"id":"[^"]*"' | head -1 | cut -d'"' -f4)"
oldest="$(printf '%s' "$sweeps_json" | grep -o '"id":"[^"]*"' | tail -1 | cut -d'"' -f4)"
src="gpu-0001"
dst="gpu-0002"
echo "latest sweep $latest; 50th newest $oldest"

time_http "/api/sweeps (page list, limit=50)" "/api/sweeps?limit=50"
time_http "/api/sweeps (default 20)" "/api/sweeps"
time_http "/api/sweeps/latest (matrix, all verdicts)" "/api/sweeps/latest"
time_http "/api/sweeps/ID?verdicts=failed (page)" "/api/sweeps/$latest?verdicts=failed"
time_http "/api/sweeps/ID?verdicts=none (matrix only)" "/api/sweeps/$latest?verdicts=none"
time_http "/api/sweeps/ID (older sweep, all verdicts)" "/api/sweeps/$oldest"
time_http "/api/workers" "/api/workers"
time_http "/api/summary" "/api/summary"
time_http "/api/results" "/api/results"
time_http "/api/results?status=passed" "/api/results?status=passed"
time_http "/api/results?status=failed" "/api/results?status=failed"
time_http "/api/results?worker=W" "/api/results?worker=$src"
time_http "/api/results?run_id=ID (limit 50)" "/api/results?run_id=$latest"
time_http "/api/results?run_id=ID&limit=10000 (page)" "/api/results?run_id=$latest&limit=10000"
time_http "/metrics" "/metrics"
if curl -s -o /dev/null -w '%{http_code}' "$http/api/history?src=$src&dst=$dst" | grep -q 200; then
  time_http "/api/history?src&dst" "/api/history?src=$src&dst=$dst"
else
  echo "/api/history: not in this build; the store queries pair history is expected to run, on"
  echo "  a read-only connection of its own (python3 sqlite3, same file, coordinator running):"
  python3 - "$db" "$src" "$dst" "$n" <<'PY' || echo "  (python3 sqlite3 not available)"
import sqlite3, statistics, sys, time
db, src, dst, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
con = sqlite3.connect("file:" + db + "?mode=ro", uri=True)
names = {r[0] for r in con.execute("SELECT name FROM sqlite_schema")}
queries = [("raw rows, src->dst, newest 50",
            "SELECT * FROM results WHERE initiator_worker = ? AND target_worker = ? "
            "ORDER BY started_ms DESC, id DESC LIMIT 50", (src, dst))]
if "sweep_aggregates" in names:
    queries.append(("per-sweep aggregates, src->dst, all",
                    "SELECT * FROM sweep_aggregates WHERE src = ? AND dst = ? AND "
                    "started_ms < 9223372036854775807 ORDER BY started_ms DESC LIMIT -1",
                    (src, dst)))
for name, sql, args in queries:
    plan = " / ".join(r[3] for r in con.execute("EXPLAIN QUERY PLAN " + sql, args))
    t = []
    for _ in range(n):
        a = time.perf_counter()
        rows = con.execute(sql, args).fetchall()
        t.append((time.perf_counter() - a) * 1000)
    t.sort()
    p99 = t[min(len(t) - 1, int(len(t) * 0.99 + 0.999) - 1)]
    print("  %-42s median %8.2f ms   p99 %8.2f ms   %d rows  [%s]"
          % (name, statistics.median(t), p99, len(rows), plan))
PY
fi
# The RPCs behind the CLI commands, timed alone: one long-lived gRPC channel (Python grpcio,
# stubs made from the repo's .proto by Debian's protoc), as a client that is already running
# would see them; the CLI lines below add the CLI's own start-up to the same calls.
proto_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../proto" && pwd)"
if /usr/bin/python3 -c 'import grpc, google.protobuf' 2>/dev/null && [[ -x /usr/bin/grpc_python_plugin ]] &&
  command -v protoc >/dev/null; then
  mkdir -p "$dir/py"
  protoc "-I$proto_dir" "--python_out=$dir/py" "--grpc_out=$dir/py" \
    --plugin=protoc-gen-grpc=/usr/bin/grpc_python_plugin "$proto_dir/gdrmesh/v1/gdrmesh.proto"
  /usr/bin/python3 - "$dir/py" "$GDRMESH_COORDINATOR" "$n" "$latest" "$src" "$dst" "$budget_s" <<'PY'
import importlib, statistics, sys, time
sys.path.insert(0, sys.argv[1])
import grpc
pb = importlib.import_module("gdrmesh.v1.gdrmesh_pb2")
rpc = importlib.import_module("gdrmesh.v1.gdrmesh_pb2_grpc")
addr, n, latest, src, dst, budget = sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6], float(sys.argv[7])
opts = [("grpc.max_receive_message_length", 64 << 20)]
stub = rpc.ControlServiceStub(grpc.insecure_channel(addr, options=opts))
calls = [
    ("rpc: ListWorkers", stub.ListWorkers, pb.ListWorkersRequest()),
    ("rpc: ListSweeps (50)", stub.ListSweeps, pb.ListSweepsRequest(limit=50)),
    ("rpc: ListSweeps (20)", stub.ListSweeps, pb.ListSweepsRequest(limit=20)),
    ("rpc: GetSweep ID (sweep show, matrix)", stub.GetSweep, pb.SweepIdRequest(id=latest)),
    ("rpc: History SRC DST", stub.History, pb.HistoryRequest(src=src, dst=dst)),
    ("rpc: ListResults status=PASSED", stub.ListResults,
     pb.ListResultsRequest(status=pb.TEST_STATUS_PASSED)),
    ("rpc: ListResults (50)", stub.ListResults, pb.ListResultsRequest()),
]
for name, fn, req in calls:
    t, start, size = [], time.monotonic(), 0
    for _ in range(n):
        if time.monotonic() - start >= budget:
            break
        a = time.perf_counter()
        reply = fn(req, timeout=60)
        t.append((time.perf_counter() - a) * 1000)
        size = reply.ByteSize()
    t.sort()
    p99 = t[min(len(t) - 1, int(len(t) * 0.99 + 0.999) - 1)]
    more = "" if len(t) == n else " (%d calls: %ss budget)" % (len(t), sys.argv[7])
    print("%-44s median %8.2f ms   p99 %8.2f ms   %9d bytes%s" % (name, statistics.median(t), p99, size, more))
PY
else
  echo "rpc timing: skipped (needs python3-grpcio, protobuf-compiler, protobuf-compiler-grpc)"
fi
time_cli "cli: gdrmesh workers (start-up baseline)" "$bin" workers
time_cli "cli: gdrmesh results --status passed" "$bin" results --status passed
time_cli "cli: gdrmesh results" "$bin" results
time_cli "cli: gdrmesh sweeps" "$bin" sweeps
time_cli "cli: gdrmesh sweep show ID (GetSweep)" "$bin" sweep show "$latest"
if "$bin" --help 2>/dev/null | grep -qE '^ +history '; then
  time_cli "cli: gdrmesh history SRC DST" "$bin" history "$src" "$dst"
else
  echo "gdrmesh history: not in this build"
fi
awk '/VmRSS|VmHWM/ {printf "coordinator %s %d MiB\n", $1, $2 / 1024}' "/proc/$coord/status"
