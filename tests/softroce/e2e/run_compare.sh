#!/usr/bin/env bash
# Benchmark (not a ctest): perftest vs gdrmesh itself on Soft-RoCE, in one VM boot.
#   tests/softroce/e2e/run_compare.sh GDRMESH_BINARY [WORKDIR]     (env: ROUNDS, CASES, BEFORE_BIN, GD_EXTRA, PT_EXTRA)
set -euo pipefail
bin="$1"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work="${2:-$(mktemp -d "${TMPDIR:-/tmp}/gdrmesh-compare.XXXXXX")}"
script="$work/guest_compare_env.sh"
mkdir -p "$work"
{
  echo "#!/bin/sh"
  echo "ROUNDS='${ROUNDS:-3}' CASES='${CASES:-all}' GD_EXTRA='${GD_EXTRA:-}' PT_EXTRA='${PT_EXTRA:-}'"
  echo "export ROUNDS CASES GD_EXTRA PT_EXTRA"
  cat "$here/guest_compare.sh"
} >"$script"
# busybox has no nice: coreutils' goes along.
# BEFORE_BIN: an older gdrmesh, run beside it in the same boot (its own two workers).
before=()
if [[ -n "${BEFORE_BIN:-}" ]]; then
  mkdir -p "$work/before"
  cp "$BEFORE_BIN" "$work/before/gdrmesh_before"
  before=(--bin "$work/before/gdrmesh_before")
fi
"$here/../vm.sh" --workdir "$work" --bin "$bin" "${before[@]}" --bin "$(command -v nice)" \
  --file "$here/lib_cluster.sh" --script "$script" \
  --timeout 1800 --quiet
python3 "$here/compare_table.py" "$work/out" | tee "$work/compare_table.txt"
