#!/usr/bin/env bash
# Configures and builds gdrmesh into ./build (or $GDRMESH_BUILD_DIR); extra arguments go to
# cmake's configure step.
#   CI=true turns warnings into errors.
#   GDRMESH_BUILD_TARGET=<target> builds that target only (default: all), e.g.
#   gdrmesh_unit_integration_tests for the sanitizer legs.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${GDRMESH_BUILD_DIR:-$root/build}"
werror=OFF
[[ "${CI:-}" == "true" ]] && werror=ON
launcher=()
if command -v ccache >/dev/null; then
  # Extra build legs (no GPU kernels, fuzzers) reuse the objects of the main build.
  export CCACHE_BASEDIR="$root"
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
# Configure quietly, but keep the summary of what this build has (fabric discovery, GPU kernels).
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DGDRMESH_WERROR="$werror" "${launcher[@]}" "$@" | { grep -E '^-- gdrmesh' || true; }
cmake --build "$build" -j "$(nproc)" ${GDRMESH_BUILD_TARGET:+--target "$GDRMESH_BUILD_TARGET"}
echo "build: $build/cli/gdrmesh"
