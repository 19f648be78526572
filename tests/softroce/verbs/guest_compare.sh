# shellcheck shell=sh
# guest_compare.sh - perftest vs gdrmesh on the same rxe pair, alternating runs (guest side).
# Runs inside tests/softroce/vm.sh (busybox sh).
#
# Fairness: for every run perftest goes first in odd rounds and second in even rounds; gdrmesh
# then runs with the parameters perftest printed in its own header for that run (TX depth,
# CQ Moderation, Outstand reads, Max inline data; the MTU is the port's for both), no warm-up
# iterations (perftest's bandwidth and latency tests have none by default), the same size,
# iterations and QP count. Both tools' two sides are pinned the same way: the initiator
# (perftest client) to CMP_CPU_INIT, the target (perftest server) to CMP_CPU_TARGET, perftest
# with `taskset -c`, gdrmesh with sched_setaffinity (--cpu-init/--cpu-target).
# The first CMP_WARMUP_ROUNDS rounds are discarded (page cache, rxe/ARP state, CPU frequency).
# Each result line also carries the guest's CPU time split (/proc/stat deltas, in ticks:
# user, sys, softirq, idle per CPU) of that run, to show where the time went, and the rxe
# error/retry counters that moved (RNR NAKs, sequence errors, retransmissions).
#
# CMP_NICE (default 19) runs both tools' processes at that nice level: rxe does its protocol
# work in softirq context, which under emulation overruns its budget and moves to ksoftirqd, a
# normal thread that a busy-polling process on the same CPU delays by a whole tick (4 ms at
# HZ=250); at nice 19 the pollers yield to it at once. Same for both tools.
#
# Before/after: when gdrmesh_verbs_selftest_before is on PATH (run_compare.sh CMP_BEFORE_BIN),
# every run also runs it ("before ..." lines), and the order of the three rotates by round
# (perftest, before, after / before, after, perftest / after, perftest, before).
#
# Environment: CMP_ROUNDS (5), CMP_WARMUP_ROUNDS (1), CMP_BW_ITERS_64K (1000),
# CMP_BW_ITERS_1M (100), CMP_LAT_ITERS (1000), CMP_CPU_INIT (1), CMP_CPU_TARGET (0) (-1: no
# pinning), CMP_NICE (19; 0: none), CMP_CASES (space-separated OP:SIZE:ITERS list, default:
# the eight cases below).
. /opt/share/lib_perftest.sh
ROUNDS="${CMP_ROUNDS:-5}"
WARM="${CMP_WARMUP_ROUNDS:-1}"
I64="${CMP_BW_ITERS_64K:-1000}"
I1M="${CMP_BW_ITERS_1M:-100}"
ILAT="${CMP_LAT_ITERS:-1000}"
CPU_I="${CMP_CPU_INIT:-1}"
CPU_T="${CMP_CPU_TARGET:-0}"
NICE="${CMP_NICE:-19}"
CASES="${CMP_CASES:-write_bw:65536:$I64 write_bw:1048576:$I1M read_bw:65536:$I64 read_bw:1048576:$I1M send_bw:65536:$I64 send_bw:1048576:$I1M write_lat:2:$ILAT send_lat:2:$ILAT}"
RES=/tmp/compare_raw.txt
WRES=/tmp/compare_warmup.txt
: >"$RES"
: >"$WRES"
mkdir -p "$PT_RAW_DIR"

# pin CPU: the nice and taskset prefix for one side
pin() {
    if [ "$NICE" -ne 0 ]; then printf 'nice -n %s ' "$NICE"; fi
    if [ "$1" -ge 0 ] 2>/dev/null; then printf 'taskset -c %s' "$1"; fi
}

# cpu_snap: "user sys softirq idle" per CPU, one line per CPU, from /proc/stat
cpu_snap() { awk '$1 ~ /^cpu[0-9]+$/ { print $1, $2 + $3, $4, $8, $5 }' /proc/stat; }
# cpu_delta BEFORE AFTER: "cpu0=u/s/si/idle,cpu1=..." (ticks of USER_HZ, 10 ms)
cpu_delta() {
    printf '%s\n%s\n' "$1" "$2" | awk '
        { if ($1 in u) { printf "%s%s=%d/%d/%d/%d", sep, $1, $2 - u[$1], $3 - s[$1], $4 - q[$1], $5 - i[$1]; sep = "," }
          else { u[$1] = $2; s[$1] = $3; q[$1] = $4; i[$1] = $5 } }'
}

# cnt_snap: rxe0/rxe1 hw counters, "dev.name value" lines; cnt_delta BEFORE AFTER: the
# non-zero deltas of the error/retry/sequence counters ("rxe0.rcvd_rnr_err=3,..." or "none")
cnt_snap() {
    for f in /sys/class/infiniband/rxe[01]/ports/1/hw_counters/*; do
        d=${f#/sys/class/infiniband/}
        echo "${d%%/*}.${f##*/} $(cat "$f" 2>/dev/null || echo 0)"
    done
}
cnt_delta() {
    printf '%s\n%s\n' "$1" "$2" | awk '
        $1 !~ /err|retry|seq|dup|rnr|drop/ { next }
        { if ($1 in v) { d = $2 - v[$1]; if (d) { printf "%s%s=%d", sep, $1, d; sep = ","; n++ } } else v[$1] = $2 }
        END { if (!n) printf "none" }'
}

# hdr FILE FIELD: a value from perftest's header ("TX depth        : 100"), "" when absent
hdr() {
    awk -F: -v f="$2" 'index($1, f) == 2 { v = $2; gsub(/[ \t]|\[B\]/, "", v); print v; exit }' "$1"
}

# pt_pinned OP SIZE ITERS: one perftest run, server and client pinned; sets PT_LINE and PT_CLIENT
pt_pinned() {
    _op=$1 _size=$2 _iters=$3
    _tool="ib_$_op"
    _sdev="$RXE_A" _cdev="$RXE_B"
    _sgid=$(/opt/gid_index "$_sdev")
    _cgid=$(/opt/gid_index "$_cdev")
    _try=0
    while :; do
        _port=$PT_PORT
        PT_PORT=$((PT_PORT + 1))
        PT_SEQ=$((PT_SEQ + 1))
        _base="$PT_RAW_DIR/$(printf '%03d' "$PT_SEQ")_${_op}_${_size}_${_iters}"
        # shellcheck disable=SC2046 # pin prints a command prefix or nothing
        timeout "$PT_TIMEOUT" $(pin "$CPU_T") "$_tool" -d "$_sdev" -x "$_sgid" -F -s "$_size" \
            -n "$_iters" -p "$_port" >"$_base.server.txt" 2>&1 &
        _spid=$!
        if ! pt_wait_tcp_listen "$_port" 30; then
            kill "$_spid" 2>/dev/null
            wait "$_spid" 2>/dev/null
            PT_LINE="perftest op=$_op size=$_size iters=$_iters status=FAILED reason=server_not_listening"
            return 1
        fi
        # shellcheck disable=SC2046
        timeout "$PT_TIMEOUT" $(pin "$CPU_I") "$_tool" -d "$_cdev" -x "$_cgid" -F -s "$_size" \
            -n "$_iters" -p "$_port" "$IP_A" >"$_base.client.txt" 2>&1
        _crc=$?
        wait "$_spid"
        _src=$?
        PT_CLIENT="$_base.client.txt"
        if [ "$_crc" -ne 0 ] || [ "$_src" -ne 0 ]; then
            PT_LINE="perftest op=$_op size=$_size iters=$_iters status=FAILED reason=exit_client_${_crc}_server_${_src}"
            return 1
        fi
        PT_LINE=$(pt_parse "$_op" "$_size" "$_iters" "$PT_CLIENT")
        _prc=$?
        # 2: perftest's clock calibration failed (0 MB/s or inf us): run again
        if [ "$_prc" -ne 2 ] || [ "$_try" -ge 2 ]; then break; fi
        _try=$((_try + 1))
    done
    if [ "$_try" -gt 0 ]; then PT_LINE="$PT_LINE retries=$_try"; fi
    [ "$_prc" -eq 0 ]
}

BEFORE=""
if command -v gdrmesh_verbs_selftest_before >/dev/null 2>&1; then BEFORE=1; fi

# run_case OP SIZE ITERS ROUND OUT
run_case() {
    _c_op=$1 _c_size=$2 _c_iters=$3 _c_round=$4 _c_out=$5
    if [ -n "$BEFORE" ]; then
        case $((_c_round % 3)) in
            1) _order="pt gb gd" ;;
            2) _order="gb gd pt" ;;
            *) _order="gd pt gb" ;;
        esac
    elif [ $((_c_round % 2)) -eq 0 ]; then
        _order="gd pt"
    else
        _order="pt gd"
    fi
    _first=${_order%% *}
    # gdrmesh needs perftest's header: in a gdrmesh-first round it uses the previous one's
    for _who in $_order; do
        _b=$(cpu_snap)
        _k=$(cnt_snap)
        if [ "$_who" = pt ]; then
            pt_pinned "$_c_op" "$_c_size" "$_c_iters"
            _line="$PT_LINE"
            # the parameters perftest ran with (absent lines: not used by that test)
            _tx=$(hdr "$PT_CLIENT" "TX depth")
            _cq=$(hdr "$PT_CLIENT" "CQ Moderation")
            _rd=$(hdr "$PT_CLIENT" "Outstand reads")
            _in=$(hdr "$PT_CLIENT" "Max inline data")
            _mtu=$(hdr "$PT_CLIENT" "Mtu")
            eval "P_${_c_op}_${_c_size}=\"${_tx:-1}:${_cq:-1}:${_rd:-0}:${_in:-0}\""
            _line="$_line tx_depth=${_tx:-?} cq_mod=${_cq:-?} rd_atomic=${_rd:--} inline=${_in:-0} mtu=${_mtu:-?}"
        else
            eval "_p=\${P_${_c_op}_${_c_size}:-}"
            if [ -z "$_p" ]; then
                # no perftest header yet (gdrmesh-first round before any perftest run)
                pt_pinned "$_c_op" "$_c_size" "$_c_iters" >/dev/null
                _tx=$(hdr "$PT_CLIENT" "TX depth")
                _cq=$(hdr "$PT_CLIENT" "CQ Moderation")
                _rd=$(hdr "$PT_CLIENT" "Outstand reads")
                _in=$(hdr "$PT_CLIENT" "Max inline data")
                _p="${_tx:-1}:${_cq:-1}:${_rd:-0}:${_in:-0}"
                _b=$(cpu_snap)
                _k=$(cnt_snap)
            fi
            _tx=${_p%%:*} _r=${_p#*:}
            _cq=${_r%%:*} _r=${_r#*:}
            _rd=${_r%%:*} _in=${_r#*:}
            _rdarg=""
            if [ "$_rd" -gt 0 ]; then _rdarg="--rd-atomic $_rd"; fi
            _bin=gdrmesh_verbs_selftest _tag=gdrmesh
            if [ "$_who" = gb ]; then _bin=gdrmesh_verbs_selftest_before _tag=before; fi
            # shellcheck disable=SC2086,SC2046
            _line=$($(pin -1) "$_bin" --bench "$_c_op" "$_c_size" "$_c_iters" \
                --init-dev "$RXE_B" --target-dev "$RXE_A" --tx-depth "$_tx" --cq-mod "$_cq" \
                $_rdarg --inline "$_in" --warmup 0 --cpu-init "$CPU_I" --cpu-target "$CPU_T" 2>&1 |
                grep '^gdrmesh op=' || echo "gdrmesh op=$_c_op size=$_c_size iters=$_c_iters status=FAILED reason=no_output")
            _line="$_tag ${_line#gdrmesh }"
        fi
        # also on the console: a run that hits the VM's timeout keeps what it measured
        echo "$_line round=$_c_round first=$_first cpu=$(cpu_delta "$_b" "$(cpu_snap)") errs=$(cnt_delta "$_k" "$(cnt_snap)")" |
            tee -a "$_c_out"
    done
}

echo "compare: rounds=$ROUNDS warmup_rounds=$WARM cpus init=$CPU_I target=$CPU_T nice=$NICE nproc=$(nproc)" | tee "$RES.head"
r=1
total=$((ROUNDS + WARM))
while [ "$r" -le "$total" ]; do
    out="$RES"
    if [ "$r" -le "$WARM" ]; then out="$WRES"; fi
    for c in $CASES; do
        op=${c%%:*}
        rest=${c#*:}
        run_case "$op" "${rest%%:*}" "${rest#*:}" "$r" "$out"
    done
    r=$((r + 1))
done
cat "$RES"
echo
{
    cat "$RES.head"
    awk -f /opt/share/compare_table.awk "$RES"
    if [ -n "$BEFORE" ]; then
        echo
        awk -f /opt/share/compare_before.awk "$RES"
    fi
} | tee /tmp/compare_table.txt
/opt/export "$RES" compare_raw.txt
/opt/export "$WRES" compare_warmup.txt
/opt/export /tmp/compare_table.txt compare_table.txt
pt_export_raw perftest_raw.tar.gz
exit 0
