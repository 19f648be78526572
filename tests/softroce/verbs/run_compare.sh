#!/usr/bin/env bash
# run_compare.sh - perftest vs gdrmesh table in the Soft-RoCE VM (not a ctest: minutes long).
# Usage: [CMP_ROUNDS=N ...] [CMP_BEFORE_BIN=OLD_SELFTEST] run_compare.sh SELFTEST_BINARY [WORKDIR]
# (CMP_*: guest_compare.sh). CMP_BEFORE_BIN: a gdrmesh_verbs_selftest built from an older commit;
# it runs alternately with SELFTEST_BINARY and perftest in the same boot, and a before/after
# table follows (compare_before.awk).
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
EXTRA=()
if [[ -n "${CMP_BEFORE_BIN:-}" ]]; then
    # Same program name in the guest would collide: the old one goes under its own name.
    mkdir -p "$WORKDIR/before"
    cp "$CMP_BEFORE_BIN" "$WORKDIR/before/gdrmesh_verbs_selftest_before"
    EXTRA=(--bin "$WORKDIR/before/gdrmesh_verbs_selftest_before")
fi
# busybox has no nice applet: coreutils' goes along (guest_compare.sh's CMP_NICE)
"$HERE/../vm.sh" --workdir "$WORKDIR" --script "$WORKDIR/guest_compare.sh" --bin "$BIN" \
    "${EXTRA[@]}" --bin "$(command -v nice)" \
    --file "$HERE/compare_table.awk" --file "$HERE/compare_before.awk" --quiet \
    --timeout "${GDRMESH_VM_TIMEOUT:-1800}"
cat "$WORKDIR/out/compare_table.txt"
# shellcheck disable=SC2317 # reached only when the code above did not exit
exit
}
