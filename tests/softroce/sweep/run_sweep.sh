#!/usr/bin/env bash
# Boots the Soft-RoCE VM, runs two all-pairs verbs sweeps over four workers in it (healthy, then
# with netem delay on w3's link) and checks the exported reports and rows.
# ctest: exit 0 pass, 77 skipped (no qemu / no Debian kernel), else failed.
#   run_sweep.sh GDRMESH_BINARY [WORKDIR]
# Environment: SWEEP_ITERS (300), SWEEP_DELAY (30ms), SWEEP_FRACTION (0.35) go to the guest;
# GDRMESH_VM_TIMEOUT bounds the VM (default 600 s).
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
tc_bin="$(command -v tc || true)"
[[ -n "$tc_bin" ]] || tc_bin=/usr/sbin/tc
if [[ ! -x "$tc_bin" ]]; then
  echo "sweep: iproute2's tc not found (run deploy/install-deps.sh; Debian package iproute2)"
  exit 2
fi
work="${2:-$(mktemp -d "${TMPDIR:-/tmp}/gdrmesh-sweep.XXXXXX")}"
mkdir -p "$work"
env_file="$work/sweep_env.sh"
{
  echo "SWEEP_ITERS=${SWEEP_ITERS:-300}"
  echo "SWEEP_DELAY=${SWEEP_DELAY:-30ms}"
  echo "SWEEP_FRACTION=${SWEEP_FRACTION:-0.35}"
} >"$env_file"
set +e
"$here/../vm.sh" --workdir "$work" --bin "$bin" --bin "$tc_bin" \
  --file "$here/../e2e/lib_cluster.sh" --file "$env_file" \
  --module bridge --module sch_netem \
  --script "$here/guest_sweep.sh" --timeout "${GDRMESH_VM_TIMEOUT:-600}"
rc=$?
set -e
if [[ $rc -ne 0 ]]; then
  echo "sweep: VM run failed with exit $rc (console: $work/console.log)"
  # The coordinator's own last words (a crash prints its stack): in the log CI keeps.
  if [[ -f "$work/out/coordinator.log" ]]; then
    echo "--- coordinator.log (last 60 lines)"
    tail -n 60 "$work/out/coordinator.log"
  fi
  exit "$rc"
fi
python3 "$here/check_sweep.py" "$work/out"
