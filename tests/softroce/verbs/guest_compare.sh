# shellcheck shell=sh
# guest_compare.sh - perftest vs gdrmesh on the same rxe pair, alternating runs (guest side).
# Runs inside tests/softroce/vm.sh (busybox sh). Each case runs ROUNDS times, perftest then
# gdrmesh, with the same size, iterations and QP count; the table shows the median of each
# and the ratio (bandwidth: gdrmesh/perftest, >= 1.00 is the target; latency: gdrmesh/perftest
# on t_typical, <= 1.00 is the target).
# Environment: CMP_ROUNDS (3), CMP_BW_ITERS_64K (1000), CMP_BW_ITERS_1M (100),
# CMP_LAT_ITERS (1000), CMP_CASES (space-separated subset of the case names below).
. /opt/share/lib_perftest.sh
ROUNDS="${CMP_ROUNDS:-3}"
I64="${CMP_BW_ITERS_64K:-1000}"
I1M="${CMP_BW_ITERS_1M:-100}"
ILAT="${CMP_LAT_ITERS:-1000}"
CASES="${CMP_CASES:-write_bw:65536:$I64 write_bw:1048576:$I1M read_bw:65536:$I64 read_bw:1048576:$I1M send_bw:65536:$I64 send_bw:1048576:$I1M write_lat:2:$ILAT send_lat:2:$ILAT}"
RES=/tmp/compare_raw.txt
: >"$RES"
export PT_RESULTS="$RES"
r=1
while [ "$r" -le "$ROUNDS" ]; do
    for c in $CASES; do
        op=${c%%:*}; rest=${c#*:}; size=${rest%%:*}; iters=${rest#*:}
        "pt_$op" "$size" "$iters" >/dev/null
        gdrmesh_verbs_selftest --bench "$op" "$size" "$iters" --init-dev "$RXE_B" \
            --target-dev "$RXE_A" >>"$RES" 2>&1
    done
    r=$((r + 1))
done
cat "$RES"
echo
awk -f /opt/share/compare_table.awk "$RES" | tee /tmp/compare_table.txt
/opt/export "$RES" compare_raw.txt
/opt/export /tmp/compare_table.txt compare_table.txt
pt_export_raw perftest_raw.tar.gz
exit 0
