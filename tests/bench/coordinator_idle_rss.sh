#!/usr/bin/env bash
# The idle coordinator's memory with N workers registered (issue #19: what 1,024 connections
# hold, plaintext or mutual TLS): a coordinator and N simulated workers in one process
# (`gdrmesh worker --simulate N`) on loopback; once all are online and 8 s have passed, prints
# the coordinator's RSS, high-water mark and threads. Extra arguments are environment
# assignments for the coordinator alone (MALLOC_ARENA_MAX=2, ...), so one binary can be compared
# with itself.
#   tests/bench/coordinator_idle_rss.sh [BINARY] [N=1024] [TLS=1] [VAR=VALUE ...]
set -euo pipefail
bin="${1:-build/cli/gdrmesh}"
n="${2:-1024}"
tls="${3:-1}"
shift $(($# < 3 ? $# : 3))
dir="$(mktemp -d /tmp/gdrmesh-idle-XXXXXX)"
sim=""
coord=""
trap 'kill $sim $coord 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$dir"' EXIT
# shellcheck source=lib_tls.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_tls.sh"
bench_tls "$tls" "$bin" "$dir"
env "$@" "$bin" coordinator --listen 127.0.0.1:0 --db "$dir/r.db" --port-file "$dir/port" \
  "${coord_tls[@]}" >"$dir/coord.log" 2>&1 &
coord=$!
for _ in $(seq 200); do [[ -s "$dir/port" ]] && break; sleep 0.05; done
[[ -s "$dir/port" ]] || { cat "$dir/coord.log"; exit 1; }
GDRMESH_COORDINATOR="127.0.0.1:$(cat "$dir/port")"
export GDRMESH_COORDINATOR
"$bin" worker --simulate "$n" --coordinator "$GDRMESH_COORDINATOR" "${sim_tls[@]}" \
  >"$dir/sim.log" 2>&1 &
sim=$!
online() { "$bin" workers -o json | grep -c '"state": "online"' || true; }
while [[ $(online) -lt $n ]]; do sleep 0.5; done
sleep 8
field() { awk -v k="$1:" '$1 == k {print $2}' "/proc/$coord/status"; }
echo "idle coordinator, $n workers, $([[ $tls == 1 ]] && echo "mutual TLS" || echo plaintext)${*:+, $*}:" \
  "RSS $(($(field VmRSS) / 1024)) MiB, high-water $(($(field VmHWM) / 1024)) MiB, $(field Threads) threads"
