#!/usr/bin/env bash
# Boots the Soft-RoCE VM, runs gdrmesh (coordinator + two workers + CLI) over real verbs in it,
# and checks the exported results. ctest: exit 0 pass, 77 skipped (no qemu), else failed.
#   run_e2e.sh GDRMESH_BINARY [WORKDIR]
set -euo pipefail
bin="$1"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if ! command -v qemu-system-x86_64 >/dev/null 2>&1; then
  echo "SKIPPED: qemu-system-x86_64 not found (run deploy/install-deps.sh)"
  exit 77
fi
# The VM boots Debian's own kernel (rdma_rxe built in as a module): on a distribution whose
# apt sources lack linux-image-amd64 (Ubuntu) and with nothing cached, the suite cannot run.
if ! apt-cache show linux-image-amd64 >/dev/null 2>&1 &&
   ! ls "${GDRMESH_VM_CACHE:-$HOME/.cache/gdrmesh-vm}"/kernel/*/*/boot/vmlinuz-* >/dev/null 2>&1; then
  echo "SKIPPED: Debian's kernel package linux-image-amd64 is not in this machine's apt sources"
  exit 77
fi
work="${2:-$(mktemp -d "${TMPDIR:-/tmp}/gdrmesh-e2e.XXXXXX")}"
set +e
"$here/../vm.sh" --workdir "$work" --bin "$bin" --file "$here/lib_cluster.sh" --script "$here/guest_e2e.sh" \
  --timeout "${GDRMESH_VM_TIMEOUT:-900}"
rc=$?
set -e
if [[ $rc -ne 0 ]]; then
  echo "e2e: VM run failed with exit $rc (console: $work/console.log)"
  exit "$rc"
fi
python3 "$here/check_e2e.py" "$work/out"
