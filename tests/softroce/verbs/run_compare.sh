#!/usr/bin/env bash
# run_compare.sh - perftest vs gdrmesh table in the Soft-RoCE VM (not a ctest: minutes long).
# Usage: run_compare.sh SELFTEST_BINARY [WORKDIR]
# Prints the table (also WORKDIR/out/compare_table.txt); raw lines in compare_raw.txt,
# perftest's own outputs in perftest_raw.tar.gz.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BIN="${1:?usage: run_compare.sh SELFTEST_BINARY [WORKDIR]}"
WORKDIR="${2:-$(mktemp -d "${TMPDIR:-/tmp}/gdrmesh-verbs-cmp.XXXXXX")}"
"$HERE/../vm.sh" --workdir "$WORKDIR" --script "$HERE/guest_compare.sh" --bin "$BIN" --quiet \
    --timeout "${GDRMESH_VM_TIMEOUT:-1800}"
cat "$WORKDIR/out/compare_table.txt"
