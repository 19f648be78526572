# compare_before.awk - before/after table from guest_compare.sh's raw lines: per case the
# median (min..max) over the rounds of "before" (the old gdrmesh_verbs_selftest), "gdrmesh"
# (the new one) and perftest. after/before: ratio of the medians. Verdict "within noise" when
# the new median lies inside the old one's min..max range or beats the old median (bandwidth
# higher, latency lower); latency cases also report whether the new median is at or below
# perftest's ("lat<=pt").
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
function cell(list) {
    if (list == "") return "-"
    return sprintf("%.2f (%.2f..%.2f)", median(list), lo(list), hi(list))
}
($1 == "perftest" || $1 == "gdrmesh" || $1 == "before") && $2 ~ /^op=/ {
    op = kv($0, "op"); size = kv($0, "size"); key = op "/" size
    if (!(key in seen)) { seen[key] = 1; order[++ncase] = key }
    if (index($0, "status=FAILED")) { fails[$1 "|" key]++; next }
    v = (op ~ /_bw$/) ? kv($0, "bw_avg_MBps") : kv($0, "t_typical_us")
    vals[$1 "|" key] = vals[$1 "|" key] " " v
    runs[$1 "|" key]++
}
END {
    printf "%-17s %3s  %-24s %-24s %-24s %7s  %s\n", "case", "n", "perftest med (min..max)", "before med (min..max)", "after med (min..max)", "aft/bef", "verdict"
    bad = 0
    for (c = 1; c <= ncase; c++) {
        k = order[c]
        bw = (k ~ /_bw\//)
        b = vals["before|" k]; a = vals["gdrmesh|" k]; p = vals["perftest|" k]
        nf = fails["before|" k] + fails["gdrmesh|" k] + fails["perftest|" k]
        if (b == "" || a == "" || median(b) + 0 == 0) {
            printf "%-17s %3d  %-24s %-24s %-24s %7s  %s\n", k, runs["gdrmesh|" k], cell(p), cell(b), cell(a), "-", "NO DATA"
            bad++
            continue
        }
        am = median(a); bm = median(b)
        within = (am + 0 >= lo(b) + 0 && am + 0 <= hi(b) + 0) || (bw ? am + 0 >= bm + 0 : am + 0 <= bm + 0)
        verdict = within ? "within noise" : "OUTSIDE"
        if (!within) bad++
        if (!bw && p != "") {
            if (am + 0 <= median(p) + 0) verdict = verdict ", lat<=pt"
            else { verdict = verdict ", LAT>PT"; bad++ }
        }
        if (nf) verdict = verdict " (" nf " failed runs)"
        printf "%-17s %3d  %-24s %-24s %-24s %7.3f  %s\n", k, runs["gdrmesh|" k], cell(p), cell(b), cell(a), am / bm, verdict
    }
    printf "BEFORE_AFTER_DONE cases=%d flagged=%d\n", ncase, bad
}
