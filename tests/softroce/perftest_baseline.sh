# shellcheck shell=sh
# perftest_baseline.sh - guest script for vm.sh: Debian perftest between rxe0 (server,
# 10.77.0.1) and rxe1 (client, 10.77.0.2) over the veth pair. Prints one normalized line
# per run (see lib_perftest.sh for the format and units) and exports:
#   out/perftest_results.txt   the normalized lines
#   out/perftest_raw.tar.gz    every raw server/client output
# Iteration counts are chosen to finish in a few seconds each under TCG emulation; set
# PT_ITERS_64K / PT_ITERS_1M / PT_ITERS_LAT to change them.
# Usage: tests/softroce/vm.sh --workdir DIR --timeout 600 --script tests/softroce/perftest_baseline.sh
# (about 50 s of VM time on an idle 2-core host, 150 s when the host is busy compiling)
# shellcheck source-path=SCRIPTDIR source=lib_perftest.sh
. /opt/share/lib_perftest.sh

PT_RESULTS=/tmp/perftest_results.txt
: >"$PT_RESULTS"
I64K="${PT_ITERS_64K:-2000}"
I1M="${PT_ITERS_1M:-200}"
ILAT="${PT_ITERS_LAT:-2000}"
FAILED=0
run() {
    _t0=$(cut -d' ' -f1 /proc/uptime)
    "$@" || FAILED=$((FAILED + 1))
    echo "  ($* took $(awk -v a="$_t0" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { printf "%.1f", b - a }') s guest time)"
}

run pt_write_bw 65536 "$I64K"
run pt_write_bw 1048576 "$I1M"
run pt_read_bw 65536 "$I64K"
run pt_read_bw 1048576 "$I1M"
run pt_send_bw 65536 "$I64K"
run pt_send_bw 1048576 "$I1M"
run pt_write_lat 2 "$ILAT"

/opt/export "$PT_RESULTS"
pt_export_raw perftest_raw.tar.gz
echo "perftest_baseline: $FAILED run(s) failed"
[ "$FAILED" -eq 0 ]
