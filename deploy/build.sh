#!/usr/bin/env bash
# Configures and builds gdrmesh into ./build (or $GDRMESH_BUILD_DIR).
#   CI=true turns warnings into errors.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${GDRMESH_BUILD_DIR:-$root/build}"
werror=OFF
[[ "${CI:-}" == "true" ]] && werror=ON
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DGDRMESH_WERROR="$werror" "$@" >/dev/null
cmake --build "$build" -j "$(nproc)"
echo "build: $build/cli/gdrmesh"
