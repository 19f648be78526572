#!/usr/bin/env bash
# The database and its spool on one disk that fills up, then a kill -9 (issue #23): a real full
# file system (a small tmpfs, filled by a file), not SQLite's max_page_count. Before, the spool
# could not be written either: results were held in memory only, and after the kill some were
# gone and single tests came back as ERROR "interrupted" instead of PASSED.
#   full_disk.sh GDRMESH_BINARY
# Checked:
#   - on the full disk every test still answers, exit 5, with a store error saying the result is
#     durable in the spool (the space the store holds back for it, <db>.spool-reserve);
#   - kill -9, free the disk, restart: every result is in the database once, as it ended
#     (PASSED), none is an ERROR row, the spool is gone and the reserve is back.
set -euo pipefail
bin="$1"
if [[ $(id -u) -ne 0 ]] || ! command -v sqlite3 >/dev/null; then
  echo "SKIP: needs root (to mount a small tmpfs) and sqlite3"
  exit 77
fi
dir="$(mktemp -d /tmp/gdrmesh-full-XXXXXX)"
mnt="$dir/disk"
mkdir "$mnt"
if ! mount -t tmpfs -o size=8m tmpfs "$mnt" 2>"$dir/mount.err"; then
  echo "SKIP: cannot mount a tmpfs: $(cat "$dir/mount.err")"
  rm -rf "$dir"
  exit 77
fi
db="$mnt/r.db"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  umount "$mnt" 2>/dev/null || true
  [[ -n "${KEEP:-}" ]] || rm -rf "$dir"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  echo "--- coordinator"; tail -30 "$dir/coord.log" 2>/dev/null || true
  df -k "$mnt" || true
  exit 1
}
start_coordinator() {  # [PORT]
  rm -f "$dir/port"
  "$bin" coordinator --listen "127.0.0.1:${1:-0}" --db "$db" --port-file "$dir/port" \
    --heartbeat-ms 200 --insecure >>"$dir/coord.log" 2>&1 &
  coord=$!
  pids+=("$coord")
  for _ in $(seq 100); do [[ -s "$dir/port" ]] && break; sleep 0.1; done
  [[ -s "$dir/port" ]] || fail "the coordinator did not start"
}
start_coordinator
port=$(cat "$dir/port")
export GDRMESH_COORDINATOR="127.0.0.1:$port" GDRMESH_INSECURE=1
for w in a b; do
  "$bin" worker --coordinator "$GDRMESH_COORDINATOR" --name "$w" --no-verbs --no-cuda \
    --insecure >"$dir/$w.log" 2>&1 &
  pids+=($!)
done
online() {
  "$bin" workers -o json 2>/dev/null | /usr/bin/python3 -c '
import json, sys
print(sum(1 for w in json.load(sys.stdin) if w["state"] == "online"))'
}
for _ in $(seq 200); do [[ "$(online)" == 2 ]] && break; sleep 0.1; done
[[ "$(online)" == 2 ]] || fail "the workers did not register"

ids=()
run_test() {  # EXPECTED_EXIT -> appends the test id
  local out="$dir/t${#ids[@]}.json" rc=0
  "$bin" test a b --size 4KiB --iters 5 -o json >"$out" 2>"$out.err" || rc=$?
  [[ $rc -eq $1 ]] || fail "test exited $rc, expected $1: $(cat "$out" "$out.err")"
  ids+=("$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["test_id"])' "$out")")
}
run_test 0

# The disk fills up.
dd if=/dev/zero of="$mnt/filler" bs=64k >/dev/null 2>&1 || true
[[ "$(df -k --output=avail "$mnt" | tail -1 | tr -d ' ')" == 0 ]] || fail "the disk did not fill up"
for _ in 1 2 3 4 5 6; do run_test 5; done
/usr/bin/python3 - "$dir" "$db" <<'PY' || fail "a held result is not durable, or the CLI is not told"
import json, sys, glob
d, db = sys.argv[1], sys.argv[2]
for f in sorted(glob.glob(d + "/t[1-6].json")):
    j = json.load(open(f))
    e = j.get("store_error", "")
    assert "disk is full" in e and "durable in the spool" in e, e
    assert j["status"] == "PASSED", j["status"]
print("full: store error:", e[:240])
PY
kill -0 "$coord" || fail "the coordinator died"
[[ "$(wc -l <"$db.spool")" == 6 ]] || fail "the spool holds $(wc -l <"$db.spool") records, not 6"

# kill -9 on the full disk, then space again and a restart.
kill -9 "$coord"
wait "$coord" 2>/dev/null || true
rm -f "$mnt/filler"
start_coordinator "$port"
for id in "${ids[@]}"; do
  n=$(sqlite3 -readonly "file:$db?mode=ro" "SELECT count(*) FROM results WHERE test_id = '$id' AND status = 'PASSED'")
  [[ "$n" == 1 ]] || fail "result $id: $n PASSED rows after kill -9 and restart (lost, or recorded as interrupted)"
done
errors=$(sqlite3 -readonly "file:$db?mode=ro" "SELECT count(*) FROM results WHERE status = 'ERROR'")
[[ "$errors" == 0 ]] || fail "$errors finished tests recorded as interrupted"
[[ ! -e "$db.spool" ]] || fail "the replayed spool was not removed"
[[ "$(stat -c %s "$db.spool-reserve")" -gt 0 ]] || fail "the spool reserve was not restored"
echo "full: 6 results held on a full disk survived kill -9, each stored once as PASSED"
echo "full: PASS"
