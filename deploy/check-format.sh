#!/usr/bin/env bash
# Fails when any C++ source in the repository is not clang-formatted (.clang-format at the root).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
mapfile -t files < <(git ls-files '*.h' '*.cc' '*.cu' '*.cpp')
bad=()
for f in "${files[@]}"; do
  [[ -f "$f" ]] || continue
  if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then bad+=("$f"); fi
done
if (( ${#bad[@]} )); then
  echo "check-format: ${#bad[@]} file(s) need clang-format -i:" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files clean"
