#!/usr/bin/env bash
# Localisation benchmark (issue #22): seeded fault scenarios over simulated workers, each run
# through the real coordinator (a fresh one per scenario, so no scenario sees another's
# workers), scored against the fault it played.
#   bash tests/bench/localise.sh [BINARY=build/cli/gdrmesh] [RUNS_PER_KIND=50] [HOSTS=12]
# GDRMESH_BENCH_KINDS="healthy slow ...": only these kinds. GDRMESH_BENCH_KEEP=1: keep the
# scenario directories (sweep JSON, configs, logs) and print where.
#
# Every scenario: HOSTS simulated workers, +-5 % noise on every test (noise: 0.05), 100 Gb/s,
# an all-pairs sweep at 64 KiB (rails over 4 NICs for the NIC kind), default retests, NO
# threshold except in the threshold kind. Kinds and what counts as right:
#   healthy    no fault                          -> no suspect
#   slow       slow:X:0.4                        -> host X first
#   nic        fail:X/mlx5_K of 4 NICs (rails)   -> nic X/mlx5_K first
#   flap       flap:X:0.7 (after the default retry, ~half its tests fail) -> host X first
#   link       link:X:Y:0.4                      -> the link X<->Y first
#   noisy      glitch:X:Y:0.16 (its first test)  -> no suspect (noise, not a link)
#   two        slow:X:0.4 and slow:Y:0.6         -> both in the top 3
#   threshold  bandwidth_gbps_min: 150           -> the threshold first, no host
# X, Y, K are drawn per scenario from its seed. Prints per kind: runs, top-1 and top-3
# accuracy, false suspects per sweep (suspects that are not the culprit), the share of sweeps
# with no suspect, exit codes, and the mean wall time of a scenario.
set -euo pipefail
bin="${1:-build/cli/gdrmesh}"
runs="${2:-50}"
hosts="${3:-12}"
kinds=(${GDRMESH_BENCH_KINDS:-healthy slow nic flap link noisy two threshold})
command -v python3 >/dev/null || { echo "localise.sh: needs python3 (scores the sweep JSON)" >&2; exit 2; }
[[ -x "$bin" ]] || { echo "localise.sh: no binary at $bin" >&2; exit 2; }
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"
dir="$(mktemp -d /tmp/gdrmesh-localise-XXXXXX)"
coord=""
sim=""
cleanup() {
  [[ -n "$sim" ]] && kill "$sim" 2>/dev/null || true
  [[ -n "$coord" ]] && kill "$coord" 2>/dev/null || true
  wait 2>/dev/null || true
  if [[ "${GDRMESH_BENCH_KEEP:-}" == "1" ]]; then echo "kept: $dir"; else rm -rf "$dir"; fi
}
trap cleanup EXIT
export GDRMESH_INSECURE=1

name() { printf 'b-%04d' "$1"; }  # simulated worker i of prefix "b"

# One scenario: kind, run number. Writes $d/expect, $d/sweep.json, $d/rc, $d/seconds.
scenario() {
  local kind=$1 run=$2
  local d="$dir/$kind-$run"
  mkdir -p "$d"
  local seed=$(( run * 7919 + ${#kind} * 104729 + 17 ))
  RANDOM=$seed
  local x=$(( RANDOM % hosts )) y=$(( RANDOM % (hosts - 1) )) k=$(( RANDOM % 4 ))
  (( y >= x )) && y=$(( y + 1 ))
  local nics=1 pattern=all-pairs faults=() expect="" cfg=()
  case "$kind" in
    healthy) expect="none" ;;
    slow) faults=("slow:$(name $x):0.4"); expect="host $(name $x)" ;;
    nic) nics=4; pattern=rails; faults=("fail:$(name $x)/mlx5_$k"); expect="nic $(name $x)/mlx5_$k" ;;
    flap) faults=("flap:$(name $x):0.7"); expect="host $(name $x)" ;;
    link) faults=("link:$(name $x):$(name $y):0.4"); expect="link $(name $x) $(name $y)" ;;
    noisy) faults=("glitch:$(name $x):$(name $y):0.16"); expect="none" ;;
    two) faults=("slow:$(name $x):0.4" "slow:$(name $y):0.6"); expect="two $(name $x) $(name $y)" ;;
    threshold)
      printf 'thresholds:\n  bandwidth_gbps_min: 150\n' >"$d/cluster.yaml"
      cfg=(--config "$d/cluster.yaml"); expect="threshold bandwidth_gbps_min" ;;
    *) echo "unknown kind $kind" >&2; return 2 ;;
  esac
  echo "$expect" >"$d/expect"
  {
    echo "count: $hosts"
    echo "name_prefix: b"
    echo "nics: $nics"
    echo "test_ms: 1"
    echo "bandwidth_gbps: 100"
    echo "noise: 0.05"
    echo "seed: $seed"
    for f in "${faults[@]}"; do echo "fault: $f"; done
  } >"$d/sim.conf"

  local t0 t1
  t0=$(date +%s.%N)
  "$bin" coordinator --listen 127.0.0.1:0 --db "$d/r.db" --port-file "$d/port" --insecure \
    >"$d/coord.log" 2>&1 &
  coord=$!
  for _ in $(seq 400); do [[ -s "$d/port" ]] && break; sleep 0.025; done
  local addr="127.0.0.1:$(cat "$d/port")"
  "$bin" worker --sim-config "$d/sim.conf" --coordinator "$addr" >"$d/sim.log" 2>&1 &
  sim=$!
  for _ in $(seq 400); do
    [[ $(GDRMESH_COORDINATOR="$addr" "$bin" workers -o json 2>/dev/null | grep -c '"state": "online"' || true) -ge $hosts ]] && break
    sleep 0.05
  done
  local rc=0
  GDRMESH_COORDINATOR="$addr" "$bin" sweep run --pattern "$pattern" --size 64KiB --iters 10 \
    "${cfg[@]}" -o json >"$d/sweep.json" 2>"$d/sweep.err" || rc=$?
  t1=$(date +%s.%N)
  echo "$rc" >"$d/rc"
  awk "BEGIN { print $t1 - $t0 }" >"$d/seconds"
  kill "$sim" "$coord" 2>/dev/null || true
  wait "$sim" "$coord" 2>/dev/null || true
  sim=""
  coord=""
  if [[ "${GDRMESH_BENCH_KEEP:-}" != "1" ]]; then rm -f "$d/r.db" "$d/r.db-wal" "$d/r.db-shm"; fi
}

start=$(date +%s)
for kind in "${kinds[@]}"; do
  for run in $(seq "$runs"); do scenario "$kind" "$run"; done
  echo "kind $kind: $runs scenarios done ($(( $(date +%s) - start )) s so far)" >&2
done

python3 - "$dir" "$runs" "$hosts" "${kinds[@]}" <<'EOF'
import json, os, sys

d, runs, hosts, kinds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]

def right(expect, s):
    """Whether suspect s names the culprit(s) of `expect`."""
    e = expect.split()
    kind, name = s.get("kind", ""), s.get("name", "")
    if e[0] in ("host", "nic", "threshold"):
        return kind == e[0] and name == e[1]
    if e[0] == "link":
        ends = [p.split("/")[0] for p in name.split("<->")]
        return kind == "link" and sorted(ends) == sorted(e[1:])
    if e[0] == "two":
        return kind == "host" and name in e[1:]
    return False

print(f"localisation benchmark: {hosts} simulated hosts, {runs} scenarios per kind, +-5 % noise")
print(f"{'kind':10} {'runs':>4} {'top-1':>7} {'top-3':>7} {'no-suspect':>10} {'false/sweep':>11} "
      f"{'exit 0/1/other':>14} {'s/scenario':>10}")
for kind in kinds:
    n = top1 = top3 = clean = false = 0
    rcs = {"0": 0, "1": 0, "other": 0}
    secs = 0.0
    misses = []
    for run in range(1, runs + 1):
        sd = os.path.join(d, f"{kind}-{run}")
        try:
            expect = open(os.path.join(sd, "expect")).read().strip()
            rc = open(os.path.join(sd, "rc")).read().strip()
            secs += float(open(os.path.join(sd, "seconds")).read())
            report = json.load(open(os.path.join(sd, "sweep.json")))
        except (OSError, ValueError) as e:
            misses.append(f"{kind}-{run}: no report ({e})")
            n += 1
            continue
        n += 1
        rcs[rc if rc in rcs else "other"] += 1
        sus = sorted(report.get("suspects", []), key=lambda s: -s.get("score", 0))
        e = expect.split()
        if not sus:
            clean += 1
        if e[0] == "none":
            ok1 = ok3 = not sus
            false += len(sus)
        elif e[0] == "two":
            ok1 = bool(sus) and right(expect, sus[0])
            ok3 = all(any(s.get("kind") == "host" and s.get("name") == h for s in sus[:3]) for h in e[1:])
            false += sum(1 for s in sus if not right(expect, s))
        else:
            ok1 = bool(sus) and right(expect, sus[0])
            ok3 = any(right(expect, s) for s in sus[:3])
            false += sum(1 for s in sus if not right(expect, s))
        top1 += ok1
        top3 += ok3
        if not ok1:
            got = ", ".join(f"{s.get('kind')} {s.get('name')} {s.get('score', 0):.2f}" for s in sus[:3]) or "no suspect"
            misses.append(f"{kind}-{run}: expected {expect}; got {got}")
    pct = lambda k: f"{100.0 * k / n:.0f} %" if n else "-"
    print(f"{kind:10} {n:>4} {pct(top1):>7} {pct(top3):>7} {pct(clean):>10} "
          f"{(false / n if n else 0):>11.2f} {rcs['0']:>4}/{rcs['1']}/{rcs['other']:<5} "
          f"{(secs / n if n else 0):>10.2f}")
    for m in misses[:5]:
        print(f"    miss {m}")
EOF
echo "total wall time: $(( $(date +%s) - start )) s"
