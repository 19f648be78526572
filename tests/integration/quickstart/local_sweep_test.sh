#!/usr/bin/env bash
# deploy/local-sweep.sh end to end (see CMakeLists.txt): a small config on two local workers,
# once plain and once with --keep.
#   local_sweep_test.sh GDRMESH_BINARY SOURCE_DIR
set -euo pipefail
bin=$1
src=$2
dir=$(mktemp -d /tmp/gdrmesh-quickstart-test.XXXXXX)
kept=""
cleanup() {
  # Only the processes the --keep run printed, by id.
  for p in $kept; do kill "$p" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  for f in "$dir"/*.txt; do
    [[ -f $f ]] && { echo "--- $f" >&2; cat "$f" >&2; }
  done
  exit 1
}
cd "$dir"
cat >small.yaml <<'YAML'
sweeps:
  - pattern: all-pairs
    op: write
    sizes: [4KiB, 64KiB]
    iters: 50
  - pattern: all-pairs
    mode: lat
    size: 2
    iters: 100
thresholds:
  bandwidth_gbps_min: 0.001
YAML

GDRMESH_BIN=$bin "$src/deploy/local-sweep.sh" --config small.yaml --workers 2 >plain.txt 2>&1 ||
  fail "local-sweep.sh exited $?"
line=$(grep "^figures of sweep s-" plain.txt) || fail "no figures line"
[[ $line =~ :\ ([0-9]+)\ results,\ ([0-9]+)\ passed ]] || fail "figures line: $line"
((BASH_REMATCH[1] >= 3 && BASH_REMATCH[1] == BASH_REMATCH[2])) || fail "not all passed: $line"
# One row per operation, mode and size: results, passed, min / median / max.
row="+([0-9]+) +\\1 +[0-9.]+"
grep -Eq "^  write +bw +4 KiB $row Gb/s +[0-9.]+ Gb/s +[0-9.]+ Gb/s$" plain.txt ||
  fail "no 4 KiB write bandwidth row"
grep -Eq "^  write +bw +64 KiB $row Gb/s " plain.txt || fail "no 64 KiB row"
grep -Eq "^  write +lat +2 B $row us +[0-9.]+ us +[0-9.]+ us$" plain.txt || fail "no latency row"
for f in gdrmesh-local.db gdrmesh-local-junit.xml gdrmesh-local-report.json \
  gdrmesh-local-report.html; do
  [[ -s $dir/$f ]] || fail "$f not written"
  grep -q "^  $dir/$f " plain.txt || fail "$f not named in the output"
done
grep -qi "<html" gdrmesh-local-report.html || fail "the HTML report is not HTML"
grep -q "^to look again:" plain.txt || fail "no 'to look again'"
grep -q "^  open $dir/gdrmesh-local-report.html$" plain.txt || fail "no way to open the report"
grep -q "status page: http://127.0.0.1:[0-9]*/ (live while the sweep runs)" plain.txt ||
  fail "the status page's address is not printed"

# --keep: the coordinator, its page and the workers outlive the script.
GDRMESH_BIN=$bin "$src/deploy/local-sweep.sh" --config small.yaml --workers 2 --keep \
  >keep.txt 2>&1 || fail "local-sweep.sh --keep exited $?"
kept=$(sed -n 's/^  stop: kill //p' keep.txt)
[[ -n $kept ]] || fail "--keep printed no way to stop"
page=$(sed -n 's|^  status page: \(http://[^ ]*\)$|\1|p' keep.txt)
[[ $page =~ ^http://127\.0\.0\.1:([0-9]+)/$ ]] || fail "--keep printed no page address"
port=${BASH_REMATCH[1]}
exec 3<>"/dev/tcp/127.0.0.1/$port" || fail "the status page at $page does not answer"
printf 'GET /api/sweeps HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
reply=$(cat <&3)
exec 3<&-
[[ $reply == "HTTP/1.1 200"* ]] || fail "status page: ${reply:0:200}"
sweep=$(sed -n 's/^figures of sweep \(s-[^:]*\):.*/\1/p' keep.txt)
[[ $reply == *"$sweep"* ]] || fail "the page does not list sweep $sweep"
# The printed CLI environment reaches the kept coordinator.
env_line=$(sed -n 's/^  CLI:  export //p' keep.txt)
[[ -n $env_line ]] || fail "--keep printed no CLI environment"
# shellcheck disable=SC2086
env $env_line "$bin" sweep show "$sweep" >show.txt 2>&1 || fail "sweep show through the kept coordinator"
grep -q "$sweep" show.txt || fail "sweep show did not show $sweep"
echo "PASS: figures, HTML report, look-again and --keep"
