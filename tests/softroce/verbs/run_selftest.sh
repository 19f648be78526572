#!/usr/bin/env bash
# run_selftest.sh - boots the Soft-RoCE VM and runs gdrmesh_verbs_selftest in it (ctest
# `softroce` label). Exit 0: every case passed; 77: skipped (qemu, a host tool or Debian's
# kernel package cannot be had); anything else: failed.
# Usage: run_selftest.sh SELFTEST_BINARY [WORKDIR] [-- SELFTEST_ARGS...]
set -euo pipefail
{ # parsed whole before it runs: an edit during a run must not change what runs (see vm.sh)
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VM="$HERE/../vm.sh"
BIN="${1:?usage: run_selftest.sh SELFTEST_BINARY [WORKDIR] [-- SELFTEST_ARGS...]}"
shift
WORKDIR=""
if [[ $# -gt 0 && "$1" != "--" ]]; then WORKDIR="$1"; shift; fi
[[ "${1:-}" == "--" ]] && shift
ARGS="$*"

skip() { echo "SKIPPED: $*"; exit 77; }
command -v qemu-system-x86_64 >/dev/null 2>&1 ||
    skip "qemu-system-x86_64 not found (Debian: apt-get install qemu-system-x86)"
for tool in cpio depmod ib_write_bw; do
    command -v "$tool" >/dev/null 2>&1 || [[ -x "/usr/sbin/$tool" ]] ||
        skip "$tool not found (run deploy/install-deps.sh)"
done
# The VM boots Debian's own kernel (rdma_rxe built in as a module): on a distribution whose
# apt sources lack linux-image-amd64 (Ubuntu) and with nothing cached, the suite cannot run.
if ! apt-cache show linux-image-amd64 >/dev/null 2>&1 &&
   ! ls "${GDRMESH_VM_CACHE:-$HOME/.cache/gdrmesh-vm}"/kernel/*/*/boot/vmlinuz-* >/dev/null 2>&1; then
    skip "Debian's kernel package linux-image-amd64 is not in this machine's apt sources"
fi
[[ -x "$VM" ]] || skip "tests/softroce/vm.sh not present"
[[ -x "$BIN" ]] || { echo "error: $BIN is not an executable" >&2; exit 2; }

WORKDIR="${WORKDIR:-$(mktemp -d "${TMPDIR:-/tmp}/gdrmesh-verbs.XXXXXX")}"
mkdir -p "$WORKDIR"
GUEST="$WORKDIR/guest_selftest.sh"
{
    printf "SELFTEST_ARGS='%s'\n" "$ARGS"
    cat "$HERE/guest_selftest.sh"
} >"$GUEST"
set +e
"$VM" --workdir "$WORKDIR" --script "$GUEST" --bin "$BIN" --quiet \
    --timeout "${GDRMESH_VM_TIMEOUT:-900}" 2>"$WORKDIR/vm.stderr"
rc=$?
set -e
cat "$WORKDIR/vm.stderr" >&2
if [[ -f "$WORKDIR/out/verbs_selftest.txt" ]]; then
    cat "$WORKDIR/out/verbs_selftest.txt"
fi
if [[ $rc -eq 2 ]] && grep -qiE "apt-get|download|kernel package|linux-image" "$WORKDIR/vm.stderr"; then
    skip "Debian's kernel package cannot be had (see $WORKDIR/vm.stderr)"
fi
if [[ $rc -eq 0 ]] && ! grep -q "^SUMMARY .* failed=0" "$WORKDIR/out/verbs_selftest.txt" 2>/dev/null; then
    echo "FAILED: no passing SUMMARY line from the selftest (workdir $WORKDIR)"
    exit 1
fi
[[ $rc -eq 0 ]] && echo "verbs selftest PASSED (workdir $WORKDIR)" ||
    echo "verbs selftest FAILED with $rc (workdir $WORKDIR; console: $WORKDIR/console.log)"
exit "$rc"
# shellcheck disable=SC2317 # reached only when the code above did not exit
exit
}
