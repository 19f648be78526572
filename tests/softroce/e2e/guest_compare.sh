#!/bin/sh
# Guest script (tests/softroce/vm.sh): perftest against gdrmesh itself (coordinator + two
# workers + CLI, QP information exchanged over gRPC) on the same rxe devices, in one boot,
# alternating case by case and round by round. The host turns the lines into a table
# (compare_table.py). Knobs: ROUNDS, CASES, GD_EXTRA (extra `gdrmesh test` flags), PT_EXTRA.
set -u
# shellcheck source=/dev/null
. /opt/share/lib_perftest.sh
ROUNDS="${ROUNDS:-3}"
# shellcheck source=/dev/null
. /opt/share/lib_cluster.sh
G=gdrmesh
cd /tmp || exit 1
cluster_start_coordinator
# Same devices and direction as lib_perftest.sh: the client (initiator) on rxe1, the server
# (target) on rxe0. Both tools get the same placement: initiator on CPU 1, target on CPU 0, at
# nice 19 so that rxe's softirq work is not starved by the busy pollers (2 vCPUs under TCG).
NICE_BIN=$(command -v nice || true)
pfx() { [ -n "$NICE_BIN" ] && printf '%s -n 19 ' "$NICE_BIN"; printf 'taskset -c %s' "$1"; }
PT_SERVER_PREFIX=$(pfx 0)
PT_CLIENT_PREFIX=$(pfx 1)
export PT_SERVER_PREFIX PT_CLIENT_PREFIX
cluster_start_worker a "$PT_CLIENT_PREFIX"
cluster_start_worker b "$PT_SERVER_PREFIX"
# An older build (run_compare.sh BEFORE_BIN=...): its own two workers, c and d, placed alike,
# run right after a/b in every case and round; only the data path's process differs.
BEFORE=0
if command -v gdrmesh_before >/dev/null 2>&1; then
  BEFORE=1
  CLUSTER_BIN=gdrmesh_before cluster_start_worker c "$PT_CLIENT_PREFIX"
  CLUSTER_BIN=gdrmesh_before cluster_start_worker d "$PT_SERVER_PREFIX"
fi
cluster_wait_online $((2 + 2 * BEFORE))

: >/tmp/compare.txt
gd() {  # gd CASE SIZE ITERS ROUND ARGS...
  c=$1 size=$2 iters=$3 round=$4
  shift 4
  for pair in "gdrmesh a b" "gdrmesh_before c d"; do
    # shellcheck disable=SC2086
    set -- $pair "$@"
    tool=$1 ini=$2 tgt=$3
    shift 3
    if [ "$tool" = gdrmesh ] || [ "$BEFORE" = 1 ]; then
      # shellcheck disable=SC2086
      $G test "$ini/$RXE_B" "$tgt/$RXE_A" --transport verbs --size "$size" --iters "$iters" "$@" \
        ${GD_EXTRA:-} -o json >/tmp/gd.json 2>/tmp/gd.err
      id=$(grep -o '"test_id": "[^"]*"' /tmp/gd.json | head -1 | cut -d'"' -f4)
      echo "$tool case=$c size=$size iters=$iters round=$round test_id=$id" >>/tmp/compare.txt
    fi
  done
}
pt() {  # pt CASE SIZE ITERS ROUND
  line=$("pt_$1" "$2" "$3")
  echo "$line round=$4" >>/tmp/compare.txt
}
r=1
while [ $r -le "$ROUNDS" ]; do
  for spec in "write_bw 65536 1000" "write_bw 1048576 100" "read_bw 65536 1000" \
              "read_bw 1048576 100" "send_bw 65536 1000" "send_bw 1048576 100" \
              "write_lat 2 1000" "send_lat 2 1000"; do
    # shellcheck disable=SC2086
    set -- $spec
    c=$1 size=$2 iters=$3
    # CASES: only these (e.g. "write_lat send_lat"); default every case.
    case " ${CASES:-all} " in
      " all " | *" $c "*) ;;
      *) continue ;;
    esac
    op=${c%_*}
    mode=${c#*_}
    # perftest's parameters on rxe, as its own header prints them: CQ moderation 1, no warm-up,
    # TX depth 128 (100 at 1 MiB), outstanding reads = device maximum (negotiated).
    tx=128
    [ "$size" -ge 1048576 ] && tx=100
    # Alternate who goes first, round by round.
    if [ $((r % 2)) -eq 1 ]; then
      pt "$c" "$size" "$iters" "$r"
      gd "$c" "$size" "$iters" "$r" --op "$op" --mode "$mode" --warmup 0 --cq-mod 1 --tx-depth "$tx"
    else
      gd "$c" "$size" "$iters" "$r" --op "$op" --mode "$mode" --warmup 0 --cq-mod 1 --tx-depth "$tx"
      pt "$c" "$size" "$iters" "$r"
    fi
  done
  r=$((r + 1))
done
$G results --limit 500 -o json >/tmp/results.json
cat /tmp/compare.txt
/opt/export /tmp/compare.txt
/opt/export /tmp/results.json
exit 0
