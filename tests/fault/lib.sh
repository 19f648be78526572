# Shared set-up of the fault scripts that run a real coordinator and two workers (a and b) on one
# database: source it after setting `bin` (the gdrmesh binary), `dir` (the scratch folder) and
# `db` (the database path). A script may define `fault_extra_cleanup` (called on exit, before the
# folder is removed) and `fault_extra_fail` (more evidence printed on failure).
#   start_coordinator [PORT]   starts it on the database (port 0 = any), sets coord and port
#   start_workers              workers a and b, emulated transport, waits until both are online
#   run_test EXPECTED_EXIT     `gdrmesh test a b`, checks its exit code, appends its test id to ids
#   stored ID                  how many result rows the database holds for that test id
# shellcheck shell=bash disable=SC2154  # bin, dir and db come from the sourcing script
pids=()
ids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if declare -F fault_extra_cleanup >/dev/null; then fault_extra_cleanup; fi
  [[ -n "${KEEP:-}" ]] || rm -rf "$dir"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  echo "--- coordinator"
  tail -30 "$dir/coord.log" 2>/dev/null || true
  if declare -F fault_extra_fail >/dev/null; then fault_extra_fail; fi
  exit 1
}
start_coordinator() {  # [PORT]
  rm -f "$dir/port"
  "$bin" coordinator --listen "127.0.0.1:${1:-0}" --db "$db" --port-file "$dir/port" \
    --heartbeat-ms 200 --insecure >>"$dir/coord.log" 2>&1 &
  coord=$!
  pids+=("$coord")
  local _
  for _ in $(seq 100); do [[ -s "$dir/port" ]] && break; sleep 0.1; done
  [[ -s "$dir/port" ]] || fail "the coordinator did not start"
  port=$(cat "$dir/port")
  export GDRMESH_COORDINATOR="127.0.0.1:$port" GDRMESH_INSECURE=1
}
online() {
  "$bin" workers -o json 2>/dev/null | /usr/bin/python3 -c '
import json, sys
print(sum(1 for w in json.load(sys.stdin) if w["state"] == "online"))'
}
start_workers() {
  local w _
  for w in a b; do
    "$bin" worker --coordinator "$GDRMESH_COORDINATOR" --name "$w" --no-verbs --no-cuda \
      --insecure >"$dir/$w.log" 2>&1 &
    pids+=($!)
  done
  for _ in $(seq 200); do [[ "$(online)" == 2 ]] && break; sleep 0.1; done
  [[ "$(online)" == 2 ]] || fail "the workers did not register"
}
run_test() {  # EXPECTED_EXIT -> appends the test id
  local out="$dir/t${#ids[@]}.json" rc=0
  "$bin" test a b --size 4KiB --iters 5 -o json >"$out" 2>"$out.err" || rc=$?
  [[ $rc -eq $1 ]] || fail "test exited $rc, expected $1: $(cat "$out" "$out.err")"
  ids+=("$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["test_id"])' "$out")")
}
stored() {  # ID -> rows with that test id
  sqlite3 -readonly "file:$db?mode=ro" "SELECT count(*) FROM results WHERE test_id = '$1'" 2>/dev/null ||
    echo "?"
}
# After the database takes writes again (the caller made it writable): every held result (all
# ids but the first) is stored by the coordinator's retry within 10 s, no restart; then a kill -9
# and a restart lose or duplicate none, and no finished test is recorded as interrupted.
#   held_results_stored LABEL WHAT   e.g. held_results_stored shm "the -shm was writable again"
held_results_stored() {
  local id t0 _ errors
  t0=$(date +%s%3N)
  for id in "${ids[@]:1}"; do
    for _ in $(seq 100); do [[ "$(stored "$id")" == 1 ]] && break; sleep 0.1; done
    [[ "$(stored "$id")" == 1 ]] || fail "held result $id was not stored within 10 s of $2"
  done
  echo "$1: $(( ${#ids[@]} - 1 )) held results stored $(( $(date +%s%3N) - t0 )) ms after $2"
  kill -9 "$coord"
  wait "$coord" 2>/dev/null || true
  start_coordinator "$port"
  for id in "${ids[@]}"; do
    [[ "$(stored "$id")" == 1 ]] || fail "result $id lost or duplicated after kill -9 and restart: $(stored "$id")"
  done
  errors=$(sqlite3 -readonly "file:$db?mode=ro" "SELECT count(*) FROM results WHERE status = 'ERROR'")
  [[ "$errors" == 0 ]] || fail "$errors finished tests recorded as interrupted"
}
