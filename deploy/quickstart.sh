#!/usr/bin/env bash
# The README's main command: installs what the main job needs, builds the `gdrmesh` program
# (only it: no test programs, so no GoogleTest), and runs the local sweep.
# deploy/test.sh installs the rest and builds everything.
#   deploy/quickstart.sh [--keep] [local-sweep options: deploy/local-sweep.sh]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/deploy/install-deps.sh" --main
GDRMESH_BUILD_TARGET=gdrmesh "$root/deploy/build.sh" -DGDRMESH_BUILD_TESTS=OFF \
  -DGDRMESH_UNIT_TESTS=OFF
exec "$root/deploy/local-sweep.sh" "$@"
