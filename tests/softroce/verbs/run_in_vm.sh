#!/usr/bin/env bash
# run_in_vm.sh - boots the Soft-RoCE VM and runs one test program in it through a guest
# script of this folder (ctest `softroce` label; run_selftest.sh and run_contract.sh call it).
# Exit 0: the program passed (exit 0 and PASS_REGEX in its output); 77: skipped (qemu, a host
# tool or Debian's kernel package cannot be had); anything else: failed.
# Usage: run_in_vm.sh GUEST_SCRIPT RESULT_NAME PASS_REGEX BINARY [WORKDIR] [-- ARGS...]
#   GUEST_SCRIPT runs BINARY with $TEST_ARGS and exports its output as RESULT_NAME.
#   GDRMESH_TEST_TIME_SCALE travels into the guest (default 1).
set -euo pipefail
{ # parsed whole before it runs: an edit during a run must not change what runs (see vm.sh)
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VM="$HERE/../vm.sh"
USAGE="usage: run_in_vm.sh GUEST_SCRIPT RESULT_NAME PASS_REGEX BINARY [WORKDIR] [-- ARGS...]"
GUEST_SRC="$HERE/${1:?$USAGE}"
RESULT="${2:?$USAGE}"
PASS_REGEX="${3:?$USAGE}"
BIN="${4:?$USAGE}"
shift 4
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
GUEST="$WORKDIR/$(basename "$GUEST_SRC")"
{
    printf "TEST_ARGS='%s'\n" "$ARGS"
    printf "GDRMESH_TEST_TIME_SCALE='%s'\n" "${GDRMESH_TEST_TIME_SCALE:-1}"
    cat "$GUEST_SRC"
} >"$GUEST"
set +e
"$VM" --workdir "$WORKDIR" --script "$GUEST" --bin "$BIN" --quiet \
    --timeout "${GDRMESH_VM_TIMEOUT:-900}" 2>"$WORKDIR/vm.stderr"
rc=$?
set -e
cat "$WORKDIR/vm.stderr" >&2
if [[ -f "$WORKDIR/out/$RESULT" ]]; then
    cat "$WORKDIR/out/$RESULT"
fi
if [[ $rc -eq 2 ]] && grep -qiE "apt-get|download|kernel package|linux-image" "$WORKDIR/vm.stderr"; then
    skip "Debian's kernel package cannot be had (see $WORKDIR/vm.stderr)"
fi
NAME="$(basename "$BIN")"
if [[ $rc -eq 0 ]] && ! grep -qE "$PASS_REGEX" "$WORKDIR/out/$RESULT" 2>/dev/null; then
    echo "FAILED: $NAME exited 0 but printed no line matching '$PASS_REGEX' (workdir $WORKDIR)"
    exit 1
fi
[[ $rc -eq 0 ]] && echo "$NAME PASSED in the VM (workdir $WORKDIR)" ||
    echo "$NAME FAILED with $rc in the VM (workdir $WORKDIR; console: $WORKDIR/console.log)"
exit "$rc"
# shellcheck disable=SC2317 # reached only when the code above did not exit
exit
}
