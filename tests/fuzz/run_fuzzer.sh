#!/bin/sh
# Runs one libFuzzer harness for a bounded time over a copy of its seed corpus (the ctest
# command of each tests/fuzz harness). Exit status: non-zero when the harness crashed, leaked,
# timed out on an input or ran out of memory.
#
#   run_fuzzer.sh FUZZER SEED_CORPUS_DIR WORK_DIR SECONDS
set -u
if [ $# -ne 4 ]; then
  echo "usage: $0 FUZZER SEED_CORPUS_DIR WORK_DIR SECONDS" >&2
  exit 2
fi
fuzzer=$1 seeds=$2 work=$3 seconds=$4
name=$(basename "$work")

rm -rf "$work"
mkdir -p "$work/corpus" "$work/artifacts"
# The seeds are copied so that inputs libFuzzer adds never land in the source tree.
cp "$seeds"/* "$work/corpus/" || exit 2

rc=0
"$fuzzer" -max_total_time="$seconds" -rss_limit_mb=1024 -timeout=10 -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" "$work/corpus" >"$work/log" 2>&1 || rc=$?

runs=$(sed -n 's/^Done \([0-9]*\) runs in \([0-9]*\) second.*/\1 executions in \2 s/p' "$work/log")
if [ "$rc" -ne 0 ]; then
  echo "fuzz $name: FAILED (exit $rc); crash input(s) in $work/artifacts/:" >&2
  ls "$work/artifacts" >&2
  echo "--- last lines of $work/log" >&2
  tail -n 60 "$work/log" >&2
  echo "reproduce: $fuzzer $work/artifacts/<file>" >&2
  exit 1
fi
echo "fuzz $name: ${runs:-? executions}, corpus $(ls "$work/corpus" | wc -l) inputs"
