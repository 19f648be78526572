#!/usr/bin/env bash
# `gdrmesh fabric discover --lldp --all-workers` with real processes (ctest label `fabric`,
# tests/fabric/README.md): a real coordinator, N simulated workers (`gdrmesh worker --simulate
# N`, which answer that they cannot ask lldpd) and one real worker whose lldpd cannot be asked
# (its --lldp-socket names no socket). Needs neither root nor lldpd.
#
#   1. the flags: --worker with --all-workers, and --all-workers without --lldp, are usage
#      errors (exit 2) that say what to give;
#   2. one call: every worker accounted for, each skipped with the single call's no_fabric
#      text, exit 3 (nothing could be asked), ONE row in `fabric history` (worker "all workers");
#   3. the real worker stopped (SIGSTOP: its stream stays open, it never answers): the call ends
#      at --deadline with that worker timed_out (a no_answer finding), exit 1, in about the
#      deadline, not the default 120 s;
#   4. the real worker gone: it is offline, not asked, and still a line of the answer.
#
#   run_lldp_all.sh GDRMESH [N=8]
set -euo pipefail
gdrmesh="$1"
n="${2:-8}"

work="$(mktemp -d "${TMPDIR:-/tmp}/gdrmesh-lldp-all.XXXXXX")"
pids=()
real=""
cleanup() {
  # Only the processes this script started.
  local p
  [[ -n "$real" ]] && kill -CONT "$real" 2>/dev/null || true
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  [[ -n "${KEEP:-}" ]] || rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for f in coord.log sim.log worker.log; do
    echo "--- $f"
    tail -20 "$work/$f" 2>/dev/null || true
  done
  exit 1
}

"$gdrmesh" coordinator --listen 127.0.0.1:0 --db "$work/db" --port-file "$work/port" \
  --insecure >"$work/coord.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do [[ -s "$work/port" ]] && break; sleep 0.1; done
[[ -s "$work/port" ]] || fail "the coordinator did not start"
export GDRMESH_COORDINATOR="127.0.0.1:$(cat "$work/port")" GDRMESH_INSECURE=1
"$gdrmesh" worker --simulate "$n" --coordinator "$GDRMESH_COORDINATOR" --insecure \
  >"$work/sim.log" 2>&1 &
pids+=($!)
"$gdrmesh" worker --coordinator "$GDRMESH_COORDINATOR" --name real1 --no-verbs --no-cuda \
  --insecure --lldp-socket "$work/no-lldpd.sock" >"$work/worker.log" 2>&1 &
real=$!
pids+=("$real")
online() {
  "$gdrmesh" workers -o json 2>/dev/null | python3 -c '
import json, sys
print(sum(1 for w in json.load(sys.stdin) if w["state"] == "online"))' 2>/dev/null || echo 0
}
want=$((n + 1))
for _ in $(seq 1 300); do [[ "$(online)" == "$want" ]] && break; sleep 0.1; done
[[ "$(online)" == "$want" ]] || fail "$want workers did not register"

# 1. Usage errors name the flags.
rc=0
"$gdrmesh" fabric discover --lldp --all-workers --worker real1 >"$work/u1.out" 2>&1 || rc=$?
[[ $rc -eq 2 ]] || fail "--worker with --all-workers: exit $rc, want 2: $(cat "$work/u1.out")"
grep -q -- "--worker real1 and --all-workers" "$work/u1.out" || fail "no usage text: $(cat "$work/u1.out")"
rc=0
"$gdrmesh" fabric discover --all-workers >"$work/u2.out" 2>&1 || rc=$?
[[ $rc -eq 2 ]] || fail "--all-workers without --lldp: exit $rc, want 2: $(cat "$work/u2.out")"
grep -q -- "needs --lldp" "$work/u2.out" || fail "no usage text: $(cat "$work/u2.out")"

# 2. Every worker asked at once: each accounted for, one row stored.
rc=0
"$gdrmesh" fabric discover --lldp --all-workers -o json >"$work/a1.json" 2>"$work/a1.err" || rc=$?
[[ $rc -eq 3 ]] || fail "all-workers call: exit $rc, want 3 (nothing could be asked): $(cat "$work/a1.json" "$work/a1.err")"
python3 - "$work/a1.json" "$want" <<'PY' || fail "all-workers answer: $(cat "$work/a1.json")"
import json, sys
d = json.load(open(sys.argv[1]))
want = int(sys.argv[2])
ws = d["workers"]
assert len(ws) == want, ws
assert all(w["outcome"] == "skipped" for w in ws), ws
assert d["id"] > 0 and d["worker"] == "all workers" and d["outcome"] == "skipped", d
assert d["detail"] == "LLDP from all workers: 0 of %d workers answered (%d skipped)" % (want, want), d
kinds = sorted({f["kind"] for f in d["findings"]})
assert kinds == ["no_fabric"] and len(d["findings"]) == want, d["findings"]
msgs = [f["message"] for f in d["findings"]]
assert any(m.startswith("no LLDP answer from real1: ") for m in msgs), msgs
assert any("cannot ask lldpd" in m for m in msgs), msgs
print("all-workers: %d workers accounted for in %.3f s, one snapshot @%d" % (len(ws), d["seconds"], d["id"]))
PY
"$gdrmesh" fabric history -o json >"$work/h1.json"
python3 - "$work/h1.json" <<'PY' || fail "history: $(cat "$work/h1.json")"
import json, sys
rows = json.load(open(sys.argv[1]))
assert len(rows) == 1 and rows[0]["worker"] == "all workers", rows
PY

# 3. A worker that never answers: the call ends at its deadline, the worker timed out.
kill -STOP "$real"
t0=$(date +%s.%N)
rc=0
"$gdrmesh" fabric discover --lldp --all-workers --deadline 2 >"$work/a2.txt" 2>&1 || rc=$?
t1=$(date +%s.%N)
kill -CONT "$real"
[[ $rc -eq 1 ]] || fail "all-workers call with a stopped worker: exit $rc, want 1: $(cat "$work/a2.txt")"
grep -Eq "^real1 +timed_out +no LLDP answer from real1: worker real1 did not answer within 2 s" \
  "$work/a2.txt" || fail "no timed_out line for real1: $(cat "$work/a2.txt")"
grep -q "no_answer" "$work/a2.txt" || fail "no no_answer finding: $(cat "$work/a2.txt")"
secs=$(awk "BEGIN { print $t1 - $t0 }")
awk "BEGIN { exit !($secs < 30) }" || fail "the call took $secs s with --deadline 2"
echo "a stopped worker: timed_out, the call returned in $secs s (--deadline 2)"

# 4. The real worker gone: offline, not asked, still accounted for.
kill "$real"
wait "$real" 2>/dev/null || true
for _ in $(seq 1 300); do [[ "$(online)" == "$n" ]] && break; sleep 0.1; done
rc=0
"$gdrmesh" fabric discover --lldp --all-workers -o json >"$work/a3.json" 2>"$work/a3.err" || rc=$?
[[ $rc -eq 3 ]] || fail "all-workers call with an offline worker: exit $rc, want 3: $(cat "$work/a3.json" "$work/a3.err")"
python3 - "$work/a3.json" "$want" <<'PY' || fail "offline worker: $(cat "$work/a3.json")"
import json, sys
d = json.load(open(sys.argv[1]))
ws = {w["worker"]: w for w in d["workers"]}
assert len(ws) == int(sys.argv[2]), ws
assert ws["real1"]["outcome"] == "offline" and "not asked" in ws["real1"]["detail"], ws["real1"]
PY
echo "PASS: $want workers accounted for in one call each time; one stored snapshot per call"
