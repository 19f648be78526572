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
awk '
    function kv(line, key,   i, n, f, a) {
        n = split(line, f, " ")
        for (i = 1; i <= n; i++) { split(f[i], a, "="); if (a[1] == key) return a[2] }
        return ""
    }
    function median(list,   n, v, i, j, t) {
        n = split(list, v, " ")
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
        if (n == 0) return ""
        return (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    }
    ($1 == "perftest" || $1 == "gdrmesh") {
        op = kv($0, "op"); size = kv($0, "size"); key = op " " size
        if (!(key in seen)) { seen[key] = 1; order[++n] = key }
        if (index($0, "status=FAILED")) { fails[$1, key]++; next }
        v = (op ~ /_bw$/) ? kv($0, "bw_avg_MBps") : kv($0, "t_typical_us")
        vals[$1, key] = vals[$1, key] " " v
    }
    END {
        printf "%-22s %14s %14s %7s  %s\n", "case", "perftest", "gdrmesh", "ratio", "verdict"
        bad = 0
        for (i = 1; i <= n; i++) {
            k = order[i]; split(k, p, " ")
            unit = (p[1] ~ /_bw$/) ? "MB/s" : "us"
            a = median(vals["perftest", k]); b = median(vals["gdrmesh", k])
            if (a == "" || b == "" || a + 0 == 0) { printf "%-22s %14s %14s %7s  %s\n", k, a, b, "-", "NO DATA"; bad++; continue }
            ratio = b / a
            ok = (unit == "MB/s") ? (ratio >= 1.0) : (ratio <= 1.0)
            if (!ok) bad++
            printf "%-22s %9.2f %4s %9.2f %4s %7.3f  %s\n", k, a, unit, b, unit, ratio, ok ? "ok" : "BELOW TARGET"
        }
        printf "TABLE_DONE below_target=%d\n", bad
    }' "$RES" | tee /tmp/compare_table.txt
/opt/export "$RES" compare_raw.txt
/opt/export /tmp/compare_table.txt compare_table.txt
pt_export_raw perftest_raw.tar.gz
exit 0
