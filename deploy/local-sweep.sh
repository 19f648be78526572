#!/usr/bin/env bash
# The main job on one machine: a coordinator (with its status page) and three local workers,
# and an acceptance run of the embedded default config (deploy/local-sweep.yaml: all-pairs
# write/read/send bandwidth at three sizes and write latency) that the coordinator plans, runs,
# judges and stores. Uses the verbs transport where the workers have an RDMA device, otherwise
# the emulated transport (labelled as such in every result: it is never RDMA).
#
# At the end it prints the figures of the run (per test and size: how many results, how many
# passed, min / median / max), writes beside each other in the current folder
#   gdrmesh-local.db            the results database (SQLite)
#   gdrmesh-local-junit.xml     JUnit XML, one test case per pair and size
#   gdrmesh-local-report.json   the sweep report (docs/json.md)
#   gdrmesh-local-report.html   the acceptance report (one file, opens offline)
# and says how to look at them again.
#
#   deploy/local-sweep.sh [--db FILE] [--config FILE] [--workers N] [--keep]
#     --keep   leave the coordinator, its status page and the workers running afterwards and
#              print the page's address, the environment for the CLI and how to stop them
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${GDRMESH_BIN:-$root/build/cli/gdrmesh}"
db="$PWD/gdrmesh-local.db"
config="$root/deploy/local-sweep.yaml"
nworkers=3
keep=0
usage="usage: $0 [--db FILE] [--config FILE] [--workers N] [--keep]"
while (($#)); do
  case "$1" in
    --db) db="$2"; shift 2 ;;
    --config) config="$2"; shift 2 ;;
    --workers) nworkers="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    -h | --help) echo "$usage"; exit 0 ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
[[ -x "$bin" ]] || { echo "local-sweep: $bin not built: run deploy/build.sh" >&2; exit 2; }
junit="$PWD/gdrmesh-local-junit.xml"
report_json="$PWD/gdrmesh-local-report.json"
report_html="$PWD/gdrmesh-local-report.html"

work="$(mktemp -d /tmp/gdrmesh-local.XXXXXX)"
pids=()
cleanup() {
  if ((keep)); then return; fi
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
# With --keep the processes outlive this script and its terminal (nohup: no SIGHUP).
launch() {
  local log=$1
  shift
  if ((keep)); then
    nohup "$@" >"$log" 2>&1 </dev/null &
  else
    "$@" >"$log" 2>&1 &
  fi
  pids+=($!)
}

# One machine, loopback only: plaintext, asked for explicitly (--insecure; the coordinator
# refuses it on any other address). A cluster uses certificates: docs/security.md.
launch "$work/coordinator.log" "$bin" coordinator --listen 127.0.0.1:0 --db "$db" \
  --port-file "$work/port" --http 127.0.0.1:0 --insecure
for _ in $(seq 600); do  # up to 30 s on a loaded machine
  [[ -s "$work/port" ]] && grep -q "status page on" "$work/coordinator.log" && break
  sleep 0.05
done
[[ -s "$work/port" ]] || { cat "$work/coordinator.log" >&2; exit 1; }
page=$(sed -n 's/.*status page on \(http:[^ ]*\).*/\1/p' "$work/coordinator.log" | head -n 1)
GDRMESH_COORDINATOR="127.0.0.1:$(cat "$work/port")"
GDRMESH_INSECURE=1
export GDRMESH_COORDINATOR GDRMESH_INSECURE
echo "coordinator at $GDRMESH_COORDINATOR, results in $db"
[[ -n "$page" ]] && echo "status page: $page (live while the sweep runs)"

names=()
for i in $(seq 1 "$nworkers"); do names+=("local-$i"); done
for w in "${names[@]}"; do
  launch "$work/$w.log" "$bin" worker --name "$w"
done
for _ in $(seq 200); do
  n=$("$bin" workers -o json 2>/dev/null | grep -c '"state": "online"' || true)
  [[ "$n" -ge "$nworkers" ]] && break
  sleep 0.05
done
"$bin" workers
echo
echo "acceptance run of $config"
rc=0
rm -f "$report_json" "$report_html"  # never a previous run's
"$bin" accept --config "$config" --junit "$junit" --report "$report_json" || rc=$?

# The sweep's id: the first "id" of the JSON report is its progress's.
sweep=""
if [[ -s "$report_json" ]]; then
  sweep=$(sed -n 's/^ *"id": *"\([^"]*\)".*/\1/p' "$report_json" | head -n 1)
fi
if [[ -z "$sweep" ]]; then
  echo "local-sweep: no sweep report (accept exit $rc); the coordinator's log:" >&2
  tail -n 20 "$work/coordinator.log" >&2
  keep=0  # nothing to look at: stop what was started
  exit "$rc"
fi

# The figures, from every result of the sweep (CSV, docs/json.md; columns found by name).
echo
"$bin" results --run-id "$sweep" --limit 0 -o csv | tr -d '\r' | awk -F '\n' -v sweep="$sweep" '
function csv(line, out,   i, c, f, q, n) {
  n = 0; f = ""; q = 0
  for (i = 1; i <= length(line); i++) {
    c = substr(line, i, 1)
    if (q) {
      if (c == "\"") { if (substr(line, i + 1, 1) == "\"") { f = f c; i++ } else q = 0 }
      else f = f c
    } else if (c == "\"") q = 1
    else if (c == ",") { out[++n] = f; f = "" }
    else f = f c
  }
  out[++n] = f
  return n
}
function size(b) {
  if (b >= 1048576 && b % 1048576 == 0) return (b / 1048576) " MiB"
  if (b >= 1024 && b % 1024 == 0) return (b / 1024) " KiB"
  return b " B"
}
function rank(op) { return op == "write" ? 1 : op == "read" ? 2 : op == "send" ? 3 : 4 }
function before(a, b) {  # bandwidth before latency, then op, then size
  if (mode[a] != mode[b]) return mode[a] == "bw"
  if (rank(op[a]) != rank(op[b])) return rank(op[a]) < rank(op[b])
  return bytes[a] + 0 < bytes[b] + 0
}
NR == 1 { n = csv($0, h); for (i = 1; i <= n; i++) col[h[i]] = i; next }
{
  csv($0, f)
  k = f[col["op"]] " " f[col["mode"]] " " f[col["message_size_bytes"]]
  if (!(k in count)) {
    keys[++nk] = k; op[k] = f[col["op"]]; mode[k] = f[col["mode"]]
    bytes[k] = f[col["message_size_bytes"]]
  }
  count[k]++
  total++
  if (f[col["status"]] == "PASSED") { passed[k]++; allpassed++ }
  v = mode[k] == "lat" ? f[col["lat_median_us"]] : f[col["bw_avg_gbps"]]
  if (v != "") vals[k, ++nv[k]] = v + 0
  paths[f[col["data_path"]]]++
}
END {
  if (total == 0) { print "figures: no results stored for sweep " sweep; exit }
  for (i = 2; i <= nk; i++) {  # insertion sort of the keys
    k = keys[i]
    for (j = i - 1; j >= 1 && before(k, keys[j]); j--) keys[j + 1] = keys[j]
    keys[j + 1] = k
  }
  p = ""
  for (d in paths) p = p (p == "" ? "" : ", ") d " (" paths[d] ")"
  printf "figures of sweep %s: %d results, %d passed; data path: %s\n", sweep, total, allpassed, p
  printf "  %-10s %-4s %8s %8s %7s %12s %12s %12s\n", "OP", "MODE", "SIZE", "RESULTS", "PASSED",
         "MIN", "MEDIAN", "MAX"
  for (i = 1; i <= nk; i++) {
    k = keys[i]; m = nv[k]
    for (a = 2; a <= m; a++) {  # sort the figures of this key
      x = vals[k, a]
      for (b = a - 1; b >= 1 && vals[k, b] > x; b--) vals[k, b + 1] = vals[k, b]
      vals[k, b + 1] = x
    }
    unit = mode[k] == "lat" ? " us" : " Gb/s"
    if (m == 0) { lo = "-"; med = "-"; hi = "-" }
    else {
      lo = sprintf("%.2f", vals[k, 1]) unit; hi = sprintf("%.2f", vals[k, m]) unit
      med = sprintf("%.2f", m % 2 ? vals[k, (m + 1) / 2] : (vals[k, m / 2] + vals[k, m / 2 + 1]) / 2) unit
    }
    printf "  %-10s %-4s %8s %8d %7d %12s %12s %12s\n", op[k], mode[k], size(bytes[k]), count[k],
           passed[k], lo, med, hi
  }
  print "  (bandwidth: average Gb/s of each result; latency: each result'"'"'s median, one-way us;"
  print "   definitions in docs/metrics.md)"
}' || echo "local-sweep: could not read the results of $sweep" >&2

# The acceptance report, beside the JUnit and JSON files.
if ! "$bin" report "$sweep" --format html --out "$report_html"; then
  echo "local-sweep: could not write $report_html" >&2
  report_html=""
fi
echo
echo "written:"
echo "  $db  (results database)"
echo "  $junit  (JUnit XML)"
echo "  $report_json  (sweep report, JSON)"
[[ -n "$report_html" ]] && echo "  $report_html  (acceptance report: open it in a browser)"
echo
if ((keep)); then
  echo "kept running (--keep): coordinator and ${#names[@]} workers, logs in $work"
  [[ -n "$page" ]] && echo "  status page: $page"
  echo "  CLI:  export GDRMESH_COORDINATOR=$GDRMESH_COORDINATOR GDRMESH_INSECURE=1"
  echo "        $bin sweep show $sweep --verdicts all --matrix"
  echo "        $bin test local-1 local-2 --size 1MiB"
  echo "  stop: kill ${pids[*]}"
else
  echo "to look again:"
  [[ -n "$report_html" ]] && echo "  open $report_html"
  echo "  or serve the stored results (status page and CLI):"
  echo "    $bin coordinator --db $db --listen 127.0.0.1:7070 --http 127.0.0.1:8080 --insecure &"
  echo "    GDRMESH_COORDINATOR=127.0.0.1:7070 GDRMESH_INSECURE=1 $bin sweep show $sweep --verdicts all --matrix"
  echo "    then http://127.0.0.1:8080/ in a browser"
  echo "  or run again with --keep: the coordinator, its status page and the workers stay up"
fi
exit "$rc"
