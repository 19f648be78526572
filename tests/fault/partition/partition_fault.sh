#!/usr/bin/env bash
# Partition a worker in its own network namespace mid-test (veth down), then heal it.
#   partition_fault.sh GDRMESH_BINARY
# The coordinator and worker a run in this namespace; worker b in namespace gdrpart-PID, reached
# over a veth pair (10.231.0.1 here, 10.231.0.2 there); the emulated transport carries the
# test's data over the same link. While a 20 s test a -> b runs, the host end of the veth goes
# down: no FIN, no RST, packets simply vanish (a cable pulled, a switch port dead). Checked:
#   - the coordinator declares b lost by its missed heartbeats and the test ends within a few
#     seconds of that as a stored FAILED/ERROR row naming b, not at its 20 s end or later;
#   - the coordinator keeps serving and a's resources are released (a tests with itself);
#   - once the link is back, b registers again on its own (backoff) and a -> b passes.
set -euo pipefail
bin="$1"
if [[ $(id -u) -ne 0 ]] || ! command -v ip >/dev/null; then
  echo "SKIP: needs root and iproute2 for a network namespace"
  exit 77
fi
ns="gdrpart-$$"
host_if="gdrph$$"
ns_if="gdrpn$$"
dir="$(mktemp -d /tmp/gdrmesh-partition-XXXXXX)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  ip link del "$host_if" 2>/dev/null || true
  ip netns del "$ns" 2>/dev/null || true
  [[ -n "${KEEP:-}" ]] || rm -rf "$dir"
}
trap cleanup EXIT
if ! ip netns add "$ns" 2>"$dir/ns.err"; then
  echo "SKIP: cannot create a network namespace: $(cat "$dir/ns.err")"
  exit 77
fi
ip link add "$host_if" type veth peer name "$ns_if" netns "$ns"
ip addr add 10.231.0.1/30 dev "$host_if"
ip link set "$host_if" up
ip -n "$ns" addr add 10.231.0.2/30 dev "$ns_if"
ip -n "$ns" link set "$ns_if" up
ip -n "$ns" link set lo up

fail() {
  echo "FAIL: $*"
  echo "--- coordinator"; tail -30 "$dir/coord.log"
  echo "--- worker b"; tail -20 "$dir/b.log"
  exit 1
}
now_ms() { date +%s%3N; }

# Plaintext, asked for explicitly: the veth address is not loopback, hence the second flag.
"$bin" coordinator --listen 10.231.0.1:0 --db "$dir/r.db" --port-file "$dir/port" \
  --heartbeat-ms 200 --insecure --insecure-allow-remote >"$dir/coord.log" 2>&1 &
pids+=($!)
coord=$!
for _ in $(seq 100); do [[ -s "$dir/port" ]] && break; sleep 0.1; done
[[ -s "$dir/port" ]] || fail "the coordinator did not start"
addr="10.231.0.1:$(cat "$dir/port")"
export GDRMESH_COORDINATOR="$addr" GDRMESH_INSECURE=1
"$bin" worker --coordinator "$addr" --name a --data-host 10.231.0.1 --no-verbs --no-cuda \
  --insecure >"$dir/a.log" 2>&1 &
pids+=($!)
ip netns exec "$ns" "$bin" worker --coordinator "$addr" --name b --data-host 10.231.0.2 \
  --no-verbs --no-cuda --insecure >"$dir/b.log" 2>&1 &
pids+=($!)

state_of() {  # NAME -> online | offline | ""
  "$bin" workers -o json | /usr/bin/python3 -c '
import json, sys
for w in json.load(sys.stdin):
    if w["name"] == sys.argv[1]: print(w["state"])' "$1"
}
wait_state() {  # NAME STATE SECONDS
  local deadline=$(( $(date +%s) + $3 ))
  while (( $(date +%s) < deadline )); do
    [[ "$(state_of "$1")" == "$2" ]] && return 0
    sleep 0.1
  done
  return 1
}
wait_state a online 20 || fail "a did not register"
wait_state b online 20 || fail "b did not register"
"$bin" test a b --size 64KiB --iters 20 >"$dir/t0.txt" 2>&1 || fail "a -> b failed on a healthy link: $(cat "$dir/t0.txt")"

# A 20 s test; cut the link once the coordinator counts it active on the workers (whichever
# phase it is in then, the partition must end it the same way).
"$bin" test a b --size 64KiB --duration 20 --timeout 60 -o json >"$dir/t1.json" 2>"$dir/t1.err" &
test_pid=$!
for _ in $(seq 100); do
  grep -q "active_tests\": 1" <("$bin" workers -o json) && break
  sleep 0.1
done
t_cut=$(now_ms)
ip link set "$host_if" down
wait_state b offline 20 || fail "b not declared lost within 20 s of the partition"
t_lost=$(now_ms)
rc=0
wait "$test_pid" || rc=$?
t_end=$(now_ms)
echo "partition: b declared lost $(( t_lost - t_cut )) ms after the cut; the test ended $(( t_end - t_cut )) ms after it (exit $rc)"
(( rc != 0 )) || fail "the test across the partition exited 0: $(cat "$dir/t1.json")"
(( t_end - t_lost < 8000 )) || fail "the test ended $(( t_end - t_lost )) ms after b was declared lost"
/usr/bin/python3 - "$dir/t1.json" <<'PY' || fail "the result does not say what happened"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["status"] in ("FAILED", "ERROR"), j["status"]
assert "worker lost: b" in j["reason"], j["reason"]
print("partition: stored", j["status"], "-", j["reason"][:160])
PY

# The coordinator serves on, and a was released.
"$bin" test a a --size 64KiB --iters 20 >"$dir/t2.txt" 2>&1 || fail "a cannot test after the partition: $(cat "$dir/t2.txt")"
kill -0 "$coord" || fail "the coordinator died"

# Heal: b comes back by itself and a -> b passes again.
ip link set "$host_if" up
t_heal=$(now_ms)
wait_state b online 30 || fail "b did not come back within 30 s of the link"
echo "partition: b online again $(( $(now_ms) - t_heal )) ms after the link came back"
"$bin" test a b --size 64KiB --iters 20 >"$dir/t3.txt" 2>&1 || fail "a -> b after healing: $(cat "$dir/t3.txt")"
echo "partition: PASS"
