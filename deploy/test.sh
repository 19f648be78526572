#!/usr/bin/env bash
# The test command (README, .ci/run): installs dependencies, builds, checks formatting, runs
# clang-tidy, and runs every test suite with ctest. Suites that cannot run on this machine (no
# GPU, no browser, no qemu) skip with their reason, visibly.
#   deploy/test.sh [ctest args...]      e.g. deploy/test.sh -L unit
#                                        (-L docs: docs/reference.md matches the built program)
#   GDRMESH_UNIT_TESTS=OFF               leave out the unit and integration test programs (CI's
#                                        main leg: its sanitizer legs build and run those)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/deploy/install-deps.sh"
# Every test program (the quick start's build in the same folder leaves them out).
"$root/deploy/build.sh" -DGDRMESH_BUILD_TESTS=ON -DGDRMESH_UNIT_TESTS="${GDRMESH_UNIT_TESTS:-ON}"
"$root/deploy/check-format.sh"
# clang-tidy over our sources with the build's compile commands (.clang-tidy has the checks).
"$root/deploy/check-tidy.sh"
build="${GDRMESH_BUILD_DIR:-$root/build}"
cd "$build"
ctest --output-on-failure -j 2 "$@"
