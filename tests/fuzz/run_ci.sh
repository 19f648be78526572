#!/usr/bin/env bash
# CI leg for the libFuzzer harnesses (tests/fuzz/): configures a clang build dir with
# GDRMESH_FUZZ=ON, builds only the fuzz targets, runs `ctest -L fuzz` (each harness fuzzes a
# copy of its seed corpus for GDRMESH_FUZZ_SECONDS, default 10; JOBS harnesses at a time, each
# harness one process) and prints each harness's executions. Exit status: non-zero when a
# build fails or a harness finds a crash; the crash input is kept under
# BUILD_DIR/fuzz-runs/<name>/artifacts/.
#
#   tests/fuzz/run_ci.sh                      build dir build-fuzz, 10 s per harness, 2 at a time
#   BUILD_DIR=/tmp/bf FUZZ_SECONDS=60 JOBS=8 tests/fuzz/run_ci.sh
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${BUILD_DIR:-$root/build-fuzz}
seconds=${FUZZ_SECONDS:-10}
jobs=${JOBS:-2}

for tool in clang clang++ cmake ninja; do
  command -v "$tool" >/dev/null || {
    echo "run_ci: $tool not found (deploy/install-deps.sh installs it)" >&2
    exit 2
  }
done
launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR=$root
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi

CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DGDRMESH_FUZZ=ON \
  -DGDRMESH_FUZZ_SECONDS="$seconds" -DGDRMESH_CUDA_KERNELS=OFF "${launcher[@]}" >/dev/null

mapfile -t harnesses < <(find "$root/tests/fuzz" -mindepth 2 -maxdepth 2 -name CMakeLists.txt \
  -printf '%h\n' | xargs -n1 basename | sort)
targets=()
for h in "${harnesses[@]}"; do targets+=("fuzz_$h"); done
echo "run_ci: building ${targets[*]}"
ninja -C "$build" -j"$jobs" "${targets[@]}"

rc=0
ctest --test-dir "$build" -L fuzz -j "$jobs" --output-on-failure || rc=$?

echo "run_ci: executions per harness (${seconds} s each)"
for h in "${harnesses[@]}"; do
  log=$build/fuzz-runs/$h/log
  result=$(grep -h '^Done [0-9]* runs' "$log" 2>/dev/null || true)
  crashes=$(ls "$build/fuzz-runs/$h/artifacts" 2>/dev/null || true)
  if [[ -n "$crashes" ]]; then
    result="CRASH: $(echo "$crashes" | tr '\n' ' ')(in $build/fuzz-runs/$h/artifacts)"
  fi
  printf '  %-12s %s\n' "$h" "${result:-no result (see $log)}"
done
exit "$rc"
