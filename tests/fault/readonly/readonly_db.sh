#!/usr/bin/env bash
# A database that turns read-only under a running coordinator, and one that is read-only when
# it starts (issue #9, faults). As root, file modes do not stop writes, so the database is
# made read-only the way root meets it: the immutable attribute (chattr +i, which also fails
# writes through descriptors that are already open) on the database, its -wal and -shm files
# and its directory (so no spool file can be created next to it either).
#   readonly_db.sh GDRMESH_BINARY
# Checked:
#   - while the database is read-only, every test still answers: exit 5 and a store error
#     naming the database file and what to do; the coordinator keeps serving; the held results
#     are listed by `gdrmesh results`;
#   - once it is writable again, the held results are stored without a restart, each exactly
#     once, and a kill -9 afterwards loses none of them;
#   - a coordinator started on a read-only database refuses to start, naming the file and the
#     fix, instead of serving tests whose results it cannot keep.
set -euo pipefail
bin="$1"
if [[ $(id -u) -ne 0 ]] || ! command -v chattr >/dev/null || ! command -v sqlite3 >/dev/null; then
  echo "SKIP: needs root, chattr (e2fsprogs) and sqlite3"
  exit 77
fi
dir="$(mktemp -d /tmp/gdrmesh-readonly-XXXXXX)"
db="$dir/db/r.db"
mkdir "$dir/db"
if ! chattr +i "$dir/db" 2>"$dir/chattr.err"; then
  echo "SKIP: the file system under /tmp has no immutable attribute: $(cat "$dir/chattr.err")"
  rm -rf "$dir"
  exit 77
fi
chattr -i "$dir/db"
# shellcheck source=tests/fault/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
fault_extra_cleanup() { writable; }
writable() { chattr -i "$dir/db" "$db"* 2>/dev/null || true; }
read_only() {  # the database and whichever of its -wal and -shm exist, then the directory
  local f
  for f in "$db" "$db-wal" "$db-shm"; do [[ -e "$f" ]] && chattr +i "$f"; done
  chattr +i "$dir/db"
}
start_coordinator
start_workers
run_test 0
[[ "$(stored "${ids[0]}")" == 1 ]] || fail "the first result was not stored"

# The database turns read-only under the running coordinator.
read_only
for _ in 1 2 3; do run_test 5; done
/usr/bin/python3 - "$dir" "$db" <<'PY' || fail "a store error does not name the database and the fix"
import json, sys, glob
d, db = sys.argv[1], sys.argv[2]
for f in sorted(glob.glob(d + "/t[1-3].json")):
    j = json.load(open(f))
    e = j.get("store_error", "")
    assert db in e and "write access" in e and "spool" in e, e
    assert j["status"] == "PASSED", j["status"]  # the test itself passed; only storing failed
print("readonly: store error:", e[:200])
PY
listed=$("$bin" results --limit 0 -o json) || fail "results while read-only: $listed"
for id in "${ids[@]}"; do grep -q "$id" <<<"$listed" || fail "result $id is not listed while held"; done
kill -0 "$coord" || fail "the coordinator died"

# Writable again: the held results are stored by the coordinator's retry, no restart needed.
writable
held_results_stored readonly "the database was writable again"
kill "$coord"
wait "$coord" 2>/dev/null || true

# A coordinator started on a read-only database refuses to start, naming the file and the fix.
read_only
rc=0
timeout 20 "$bin" coordinator --listen 127.0.0.1:0 --db "$db" --insecure >"$dir/ro-start.log" 2>&1 || rc=$?
writable
[[ $rc -ne 0 && $rc -ne 124 ]] || fail "a coordinator on a read-only database did not refuse (exit $rc): $(cat "$dir/ro-start.log")"
grep -q "$db" "$dir/ro-start.log" && grep -qi "write access\|writable" "$dir/ro-start.log" ||
  fail "the refusal does not name the file and the fix: $(cat "$dir/ro-start.log")"
echo "readonly: start refused (exit $rc): $(head -c 300 "$dir/ro-start.log")"
echo "readonly: PASS"
