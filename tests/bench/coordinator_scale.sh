#!/usr/bin/env bash
# Coordinator scale benchmark (issue: sweeps at a thousand hosts), on this machine, loopback:
# N simulated workers in one process (`gdrmesh worker --simulate N`), one coordinator.
# Prints: registration time, coordinator RSS and idle CPU, an all-pairs sweep with T ms
# simulated tests (rounds, wall time against the ideal rounds x T), per-round overhead and
# coordinator capacity in pair tests/s, the span of a single pair test, the time from the last
# test to the report printed by the CLI and to its exit (the report stored), the whole report as
# JSON, and (schema 9 on, with the sqlite3 CLI) the
# report rows' queries: a page of failing verdicts, a pair's and a host's verdicts.
#   tests/bench/coordinator_scale.sh [BINARY] [N=1024] [TEST_MS=10]
# GDRMESH_TLS=1: the same over mutual TLS (a CA, coordinator, admin and simulator certificates).
# GDRMESH_BENCH_SINGLES=N: single pair tests to time (200); GDRMESH_BENCH_SWEEP=0: no sweep.
# GDRMESH_BENCH_HTTP=1: the coordinator also serves its status page; after the sweep, the page's
# sweep request (/api/sweeps/ID?verdicts=failed&limit=50, with its matrix) is timed (needs curl).
# GDRMESH_BENCH_SYSCALLS=1: also the coordinator's sendmsg/recvmsg/futex calls per pair test
# during the sweep (perf's syscall tracepoints; needs perf and the permission to trace).
set -euo pipefail
bin="${1:-build/cli/gdrmesh}"
n="${2:-1024}"
test_ms="${3:-10}"
dir="$(mktemp -d /tmp/gdrmesh-scale-XXXXXX)"
trap 'kill $sim $coord 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$dir"' EXIT

# Plaintext on loopback, asked for explicitly; GDRMESH_TLS=1 measures over mutual TLS instead.
# shellcheck source=lib_tls.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_tls.sh"
bench_tls "${GDRMESH_TLS:-}" "$bin" "$dir"
http_args=()
[[ "${GDRMESH_BENCH_HTTP:-}" == "1" ]] && http_args=(--http 127.0.0.1:0)
"$bin" coordinator --listen 127.0.0.1:0 --db "$dir/r.db" --port-file "$dir/port" "${coord_tls[@]}" "${http_args[@]}" \
  >"$dir/coord.log" 2>&1 &
coord=$!
for _ in $(seq 200); do [[ -s "$dir/port" ]] && break; sleep 0.05; done
addr="127.0.0.1:$(cat "$dir/port")"
export GDRMESH_COORDINATOR="$addr"

calc() { awk "BEGIN { printf \"%.6g\", $1 }"; }
online() { "$bin" workers -o json | grep -c '"state": "online"' || true; }
t0=$(date +%s.%N)
# GDRMESH_BENCH_END_SIGNAL=0: the simulated workers claim no end signal, as workers from before
# it did (a pair test takes four commands instead of three): the before/after of that change
# with one binary.
sim_cfg=()
if [[ "${GDRMESH_BENCH_END_SIGNAL:-1}" == "0" ]]; then
  echo "end_signal: false" >"$dir/sim.conf"
  sim_cfg=(--sim-config "$dir/sim.conf")
fi
"$bin" worker --simulate "$n" --coordinator "$addr" --sim-test-ms "$test_ms" "${sim_tls[@]}" "${sim_cfg[@]}" \
  >"$dir/sim.log" 2>&1 &
sim=$!
while [[ $(online) -lt $n ]]; do sleep 0.2; done
t1=$(date +%s.%N)
echo "registration: $n simulated workers online in $(calc "$t1 - $t0") s"

cpu() { awk '{print $14 + $15}' "/proc/${1:-$coord}/stat"; }
# The whole machine's busy jiffies (all cores), to tell a saturated host from an idle one.
busy() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8}' /proc/stat; }
rss() { awk '/VmRSS/ {print $2}' "/proc/$coord/status"; }
hz=$(getconf CLK_TCK)
c0=$(cpu); sleep 5; c1=$(cpu)
echo "coordinator idle: RSS $(( $(rss) / 1024 )) MiB, CPU $(calc "($c1 - $c0) / $hz / 5 * 100") % of one core"

# One pair test alone: the coordinator's span (started_ms..finished_ms of the stored result)
# minus the simulated transfer, over 200 tests one after the other. The stamps are whole
# milliseconds, so the median is whole too; the mean of 200 is finer (a test starts at a random
# point within a millisecond), and is what the 2 ms target is read against.
singles=${GDRMESH_BENCH_SINGLES:-200}
for _ in $(seq "$singles"); do
  "$bin" test sim-0000 sim-0001 --size 64KiB --iters 10 >/dev/null
done
sleep 0.5  # let the results reach the file
command -v sqlite3 >/dev/null || echo "single pair test: skipped (no sqlite3 CLI here)"
command -v sqlite3 >/dev/null && sqlite3 "$dir/r.db" "SELECT finished_ms - started_ms FROM results WHERE run_id = '' ORDER BY id DESC LIMIT $singles" |
  sort -n | awk -v t="$test_ms" '{a[NR]=$1; s+=$1} END {m=a[int((NR+1)/2)]; printf "single pair test: coordinator span over %d tests: median %d ms, mean %.2f ms for a %d ms transfer (overhead: median %d ms, mean %.2f ms; 1 ms stamps)\n", NR, m, s/NR, t, m-t, s/NR-t}'


# GDRMESH_BENCH_SWEEP=0: stop here (registration, idle and the single pair test only).
[[ "${GDRMESH_BENCH_SWEEP:-1}" == "0" ]] && exit 0

peak=0
( while kill -0 $coord 2>/dev/null; do r=$(rss); echo "$r" >>"$dir/rss"; sleep 0.5; done ) &
sampler=$!
perfpid=""
if [[ "${GDRMESH_BENCH_SYSCALLS:-}" == "1" ]] && command -v perf >/dev/null; then
  perf stat -e 'syscalls:sys_enter_sendmsg,syscalls:sys_enter_recvmsg,syscalls:sys_enter_futex' \
    -p "$coord" -o "$dir/perf.txt" 2>/dev/null &
  perfpid=$!
fi
# GDRMESH_BENCH_THREADS=1: the busiest threads of the coordinator and of the simulated workers
# over 5 s in the sweep's first rounds (% of one core each, by thread name): one thread near
# 100 % is a serial bottleneck that the process's total CPU hides.
threads_sample() {
  local pid=$1
  for t in /proc/"$pid"/task/*; do
    awk -v tid="${t##*/}" '{ sub(/^[^)]*\) /, ""); print tid, $12 + $13 }' "$t/stat" 2>/dev/null
  done
}
threads_top() {  # label, "before" samples, "after" samples, pid
  join <(sort <<<"$2") <(sort <<<"$3") | while read -r tid a b; do
    echo "$(( (b - a) * 100 / hz / 5 )) $(cat /proc/"$4"/task/"$tid"/comm 2>/dev/null || echo "?")"
  done | sort -rn | head -8 | awk -v l="$1" '{ printf "%s%s %d%%", (n++ ? ", " : l ": "), $2, $1 }
    END { print "" }'
}
if [[ "${GDRMESH_BENCH_THREADS:-}" == "1" ]]; then
  ( sleep 3
    cb="$(threads_sample "$coord")"; sb="$(threads_sample "$sim")"
    sleep 5
    ca="$(threads_sample "$coord")"; sa="$(threads_sample "$sim")"
    threads_top "coordinator's busiest threads" "$cb" "$ca" "$coord" >"$dir/threads.txt"
    threads_top "simulated workers' busiest threads" "$sb" "$sa" "$sim" >>"$dir/threads.txt" ) &
fi
c0=$(cpu)
s0=$(cpu "$sim")
b0=$(busy)
w0=$(date +%s.%N)
# The report as an operator's terminal gets it (the verdict, figures and failing verdicts), as
# JSON; its first line's arrival is when the report was printed (the command itself ends only
# once the report is stored). The whole report is fetched afterwards (below).
"$bin" sweep run --pattern all-pairs --size 64KiB --iters 10 --no-localise --retries 0 \
  --verdicts failed -o json 2>"$dir/sweep.err" |
  { IFS= read -r first && date +%s.%N >"$dir/printed"; printf '%s\n' "${first:-}"; cat; } \
    >"$dir/sweep.json" || echo "sweep run: exit status $?"
w1=$(date +%s.%N)
c1=$(cpu)
s1=$(cpu "$sim")
b1=$(busy)
kill $sampler 2>/dev/null || true
if [[ -n "$perfpid" ]]; then
  kill -INT "$perfpid" 2>/dev/null || true
  wait "$perfpid" 2>/dev/null || true
fi
peak=$(sort -n "$dir/rss" | tail -1)
wall=$(calc "$w1 - $w0")
rounds=$(( n % 2 == 0 ? n - 1 : n ))
tests=$(( n * (n - 1) / 2 ))
ideal=$(calc "$rounds * $test_ms / 1000")
echo "all-pairs: $tests tests, $rounds rounds, wall $(printf %.1f "$wall") s, ideal $(printf %.1f "$ideal") s"
echo "overhead per round: $(calc "($wall - $ideal) * 1000 / $rounds") ms"
echo "coordinator CPU during the sweep: $(calc "($c1 - $c0) / $hz") s; capacity $(calc "int($tests / (($c1 - $c0) / $hz))") pair tests per CPU-second"
echo "coordinator peak RSS during the sweep: $(( peak / 1024 )) MiB"
# Where in the sweep the memory goes: RSS at each tenth of the samples (0.5 s apart), the last
# taken after the CLI's exit (the report stored, the aggregates being written).
awk '{ r[NR] = $1 } END { if (NR == 0) exit; printf "coordinator RSS over the sweep (MiB, at each tenth of its time):";
  for (i = 1; i <= 10; i++) { k = int(NR * i / 10); if (k < 1) k = 1; printf " %d", r[k] / 1024 } print "" }' "$dir/rss"
echo "simulated workers' CPU during the sweep: $(calc "($s1 - $s0) / $hz") s; machine busy $(calc "($b1 - $b0) / $hz / $wall / $(nproc) * 100") % of $(nproc) cores"
# Where the sweep's wall time went, from the stored rows (ms resolution): planning before the
# first test, the tests themselves (the rounds), and the end: results flushed, judge and
# localiser until the sweep's finished_ms; then the stored report, the per-pair aggregates and
# the CLI's start and report fetch. The rounds' own overhead is the middle part less the ideal.
if command -v sqlite3 >/dev/null; then
  # The sweep's row gets its finished_ms from the store's writer, which may come after the CLI
  # has its report: wait for it (up to 10 s).
  for _ in $(seq 100); do
    [[ "$(sqlite3 "$dir/r.db" "SELECT finished_ms > 0 FROM sweeps ORDER BY created_ms DESC LIMIT 1")" == 1 ]] && break
    sleep 0.1
  done
  read -r s_start first last s_fin <<<"$(sqlite3 -separator ' ' "$dir/r.db" \
    "SELECT s.started_ms, MIN(r.started_ms), MAX(r.finished_ms), s.finished_ms FROM sweeps s
     JOIN results r ON r.run_id = s.id WHERE s.id = (SELECT id FROM sweeps
     ORDER BY created_ms DESC LIMIT 1)")"
  if [[ -n "${last:-}" ]]; then
    tests_s=$(calc "($last - $first) / 1000")
    echo "sweep phases: planned and first test started $(calc "($first - $s_start) / 1000") s after the sweep started;" \
      "tests $tests_s s (overhead per round in the rounds alone: $(calc "($tests_s - $ideal) * 1000 / $rounds") ms);" \
      "last result to sweep finished (flush, judge, localiser) $(calc "($s_fin - $last) / 1000") s; outside the sweep's own span (report, aggregates, the CLI's start and report fetch) $(calc "$wall - ($s_fin - $s_start) / 1000") s"
    # From the last test's end to the report printed by the CLI (the flush, the judge and the
    # fetch of the verdict, figures and failing verdicts), and to its exit, once the report's
    # rows and aggregates are stored.
    [[ -s "$dir/printed" ]] &&
      echo "last result to the report printed by the CLI: $(calc "$(cat "$dir/printed") - $last / 1000") s"
    echo "last result to the CLI's exit (report and aggregates stored): $(calc "$w1 - $last / 1000") s"
  fi
fi
# The coordinator's own account of the sweep's end (its log): the report's rows and the
# per-pair aggregates, stored after the judge and before the sweep shows as ended. With the
# judge's share above, this is the time from the last test to a report the CLI can read.
stored=$(grep -o 'report stored ([0-9]* verdicts) in [0-9]* ms, aggregates in [0-9]* ms' \
  "$dir/coord.log" | tail -1 || true)
[[ -n "$stored" ]] && echo "end of the sweep in the coordinator: $stored"
judged=$(grep -o 'judged [0-9]* ms after its tests ended.*, every result stored after [0-9]* ms' \
  "$dir/coord.log" | tail -1 || true)
[[ -n "$judged" ]] && echo "the sweep's end in the coordinator: $judged"
phases=$(grep -o "judge's phases: .*" "$dir/coord.log" | tail -1 || true)
[[ -n "$phases" ]] && echo "the $phases"
[[ -s "$dir/threads.txt" ]] && cat "$dir/threads.txt"
if [[ -s "$dir/perf.txt" ]]; then
  awk -v t="$tests" '/syscalls:sys_enter_/ { gsub(",", "", $1); sub("syscalls:sys_enter_", "", $2);
    printf "%s%s %.2f", (n++ ? ", " : "coordinator syscalls per pair test: "), $2, $1 / t }
    END { if (n) print "" }' "$dir/perf.txt"
fi
echo "report printed by the CLI: $(wc -c <"$dir/sweep.json") bytes, $(grep -c '"test_id"' "$dir/sweep.json" || true) failing verdicts"
grep -o '"verdict": *"[A-Z]*"' "$dir/sweep.json" | head -1 || tail -3 "$dir/sweep.err"
# What an operator reads at a terminal: the table fetches the failing verdicts and the counts.
sweep_id=$(grep -o '"id": *"[^"]*"' "$dir/sweep.json" | head -1 | sed 's/.*: *"\(.*\)"/\1/')
if [[ -n "$sweep_id" ]]; then
  # Every verdict, from the stored rows (what `-o json` of a whole report costs).
  v0=$(date +%s.%N)
  "$bin" sweep show "$sweep_id" --verdicts all -o json >"$dir/whole.json" 2>&1 || echo "sweep show -o json: exit status $?"
  v1=$(date +%s.%N)
  echo "whole report as JSON from the store: $(calc "$v1 - $v0") s, $(wc -c <"$dir/whole.json") bytes, $(grep -c '"test_id"' "$dir/whole.json" || true) verdicts"
  v0=$(date +%s.%N)
  "$bin" sweep show "$sweep_id" >"$dir/show.txt" 2>&1 || echo "sweep show: exit status $?"
  v1=$(date +%s.%N)
  echo "sweep show (table): $(calc "$v1 - $v0") s, $(wc -c <"$dir/show.txt") bytes; $(grep -m1 -o 'failing verdicts ([0-9]* of [0-9]*)' "$dir/show.txt" || grep -m1 '^tests' "$dir/show.txt")"
  http_port=$(sed -n 's/.*status page on http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$dir/coord.log" | head -1)
  if [[ -n "$http_port" ]] && command -v curl >/dev/null; then
    for i in 1 2 3; do
      curl -s -o "$dir/page.json" -w "%{time_total} %{size_download}\n" \
        "http://127.0.0.1:$http_port/api/sweeps/$sweep_id?verdicts=failed&limit=50"
    done | awk '{ t = t (n++ ? ", " : "") sprintf("%.3f", $1); b = $2 }
      END { print "status page sweep request (failing page and matrix): " t " s, " b " bytes" }'
  fi
  # The report's rows (schema 10 on), as the coordinator queries them: a page of 50 failing
  # verdicts, one pair's verdicts, one host's (the database is hot: the median of 5 runs).
  if command -v sqlite3 >/dev/null &&
    [[ "$(sqlite3 "$dir/r.db" "SELECT count(*) FROM sqlite_schema WHERE name = 'sweep_verdicts'")" == 1 ]]; then
    cols="seq, test_id, src, dst, op, mode, message_size, verdict, value, unit, topo_class, retest, reasons"
    qtime() {
      for _ in 1 2 3 4 5; do
        printf '.timer on\n%s;\n' "$1" | sqlite3 "$dir/r.db" | sed -n 's/^Run Time: real \([0-9.]*\).*/\1/p'
      done | sort -n | sed -n 3p
    }
    echo "report rows: failing page $(qtime "SELECT $cols FROM sweep_verdicts INDEXED BY sweep_verdicts_fail WHERE sweep_id = '$sweep_id' AND verdict = 'FAIL' ORDER BY seq LIMIT 50") s;" \
      "a pair's verdicts $(qtime "SELECT $cols FROM sweep_verdicts INDEXED BY sweep_verdicts_src WHERE sweep_id = '$sweep_id' AND src_host = 'sim-0001' AND dst_host = 'sim-0002' ORDER BY seq") s;" \
      "a host's $(qtime "SELECT $cols FROM sweep_verdicts WHERE sweep_id = '$sweep_id' AND seq IN (SELECT seq FROM sweep_verdicts INDEXED BY sweep_verdicts_src WHERE sweep_id = '$sweep_id' AND src_host = 'sim-0001' UNION ALL SELECT seq FROM sweep_verdicts INDEXED BY sweep_verdicts_dst WHERE sweep_id = '$sweep_id' AND dst_host = 'sim-0001') ORDER BY seq") s;" \
      "the database $(( $(stat -c %s "$dir/r.db") / 1048576 )) MiB"
  fi
fi
# The kernel's high-water mark over the whole run (the sweep, its aggregates and the reads above):
# the sampler above sees RSS only every 0.5 s.
echo "coordinator RSS high-water mark (VmHWM, the whole run): $(( $(awk '/VmHWM/ {print $2}' "/proc/$coord/status") / 1024 )) MiB"
