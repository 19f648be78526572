#!/bin/sh
# Guest script (tests/softroce/vm.sh): gdrmesh itself over real verbs on Soft-RoCE. A
# coordinator and two workers run as separate processes inside the VM; the CLI runs pair tests
# between rxe1 (veth1) and rxe0 (veth0), a loopback test on rxe2, and the failure cases. Each
# test's JSON, the results table and the SQLite file are exported for the host-side checks
# (check_e2e.py).
set -u
# shellcheck source=/dev/null
. /opt/share/lib_cluster.sh
G=gdrmesh
cd /tmp || exit 1
cluster_start_coordinator --heartbeat-ms 200
cluster_start_worker a "" --allow-fault-injection
# Worker b binds the thread of each of its verbs runs to CPU 1 (--cpu; rxe has no NUMA node,
# so worker a's runs are not bound): checked below while a run is on, and in every result.
cluster_start_worker b "" --allow-fault-injection --cpu 1
worker_b=$!
cluster_wait_online 2
$G workers
$G workers -o json >/tmp/workers.json

: >/tmp/cases.txt
# case NAME EXPECTED_STATUS ARGS...: runs one pair test, records its exit code and JSON.
case_() {
  name=$1
  shift
  $G test "$@" -o json >"/tmp/case-$name.json" 2>"/tmp/case-$name.err"
  rc=$?
  echo "$name rc=$rc" >>/tmp/cases.txt
  echo "E2E $name rc=$rc $(grep -o '"status": "[A-Z]*"' "/tmp/case-$name.json" | head -1)"
}

V="--transport=verbs"
case_ write_bw a/rxe1 b/rxe0 "$V" --op write --size 64KiB --iters 300
case_ read_bw a/rxe1 b/rxe0 "$V" --op read --size 64KiB --iters 300
case_ send_bw a/rxe1 b/rxe0 "$V" --op send --size 64KiB --iters 300
case_ write_imm_bw a/rxe1 b/rxe0 "$V" --op write_imm --size 64KiB --iters 300
case_ write_bw_1m a/rxe1 b/rxe0 "$V" --op write --size 1MiB --iters 40
case_ write_bw_qp4 a/rxe1 b/rxe0 "$V" --op write --size 64KiB --iters 100 --qps 4
case_ write_lat a/rxe1 b/rxe0 "$V" --op write --mode lat --size 2 --iters 500
case_ send_lat a/rxe1 b/rxe0 "$V" --op send --mode lat --size 2 --iters 500
case_ read_lat a/rxe1 b/rxe0 "$V" --op read --mode lat --size 2 --iters 500
case_ loopback_write a/rxe2 b/rxe2 "$V" --op write --size 64KiB --iters 300
case_ loopback_read a/rxe2 b/rxe2 "$V" --op read --size 64KiB --iters 300
# The binding itself: while the run is on, one thread of worker b may run on CPU 1 only; once
# it is over, none is left bound (pool threads get their mask back).
$G test a/rxe1 b/rxe0 "$V" --op send --size 64KiB --duration 4s -o json >/tmp/case-bound.json \
  2>/tmp/case-bound.err &
bound_test=$!
seen=none
while kill -0 "$bound_test" 2>/dev/null && [ "$seen" = none ]; do
  for s in /proc/"$worker_b"/task/*/status; do
    grep -q "^Cpus_allowed_list:[[:space:]]*1$" "$s" 2>/dev/null && seen=$(basename "$(dirname "$s")")
  done
  usleep 20000
done
wait "$bound_test"
echo "bound rc=$?" >>/tmp/cases.txt
after=$(grep -l "^Cpus_allowed_list:[[:space:]]*1$" /proc/"$worker_b"/task/*/status 2>/dev/null | wc -l)
echo "thread=$seen after=$after" >/tmp/bound.txt
echo "E2E bound $(cat /tmp/bound.txt)"
# Failure cases: each must end as a stored FAILED/SKIPPED result with a reason, never a hang.
case_ corrupt a/rxe1 b/rxe0 "$V" --op write --size 64KiB --iters 50 --inject-corrupt-bytes 3
case_ wrong_gid a/rxe1 b/rxe0 "$V" --op write --size 4KiB --iters 20 --gid-index 5 --timeout 20
case_ rkey_invalidated a/rxe1 b/rxe0 "$V" --op write --size 64KiB --iters 100 \
  --inject-invalidate-rkey --timeout 30
/usr/bin/ip link set veth0 down
case_ port_down a/rxe1 b/rxe0 "$V" --op write --size 64KiB --iters 100 --timeout 20
/usr/bin/ip link set veth0 up
/usr/bin/ip route replace 10.77.0.1 dev veth1 src 10.77.0.2 table 100
/usr/bin/ip route replace 10.77.0.2 dev veth0 src 10.77.0.1 table 100
case_ cuda_auto_no_gpu a/rxe1 b/rxe0 "$V" --memory cuda --reg auto --size 64KiB --iters 10
case_ after_faults a/rxe1 b/rxe0 "$V" --op write --size 64KiB --iters 100

$G results --limit 100
$G results --limit 100 -o json >/tmp/results.json
# A clean stop checkpoints the WAL into results.db before it is exported.
# shellcheck disable=SC2154 # set by cluster_start_coordinator
kill "$coordinator"
wait "$coordinator"
for f in /tmp/case-*.json /tmp/case-*.err /tmp/cases.txt /tmp/bound.txt /tmp/results.json /tmp/workers.json \
  /tmp/results.db /tmp/coordinator.log /tmp/worker-a.log /tmp/worker-b.log; do
  [ -f "$f" ] && /opt/export "$f"
done
exit 0
