# compare_table.awk - perftest vs gdrmesh table from normalized result lines
# ("perftest op=write_bw size=65536 ... bw_avg_MBps=..", "gdrmesh op=... t_typical_us=..").
# Per case: the median over the rounds of each tool, and the ratio gdrmesh/perftest
# (bandwidth: bw_avg_MBps, >= 1.00 meets the target; latency: t_typical_us, <= 1.00 does).
function kv(line, key,    i, nf, f, a) {
    nf = split(line, f, " ")
    for (i = 1; i <= nf; i++) { split(f[i], a, "="); if (a[1] == key) return a[2] }
    return ""
}
function median(list,    m, v, i, j, t) {
    m = split(list, v, " ")
    if (m == 0) return ""
    for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
    return (m % 2) ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
}
($1 == "perftest" || $1 == "gdrmesh") && $2 ~ /^op=/ {
    op = kv($0, "op"); size = kv($0, "size"); key = op "/" size
    if (!(key in seen)) { seen[key] = 1; order[++ncase] = key }
    if (index($0, "status=FAILED")) { fails[$1 "|" key]++; next }
    v = (op ~ /_bw$/) ? kv($0, "bw_avg_MBps") : kv($0, "t_typical_us")
    vals[$1 "|" key] = vals[$1 "|" key] " " v
    runs[$1 "|" key]++
}
END {
    printf "%-18s %6s %16s %16s %7s  %s\n", "case", "rounds", "perftest", "gdrmesh", "ratio", "verdict"
    bad = 0
    for (c = 1; c <= ncase; c++) {
        k = order[c]
        unit = (k ~ /_bw\//) ? "MB/s" : "us"
        pa = median(vals["perftest|" k]); gb = median(vals["gdrmesh|" k])
        if (pa == "" || gb == "" || pa + 0 == 0) {
            printf "%-18s %6s %16s %16s %7s  %s\n", k, runs["gdrmesh|" k] + 0, pa, gb, "-", "NO DATA"
            bad++
            continue
        }
        ratio = gb / pa
        ok = (unit == "MB/s") ? (ratio >= 1.0) : (ratio <= 1.0)
        if (!ok) bad++
        printf "%-18s %6d %11.2f %4s %11.2f %4s %7.3f  %s\n", k, runs["gdrmesh|" k], pa, unit, gb, unit, ratio, ok ? "ok" : "BELOW TARGET"
    }
    printf "TABLE_DONE cases=%d below_target=%d\n", ncase, bad
}
