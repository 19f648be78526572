#!/usr/bin/env bash
# deploy/slurm/gdrmesh-sweep.sbatch's own logic, without Slurm (ctest label `package`): stand-ins
# for `scontrol show hostnames` and `srun` (one local process per "node", SLURMD_NODENAME set,
# --output's %N replaced) run the script as sbatch would, on a job of 3 "nodes" with a
# coordinator of its own (GDRMESH_INSECURE=1, loopback, emulated transport):
#   1. a passing sweep: exit 0; junit.xml, report.json, report.html beside the job output; the
#      sweep covers exactly the job's nodes;
#   2. an impossible threshold: the verdict FAIL is the exit code (1).
# The real Slurm run (slurmctld + slurmd, drain and resume) is tests/slurm's (another suite).
#   tests/package/slurm/run_slurm_script_test.sh GDRMESH_BINARY
set -euo pipefail
gdrmesh="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
script="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../../deploy/slurm" && pwd)/gdrmesh-sweep.sbatch"
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
work="$(mktemp -d /tmp/gdrmesh-slurm.XXXXXX)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin"
# scontrol show hostnames LIST: this stand-in knows "n[1-3]" style lists of one range.
cat >"$work/bin/scontrol" <<'STUB'
#!/usr/bin/env bash
[[ "$1 $2" == "show hostnames" ]] || { echo "scontrol stand-in: only 'show hostnames'" >&2; exit 1; }
if [[ $3 =~ ^([a-z]+)\[([0-9]+)-([0-9]+)\]$ ]]; then
  for ((i = BASH_REMATCH[2]; i <= BASH_REMATCH[3]; i++)); do echo "${BASH_REMATCH[1]}$i"; done
else
  tr ',' '\n' <<<"$3"
fi
STUB
# srun --nodes=N --ntasks-per-node=1 ... --output=PATTERN CMD...: one process per job node.
cat >"$work/bin/srun" <<'STUB'
#!/usr/bin/env bash
output=/dev/null
while [[ $1 == --* ]]; do
  case $1 in --output=*) output=${1#--output=} ;; esac
  shift
done
pids=()
for n in $(scontrol show hostnames "$SLURM_JOB_NODELIST"); do
  SLURMD_NODENAME=$n "$@" >"${output//%N/$n}" 2>&1 &
  pids+=($!)
done
trap 'kill -TERM "${pids[@]}" 2>/dev/null; wait' TERM INT
wait
STUB
chmod +x "$work/bin/scontrol" "$work/bin/srun"

run_job() { # JOB_ID [ENV...]: the script as sbatch runs it, in the job's submit folder
  local id=$1
  shift
  mkdir -p "$work/submit"
  (cd "$work/submit" && env PATH="$work/bin:$PATH" SLURM_JOB_ID="$id" SLURM_JOB_NODELIST="n[1-3]" \
    SLURM_SUBMIT_DIR="$work/submit" GDRMESH="$gdrmesh" GDRMESH_INSECURE=1 \
    GDRMESH_LISTEN_HOST=127.0.0.1 GDRMESH_COORDINATOR_HOST=127.0.0.1 GDRMESH_TRANSPORT=emulated \
    GDRMESH_SIZES=64KiB GDRMESH_ITERS=100 GDRMESH_WAIT=30 "$@" bash "$script") \
    >"$work/job-$id.out" 2>&1
}

rc=0
run_job 101 || rc=$?
cat "$work/job-101.out"
[[ $rc -eq 0 ]] || fail "a passing sweep exited $rc"
out="$work/submit/gdrmesh-101"
for f in junit.xml report.json report.html cluster.yaml worker-n1.log worker-n3.log; do
  [[ -s $out/$f ]] || fail "$f is not beside the job's output ($out)"
done
grep -q "hosts: \[n1,n2,n3\]" "$out/cluster.yaml" || fail "the sweep is not over exactly n1,n2,n3"
# all-pairs over n1..n3: each of the three pairs once, in either direction, and nothing else.
for pair in n1:n2 n1:n3 n2:n3; do
  a=${pair%:*} b=${pair#*:}
  grep -qE "name=\"($a -(&gt;|>) $b|$b -(&gt;|>) $a) " "$out/junit.xml" ||
    fail "junit.xml has no test of $a and $b"
done
[[ $(grep -cE 'name="n[0-9]+ -(&gt;|>) n[0-9]+ ' "$out/junit.xml") -eq 3 ]] ||
  fail "junit.xml has other than 3 pair tests"

cat >"$work/thresholds.yaml" <<'YAML'
thresholds:
  bandwidth_gbps_min: 100000
YAML
rc=0
run_job 102 GDRMESH_THRESHOLDS="$work/thresholds.yaml" || rc=$?
tail -5 "$work/job-102.out"
[[ $rc -eq 1 ]] || fail "a failing sweep (impossible threshold) exited $rc, expected 1"
grep -q "<failure" "$work/submit/gdrmesh-102/junit.xml" || fail "junit.xml of the failing sweep has no failure"
echo "slurm script test: passed"
