# shellcheck shell=sh
# smoke.sh - guest script for vm.sh: checks that Soft-RoCE carries real verbs traffic.
# Run it with tests/softroce/run_smoke.sh (or vm.sh --script tests/softroce/smoke.sh).
# Exit 0 only if every check passed. Results: out/smoke_results.txt, out/smoke_raw.tar.gz.
#
# Note: busybox sh runs its own applets before $PATH, so iproute2 is /usr/bin/ip and
# /usr/bin/rdma (full paths), never plain `ip`.
# shellcheck source-path=SCRIPTDIR source=lib_perftest.sh
. /opt/share/lib_perftest.sh

RES=/tmp/smoke_results.txt
RAW=/tmp/smoke
PT_RAW_DIR=$RAW/perftest
mkdir -p "$RAW"
: >"$RES"
FAILED=0
PORT=19000 # TCP/rdma_cm ports of the non-perftest checks; each check takes the next

pass() { echo "PASS $1" | tee -a "$RES"; }
fail() {
    echo "FAIL $1: $2" | tee -a "$RES"
    FAILED=$((FAILED + 1))
}

# wait_cm_listen PORT SECS: an rdma_cm id listens on PORT (rdma_cm listeners are not TCP)
wait_cm_listen() {
    _n=0
    while [ "$_n" -lt $(($2 * 20)) ]; do
        /usr/bin/rdma res show cm_id 2>/dev/null | grep "LISTEN" | grep -q ":$1 " && return 0
        usleep 50000
        _n=$((_n + 1))
    done
    return 1
}

# 1. every device has an active port
check_devinfo() {
    ibv_devinfo >"$RAW/ibv_devinfo.txt" 2>&1
    for d in "$RXE_A" "$RXE_B" "$RXE_LO"; do
        if ibv_devinfo -d "$d" 2>&1 | grep -q "PORT_ACTIVE"; then
            pass "devinfo_$d"
        else
            fail "devinfo_$d" "port 1 of $d is not PORT_ACTIVE (see smoke_raw ibv_devinfo.txt)"
        fi
    done
}

# 2. ibv_rc_pingpong rxe0 (server) <-> rxe1 (client), RoCE v2 IPv4-mapped GIDs
check_pingpong() {
    PORT=$((PORT + 1))
    ga=$(/opt/gid_index "$RXE_A") || { fail rc_pingpong "no IPv4 GID on $RXE_A"; return; }
    gb=$(/opt/gid_index "$RXE_B") || { fail rc_pingpong "no IPv4 GID on $RXE_B"; return; }
    timeout 60 ibv_rc_pingpong -d "$RXE_A" -g "$ga" -p "$PORT" -n 200 >"$RAW/pingpong.server.txt" 2>&1 &
    spid=$!
    if ! pt_wait_tcp_listen "$PORT" 30; then
        kill "$spid" 2>/dev/null
        wait "$spid"
        fail rc_pingpong "server never listened on port $PORT"
        return
    fi
    timeout 60 ibv_rc_pingpong -d "$RXE_B" -g "$gb" -p "$PORT" -n 200 "$IP_A" >"$RAW/pingpong.client.txt" 2>&1
    crc=$?
    wait "$spid"
    src=$?
    if [ "$crc" -eq 0 ] && [ "$src" -eq 0 ] && grep -q "iters in" "$RAW/pingpong.client.txt"; then
        pass "rc_pingpong $(grep 'iters in' "$RAW/pingpong.client.txt")"
    else
        fail rc_pingpong "client exit $crc, server exit $src (see smoke_raw pingpong.*.txt)"
    fi
}

# 3./4. ib_write_bw loopback on one device, then between the two veth ends
check_write_bw() { # name server-dev client-dev server-ip
    if l=$(PT_SERVER_DEV=$2 PT_CLIENT_DEV=$3 PT_SERVER_IP=$4 pt_write_bw 65536 500); then
        pass "$1 $l"
    else
        fail "$1" "$l"
    fi
}

# 5. rping (librdmacm) between the veth ends; on rxe2 alone if that fails
rping_pair() { # server-ip client-ip tag
    PORT=$((PORT + 1))
    timeout 60 rping -s -a "$1" -p "$PORT" -C 10 -v >"$RAW/rping_$3.server.txt" 2>&1 &
    spid=$!
    if ! wait_cm_listen "$PORT" 30; then
        kill "$spid" 2>/dev/null
        wait "$spid"
        echo "rping server never listened on $1:$PORT" >>"$RAW/rping_$3.client.txt"
        return 1
    fi
    timeout 60 rping -c -a "$1" -I "$2" -p "$PORT" -C 10 -v >"$RAW/rping_$3.client.txt" 2>&1
    crc=$?
    wait "$spid"
    src=$?
    [ "$crc" -eq 0 ] && [ "$src" -eq 0 ] && [ "$(grep -c 'ping data' "$RAW/rping_$3.client.txt")" -eq 10 ]
}
check_rping() {
    if rping_pair "$IP_A" "$IP_B" veth; then
        pass "rping $IP_B -> $IP_A (rxe1 -> rxe0)"
    elif rping_pair "$IP_LO" "$IP_LO" lo; then
        pass "rping on $RXE_LO only (rping across the veth pair failed: see smoke_raw rping_veth.*.txt)"
    else
        fail rping "failed across the veth pair and on $RXE_LO (see smoke_raw rping_*.txt)"
    fi
}

check_devinfo
check_pingpong
check_write_bw write_bw_loopback "$RXE_LO" "$RXE_LO" "$IP_LO"
check_write_bw write_bw_pair "$RXE_A" "$RXE_B" "$IP_A"
check_rping

echo "smoke: $FAILED check(s) failed" | tee -a "$RES"
/opt/export "$RES"
tar -czf /tmp/smoke_raw.tar.gz -C /tmp smoke && /opt/export /tmp/smoke_raw.tar.gz
[ "$FAILED" -eq 0 ]
