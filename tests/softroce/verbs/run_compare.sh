#!/usr/bin/env bash
# run_compare.sh - perftest vs gdrmesh table in the Soft-RoCE VM (not a ctest: minutes long).
# Usage: [CMP_ROUNDS=N ...] run_compare.sh SELFTEST_BINARY [WORKDIR]  (CMP_*: guest_compare.sh)
# Prints the table (also WORKDIR/out/compare_table.txt); raw lines in compare_raw.txt,
# perftest's own outputs in perftest_raw.tar.gz.
set -euo pipefail
{ # parsed whole before it runs: an edit during a run must not change what runs (see vm.sh)
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BIN="${1:?usage: run_compare.sh SELFTEST_BINARY [WORKDIR]}"
WORKDIR="${2:-$(mktemp -d "${TMPDIR:-/tmp}/gdrmesh-verbs-cmp.XXXXXX")}"
mkdir -p "$WORKDIR"
# The guest sees no host environment: CMP_* settings travel inside the script.
{
    for v in CMP_ROUNDS CMP_WARMUP_ROUNDS CMP_BW_ITERS_64K CMP_BW_ITERS_1M CMP_LAT_ITERS \
        CMP_CPU_INIT CMP_CPU_TARGET CMP_NICE CMP_CASES; do
        [[ -n "${!v:-}" ]] && printf "%s='%s'\n" "$v" "${!v}"
    done
    cat "$HERE/guest_compare.sh"
} >"$WORKDIR/guest_compare.sh"
# busybox has no nice applet: coreutils' goes along (guest_compare.sh's CMP_NICE)
"$HERE/../vm.sh" --workdir "$WORKDIR" --script "$WORKDIR/guest_compare.sh" --bin "$BIN" \
    --bin "$(command -v nice)" \
    --file "$HERE/compare_table.awk" --quiet \
    --timeout "${GDRMESH_VM_TIMEOUT:-1800}"
cat "$WORKDIR/out/compare_table.txt"
# shellcheck disable=SC2317 # reached only when the code above did not exit
exit
}
