#!/usr/bin/env bash
# run_smoke.sh - boots the Soft-RoCE VM and runs smoke.sh in it (usable as a ctest).
# Exit 0: all checks passed; 77: skipped (qemu or another host tool missing); else failed.
# Usage: tests/softroce/run_smoke.sh [WORKDIR]   (default: a new folder under ${TMPDIR:-/tmp})
set -euo pipefail

if ! command -v qemu-system-x86_64 >/dev/null 2>&1; then
    echo "SKIPPED: qemu-system-x86_64 not found (run deploy/install-deps.sh to enable the Soft-RoCE VM tests)"
    exit 77
fi
for tool in ib_write_bw ibv_rc_pingpong rping depmod cpio; do
    if ! command -v "$tool" >/dev/null 2>&1 && [[ ! -x "/usr/sbin/$tool" ]]; then
        echo "SKIPPED: $tool not found (run deploy/install-deps.sh to enable the Soft-RoCE VM tests)"
        exit 77
    fi
done

# (no dirname: this runs even when PATH lacks coreutils)
case "${BASH_SOURCE[0]}" in */*) HERE="${BASH_SOURCE[0]%/*}" ;; *) HERE=. ;; esac
HERE="$(cd "$HERE" && pwd)"
WORKDIR="${1:-$(mktemp -d "${TMPDIR:-/tmp}/gdrmesh-smoke.XXXXXX")}"
set +e
"$HERE/vm.sh" --workdir "$WORKDIR" --script "$HERE/smoke.sh" --timeout "${GDRMESH_VM_TIMEOUT:-300}"
rc=$?
set -e
if [[ -f "$WORKDIR/out/smoke_results.txt" ]]; then
    echo "--- $WORKDIR/out/smoke_results.txt"
    cat "$WORKDIR/out/smoke_results.txt"
fi
if [[ $rc -eq 0 ]]; then
    echo "smoke PASSED (workdir $WORKDIR)"
else
    echo "smoke FAILED with exit $rc (console: $WORKDIR/console.log)"
fi
exit "$rc"
