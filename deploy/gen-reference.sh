#!/usr/bin/env bash
# Writes docs/reference.md from the built program (`gdrmesh reference`: every command's --help
# and every cluster config key), or checks that it is current.
#   deploy/gen-reference.sh [BINARY]           write docs/reference.md (default build/cli/gdrmesh)
#   deploy/gen-reference.sh --check [BINARY]   exit 1 with a diff when it differs (ctest
#                                              docs_reference, label docs)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
check=0
if [[ "${1:-}" == "--check" ]]; then
  check=1
  shift
fi
bin="${1:-${GDRMESH_BUILD_DIR:-$root/build}/cli/gdrmesh}"
doc="$root/docs/reference.md"
if [[ ! -x "$bin" ]]; then
  echo "gen-reference: $bin is not a program (fix: build it, ./deploy/build.sh, or name it)" >&2
  exit 2
fi
# A clean environment: no GDRMESH_* variable or locale of the caller's may change the text.
tmp="$(mktemp)"
trap 'rm -f "$tmp"' EXIT
env -i PATH=/usr/bin:/bin LC_ALL=C "$bin" reference >"$tmp"
if [[ $check -eq 1 ]]; then
  if ! diff -u "$doc" "$tmp" --label docs/reference.md --label "gdrmesh reference"; then
    echo "docs/reference.md is stale: the program's options or config keys changed." >&2
    echo "fix: run deploy/gen-reference.sh (after building gdrmesh) and commit docs/reference.md" >&2
    exit 1
  fi
  echo "docs/reference.md is current"
  exit 0
fi
cp "$tmp" "$doc"
echo "wrote $doc"
