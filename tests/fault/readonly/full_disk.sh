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
# shellcheck source=tests/fault/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
fault_extra_cleanup() { umount "$mnt" 2>/dev/null || true; }
fault_extra_fail() { df -k "$mnt" || true; }
start_coordinator
start_workers
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
