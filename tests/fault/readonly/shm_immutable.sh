#!/usr/bin/env bash
# The database's WAL index (<db>-shm) made immutable under a running coordinator (issue #23).
# SQLite maps that file; once the kernel has written its pages back (sync), the next store into
# the mapping faults, and the file system refuses it with SIGBUS: the coordinator died in
# sqlite3WalBeginReadTransaction at the next test and every later call exited 4.
#   shm_immutable.sh GDRMESH_BINARY
# Checked:
#   - with only the -shm immutable (and written back), every test still answers: exit 5 and a
#     store error naming the -shm file and the fix; the coordinator keeps serving, and
#     `gdrmesh results` lists the stored and the held results (reads go around the mapping);
#   - once it is writable again, the held results are stored without a restart, each once, and a
#     kill -9 afterwards loses none;
#   - a coordinator started while the -shm is immutable refuses to start, naming it.
set -euo pipefail
bin="$1"
if [[ $(id -u) -ne 0 ]] || ! command -v chattr >/dev/null || ! command -v sqlite3 >/dev/null; then
  echo "SKIP: needs root, chattr (e2fsprogs) and sqlite3"
  exit 77
fi
dir="$(mktemp -d /tmp/gdrmesh-shm-XXXXXX)"
db="$dir/r.db"
touch "$dir/probe"
if ! chattr +i "$dir/probe" 2>"$dir/chattr.err"; then
  echo "SKIP: the file system under /tmp has no immutable attribute: $(cat "$dir/chattr.err")"
  rm -rf "$dir"
  exit 77
fi
chattr -i "$dir/probe"
# shellcheck source=tests/fault/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
fault_extra_cleanup() { writable; }
writable() { chattr -i "$db-shm" 2>/dev/null || true; }
start_coordinator
start_workers
run_test 0
[[ "$(stored "${ids[0]}")" == 1 ]] || fail "the first result was not stored"
[[ -e "$db-shm" ]] || fail "no WAL index $db-shm"

# Only the WAL index turns immutable, and its pages are written back: the next store into the
# mapping faults (SIGBUS on an unguarded coordinator).
chattr +i "$db-shm"
sync "$db-shm"
for _ in 1 2; do run_test 5; done
/usr/bin/python3 - "$dir" "$db" <<'PY' || fail "a store error does not name the -shm file and the fix"
import json, sys, glob
d, db = sys.argv[1], sys.argv[2]
for f in sorted(glob.glob(d + "/t[1-2].json")):
    j = json.load(open(f))
    e = j.get("store_error", "")
    assert db + "-shm" in e and "write access" in e and "durable" in e, e
    assert j["status"] == "PASSED", j["status"]
print("shm: store error:", e[:240])
PY
listed=$("$bin" results --limit 0 -o json) || fail "results while the -shm is immutable: $listed"
for id in "${ids[@]}"; do grep -q "$id" <<<"$listed" || fail "result $id is not listed"; done
kill -0 "$coord" || fail "the coordinator died"

writable
held_results_stored shm "the -shm was writable again"

# Idle with the -shm immutable, then stopped: no checkpoint into the mapping on the way out.
# (The workers first register again: a write under way while the file turns immutable is the
# one window the guard cannot close, docs/faults.md.)
for _ in $(seq 200); do [[ "$(online)" == 2 ]] && break; sleep 0.1; done
[[ "$(online)" == 2 ]] || fail "the workers did not register again"
chattr +i "$db-shm"
sync "$db-shm"
kill "$coord"
rc=0
wait "$coord" 2>/dev/null || rc=$?
[[ $rc -eq 0 ]] || fail "the coordinator stopped with exit $rc (138: SIGBUS) while the -shm was immutable"

# Started while the -shm is immutable: refused, naming it.
rc=0
timeout 20 "$bin" coordinator --listen 127.0.0.1:0 --db "$db" --insecure >"$dir/ro-start.log" 2>&1 || rc=$?
writable
[[ $rc -ne 0 && $rc -ne 124 ]] || fail "a coordinator with an immutable -shm did not refuse (exit $rc): $(cat "$dir/ro-start.log")"
grep -q "$db-shm" "$dir/ro-start.log" || fail "the refusal does not name the -shm: $(cat "$dir/ro-start.log")"
echo "shm: start refused (exit $rc): $(head -c 300 "$dir/ro-start.log")"
echo "shm: PASS"
