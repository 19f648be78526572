# compare_table.awk - perftest vs gdrmesh table from normalized result lines
# ("perftest op=write_bw size=65536 ... bw_avg_MBps=.. tx_depth=..", "gdrmesh op=... ").
# Per case and tool: min / median / max over the rounds; the ratio gdrmesh/perftest of the
# medians (bandwidth: bw_avg_MBps, >= 1.00 meets the target; latency: t_typical_us, <= 1.00
# does). "params" says whether both ran with the same tx_depth, cq_mod, outstanding reads and
# inline size in every round (gdrmesh's rd_atomic is the value in use after the device cap).
function kv(line, key,    i, nf, f, a) {
    nf = split(line, f, " ")
    for (i = 1; i <= nf; i++) { split(f[i], a, "="); if (a[1] == key) return a[2] }
    return ""
}
function sortlist(list, v,    m, i, j, t) {
    m = split(list, v, " ")
    for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
    return m
}
function median(list,    m, v) {
    m = sortlist(list, v)
    if (m == 0) return ""
    return (m % 2) ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
}
function lo(list,    m, v) { m = sortlist(list, v); return m ? v[1] : "" }
function hi(list,    m, v) { m = sortlist(list, v); return m ? v[m] : "" }
($1 == "perftest" || $1 == "gdrmesh") && $2 ~ /^op=/ {
    op = kv($0, "op"); size = kv($0, "size"); key = op "/" size
    if (!(key in seen)) { seen[key] = 1; order[++ncase] = key }
    if (index($0, "status=FAILED")) { fails[$1 "|" key]++; next }
    v = (op ~ /_bw$/) ? kv($0, "bw_avg_MBps") : kv($0, "t_typical_us")
    vals[$1 "|" key] = vals[$1 "|" key] " " v
    runs[$1 "|" key]++
    rd = kv($0, "rd_atomic"); if (op !~ /^read/) rd = "-"
    p = kv($0, "tx_depth") "/" kv($0, "cq_mod") "/" rd "/" kv($0, "inline")
    if (op ~ /_lat$/) p = kv($0, "inline")  # latency: one outstanding message, no moderation
    r = kv($0, "round")
    par[$1 "|" key "|" r] = p
    rounds[key "|" r] = 1
    if (!(key in shown)) shown[key] = p
}
END {
    printf "%-17s %3s  %-26s %-26s %6s  %-6s %s\n", "case", "n", "perftest min/med/max", "gdrmesh min/med/max", "ratio", "params", "verdict"
    bad = 0
    for (c = 1; c <= ncase; c++) {
        k = order[c]
        unit = (k ~ /_bw\//) ? "MB/s" : "us"
        same = "same"
        for (rk in rounds) {
            split(rk, a, "|")
            if (a[1] != k) continue
            if (par["perftest|" k "|" a[2]] != par["gdrmesh|" k "|" a[2]]) same = "DIFF"
        }
        pa = median(vals["perftest|" k]); gb = median(vals["gdrmesh|" k])
        nf = fails["perftest|" k] + fails["gdrmesh|" k]
        if (pa == "" || gb == "" || pa + 0 == 0) {
            printf "%-17s %3d  %-26s %-26s %6s  %-6s %s\n", k, runs["gdrmesh|" k], "-", "-", "-", same, "NO DATA"
            bad++
            continue
        }
        ratio = gb / pa
        ok = (unit == "MB/s") ? (ratio >= 1.0) : (ratio <= 1.0)
        if (!ok) bad++
        pt = sprintf("%.2f/%.2f/%.2f %s", lo(vals["perftest|" k]), pa, hi(vals["perftest|" k]), unit)
        gd = sprintf("%.2f/%.2f/%.2f %s", lo(vals["gdrmesh|" k]), gb, hi(vals["gdrmesh|" k]), unit)
        printf "%-17s %3d  %-26s %-26s %6.3f  %-6s %s%s\n", k, runs["gdrmesh|" k], pt, gd, ratio, same, ok ? "ok" : "BELOW TARGET", nf ? " (" nf " failed runs)" : ""
    }
    printf "params: bandwidth tx_depth/cq_mod/outstanding_reads/inline, latency inline\n"
    for (c = 1; c <= ncase; c++) printf "  %-17s %s\n", order[c], shown[order[c]]
    printf "TABLE_DONE cases=%d below_target=%d\n", ncase, bad
}
