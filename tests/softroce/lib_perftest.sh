# shellcheck shell=sh
# lib_perftest.sh - perftest wrappers for guest scripts run by tests/softroce/vm.sh.
#
# Sourced (not executed) by guest scripts under busybox sh; vm.sh puts it in every
# guest as /opt/share/lib_perftest.sh:   . /opt/share/lib_perftest.sh
#
# Each pt_* call runs one perftest server (background) + client pair and prints ONE
# normalized line on stdout (also appended to $PT_RESULTS when set):
#   perftest op=write_bw size=65536 iters=2000 bw_avg_MBps=.. bw_peak_MBps=.. msg_rate_Mpps=..
#   perftest op=write_lat size=2 iters=2000 t_min_us=.. t_typical_us=.. t_avg_us=.. t_max_us=.. t_p99_us=.. t_p999_us=..
# or, on failure (return status 1):
#   perftest op=write_bw size=65536 iters=2000 status=FAILED reason=<word>
#
# Units. perftest 4.5 prints bandwidth as "MB/sec", but that is MiB/s: it divides by
# format_factor = 0x100000 (2^20) unless --report_gbits is given (print_report_bw in
# perftest_parameters.c; `ib_write_bw --help` says "MiB=2^20 byte"). We normalise to
# decimal MB/s (1e6 bytes/s): bw_*_MBps = perftest value * 1.048576.
# MsgRate[Mpps] is 1e6 messages per second (kept as is). Latencies are microseconds
# (rdtsc cycles divided by the cpu MHz from /proc/cpuinfo) and kept as is; write_lat
# reports half the round trip (one-way), as perftest does.
# JSON output (--out_json) is not used: perftest 4.5 writes unquoted keys and trailing
# commas, which no JSON parser accepts. We parse the text table by column name instead.
#
# Configuration (environment, all optional):
#   PT_SERVER_DEV / PT_CLIENT_DEV  rxe devices (default $RXE_A / $RXE_B)
#   PT_SERVER_IP                   server address (default $IP_A)
#   PT_PORT                        first TCP port for the out-of-band exchange
#                                  (default 18515; every run takes the next one)
#   PT_TIMEOUT                     seconds per run before it counts as failed (default 120)
#   PT_RAW_DIR                     raw server/client outputs (default /tmp/perftest)
#   PT_RESULTS                     file the normalized lines are appended to (optional)
#   PT_EXTRA                       extra perftest flags for both sides (optional)
#   PT_SERVER_PREFIX/PT_CLIENT_PREFIX  command prefix per side, e.g. "nice -n 19 taskset -c 0"

PT_PORT="${PT_PORT:-18515}"
PT_TIMEOUT="${PT_TIMEOUT:-120}"
PT_RAW_DIR="${PT_RAW_DIR:-/tmp/perftest}"
PT_SEQ=0

# pt_wait_tcp_listen PORT SECS: returns 0 once something listens on TCP PORT.
pt_wait_tcp_listen() {
    _hex=$(printf '%04X' "$1")
    _n=0
    while [ "$_n" -lt $(($2 * 20)) ]; do
        if awk -v p=":$_hex" '$4 == "0A" && substr($2, length($2) - 4) == p { f = 1 } END { exit !f }' \
            /proc/net/tcp /proc/net/tcp6 2>/dev/null; then
            return 0
        fi
        usleep 50000
        _n=$((_n + 1))
    done
    return 1
}

# pt_parse OP SIZE ITERS FILE: turns the client's result table into the normalized line.
pt_parse() {
    awk -v op="$1" -v size="$2" -v iters="$3" '
        function trim(s) { sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); return s }
        /#bytes/ && !done {
            s = $0; n = 0
            while (match(s, /#[A-Za-z]+|[A-Za-z0-9%.][^][#]*\[[^]]*\]/)) {
                n++; col[n] = trim(substr(s, RSTART, RLENGTH)); s = substr(s, RSTART + RLENGTH)
            }
            hdr = 1; next
        }
        hdr && !done && $1 ~ /^[0-9]+$/ {
            if (NF != n) { print "perftest op=" op " size=" size " iters=" iters " status=FAILED reason=table_columns_" NF "_vs_" n; bad = 1; exit }
            for (i = 1; i <= n; i++) v[col[i]] = $i
            done = 1
        }
        END {
            if (bad) exit 1
            if (!done) { print "perftest op=" op " size=" size " iters=" iters " status=FAILED reason=no_result_table"; exit 1 }
            line = "perftest op=" op " size=" v["#bytes"] " iters=" v["#iterations"]
            if (op ~ /_bw$/) {
                if (!("BW average[MB/sec]" in v)) { print line " status=FAILED reason=unexpected_bw_columns"; exit 1 }
                # perftest "MB/sec" is MiB/s (2^20 B/s); report decimal MB/s (1e6 B/s)
                # 0.00: get_cpu_mhz() of perftest returned 0 (see pt_run), no measurement
                if (v["BW average[MB/sec]"] + 0 <= 0) { print line " status=FAILED reason=zero_bw_reported"; exit 2 }
                line = line sprintf(" bw_avg_MBps=%.2f bw_peak_MBps=%.2f msg_rate_Mpps=%.6f",
                    v["BW average[MB/sec]"] * 1.048576, v["BW peak[MB/sec]"] * 1.048576, v["MsgRate[Mpps]"])
            } else {
                if (!("t_typical[usec]" in v)) { print line " status=FAILED reason=unexpected_lat_columns"; exit 1 }
                if (v["t_typical[usec]"] !~ /^[0-9]+(\.[0-9]+)?$/) { print line " status=FAILED reason=non_finite_latency"; exit 2 }
                line = line " t_min_us=" v["t_min[usec]"] " t_typical_us=" v["t_typical[usec]"] \
                    " t_avg_us=" v["t_avg[usec]"] " t_max_us=" v["t_max[usec]"] \
                    " t_p99_us=" v["99% percentile[usec]"] " t_p999_us=" v["99.9% percentile[usec]"]
            }
            print line
        }
    ' "$4"
}

# _pt_fail REASON: prints (and records) the failure line of the current pt_run.
_pt_fail() {
    _l="perftest op=$_op size=$_size iters=$_iters status=FAILED reason=$1"
    echo "$_l"
    if [ -n "${PT_RESULTS:-}" ]; then echo "$_l" >>"$PT_RESULTS"; fi
    return 1
}

# _pt_once: one server/client run of the current pt_run into $_base.{server,client}.txt.
# Status: 0 ok, 1 failed, 2 perftest could not calibrate its clock (retry).
_pt_once() {
    _port=$PT_PORT
    PT_PORT=$((PT_PORT + 1))
    PT_SEQ=$((PT_SEQ + 1))
    _base="$PT_RAW_DIR/$(printf '%03d' "$PT_SEQ")_${_op}_${_size}_${_iters}"
    # shellcheck disable=SC2086 # PT_EXTRA is a list of flags, the prefixes are commands
    ${PT_SERVER_PREFIX:-} timeout "$PT_TIMEOUT" "$_tool" -d "$_sdev" -x "$_sgid" -F -s "$_size" -n "$_iters" \
        -p "$_port" ${PT_EXTRA:-} >"$_base.server.txt" 2>&1 &
    _spid=$!
    if ! pt_wait_tcp_listen "$_port" 30; then
        kill "$_spid" 2>/dev/null
        wait "$_spid" 2>/dev/null
        _l="perftest op=$_op size=$_size iters=$_iters status=FAILED reason=server_not_listening"
        return 1
    fi
    # shellcheck disable=SC2086
    ${PT_CLIENT_PREFIX:-} timeout "$PT_TIMEOUT" "$_tool" -d "$_cdev" -x "$_cgid" -F -s "$_size" -n "$_iters" \
        -p "$_port" ${PT_EXTRA:-} "$_sip" >"$_base.client.txt" 2>&1
    _crc=$?
    wait "$_spid"
    _src=$?
    if [ "$_crc" -ne 0 ] || [ "$_src" -ne 0 ]; then
        _l="perftest op=$_op size=$_size iters=$_iters status=FAILED reason=exit_client_${_crc}_server_${_src}"
        return 1
    fi
    _l=$(pt_parse "$_op" "$_size" "$_iters" "$_base.client.txt")
}

# pt_run OP TOOL SIZE ITERS: one measurement; prints the normalized line.
# perftest converts cycles with get_cpu_mhz(), which is 0 when its rdtsc-vs-gettimeofday
# fit fails (a loaded host under TCG); with -F it then prints 0.00 MB/s or "inf" usec.
# Such runs are repeated up to PT_RETRIES times (default 2); the line then ends in retries=N.
pt_run() {
    _op=$1 _tool=$2 _size=$3 _iters=$4
    _sdev="${PT_SERVER_DEV:-${RXE_A:-rxe0}}"
    _cdev="${PT_CLIENT_DEV:-${RXE_B:-rxe1}}"
    _sip="${PT_SERVER_IP:-${IP_A:-10.77.0.1}}"
    mkdir -p "$PT_RAW_DIR"
    _sgid=$(/opt/gid_index "$_sdev") || { _pt_fail "no_ipv4_gid_on_$_sdev"; return 1; }
    _cgid=$(/opt/gid_index "$_cdev") || { _pt_fail "no_ipv4_gid_on_$_cdev"; return 1; }
    _try=0
    while :; do
        _pt_once
        _prc=$?
        if [ "$_prc" -ne 2 ] || [ "$_try" -ge "${PT_RETRIES:-2}" ]; then break; fi
        _try=$((_try + 1))
    done
    if [ "$_try" -gt 0 ]; then _l="$_l retries=$_try"; fi
    echo "$_l"
    if [ -n "${PT_RESULTS:-}" ]; then echo "$_l" >>"$PT_RESULTS"; fi
    [ "$_prc" -eq 0 ]
}

# pt_<op> SIZE ITERS
pt_write_bw() { pt_run write_bw ib_write_bw "$1" "$2"; }
pt_read_bw() { pt_run read_bw ib_read_bw "$1" "$2"; }
pt_send_bw() { pt_run send_bw ib_send_bw "$1" "$2"; }
pt_write_lat() { pt_run write_lat ib_write_lat "$1" "$2"; }
pt_read_lat() { pt_run read_lat ib_read_lat "$1" "$2"; }
pt_send_lat() { pt_run send_lat ib_send_lat "$1" "$2"; }

# pt_export_raw [NAME]: exports all raw outputs as one tar.gz (default perftest_raw.tar.gz)
pt_export_raw() {
    [ -d "$PT_RAW_DIR" ] || return 0
    tar -czf "/tmp/${1:-perftest_raw.tar.gz}" -C "$(dirname "$PT_RAW_DIR")" "$(basename "$PT_RAW_DIR")" &&
        /opt/export "/tmp/${1:-perftest_raw.tar.gz}"
}
