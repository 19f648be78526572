#!/usr/bin/env bash
# The README's main command: install dependencies, build, and run the local sweep.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/deploy/install-deps.sh"
"$root/deploy/build.sh"
exec "$root/deploy/local-sweep.sh" "$@"
