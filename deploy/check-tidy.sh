#!/usr/bin/env bash
# Runs clang-tidy (Debian's clang-tidy 14; the checks are in .clang-tidy at the root, each
# disable explained there) over every production C++ source of ours in the build's
# compile_commands.json (test sources not yet: not_yet below says why), in parallel, and fails
# on any finding. Generated code (the build folder: protobuf, embedded web assets) and
# third-party headers are not checked; headers are checked once per including source, limited
# to our folders (the header filter below).
#   deploy/check-tidy.sh                  every production source (after deploy/build.sh)
#   deploy/check-tidy.sh cli/output.cc    just these sources
#   GDRMESH_BUILD_DIR=<dir>               the build whose compile_commands.json to use
#   GDRMESH_TIDY_JOBS=<n>                 parallel clang-tidy processes (default: nproc)
#   GDRMESH_TIDY_LOG=<file>               keep clang-tidy's whole output there
#   GDRMESH_TIDY_CACHE=<dir>              where clean results are remembered ("" = never)
#   GDRMESH_TIDY_LIST=1                   print the sources it would check, and stop
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${GDRMESH_BUILD_DIR:-$root/build}"
jobs="${GDRMESH_TIDY_JOBS:-$(nproc)}"
tidy="${CLANG_TIDY:-clang-tidy}"
db="$build/compile_commands.json"
if [[ ! -f "$db" ]]; then
  echo "check-tidy: $db not found; run deploy/build.sh first (it exports compile commands)" >&2
  exit 1
fi
# Sources left out of the run, as extended regular expressions on the path from the root.
# None today: every production source (cli, common, coordinator, proto/convert.cc, security,
# web, worker with its transports) is checked. A line here needs a TODO with its reason.
excluded=()
exclude_re="$(IFS='|'; echo "${excluded[*]}")"
exclude_re="${exclude_re:-^$}"  # an empty pattern would match every path
# Sources not found clean, left out of the default run (naming a file checks it anyway).
# Test sources (84) are not checked, for the cost: beside the 92 production sources they would
# about double a cold run (~30 s of CPU a source on the shared 2-core machine, h-tidy2; ~40 min
# more at one job), and their findings do not reach the binaries we ship. TODO: check them
# folder by folder (run `deploy/check-tidy.sh <files>`, fix what it finds, narrow the line).
# The list only shrinks.
not_yet=(
  '^tests/'  # every test source
)
not_yet_re="$(IFS='|'; echo "${not_yet[*]}")"
# Headers: ours, outside the excluded folders (clang-tidy 14's filter has no negation, so the
# folders are listed): each top folder, or for worker/ and tests/ each folder below it, and
# proto/convert.h (the rest of proto/ is generated).
dirs=('proto/convert\.h')
for d in cli common coordinator security web worker/* tests/*/* tests/support; do
  [[ -d "$root/$d" ]] || continue
  [[ "$d/" =~ $exclude_re ]] && continue
  dirs+=("$d/")
done
header_filter="^$root/($(IFS='|'; echo "${dirs[*]}"))"
if (( $# )); then
  files=("$@")
else
  mapfile -t files < <(python3 - "$db" "$root" <<'PY'
import json, sys
db, root = sys.argv[1], sys.argv[2].rstrip('/') + '/'
seen = set()
for entry in json.load(open(db)):
    f = entry['file']
    if f.startswith(root) and not f.startswith(root + 'build') and f not in seen:
        seen.add(f)
        print(f[len(root):])
PY
  )
  mapfile -t files < <(printf '%s\n' "${files[@]}" | grep -Ev "$exclude_re" |
    grep -Ev "${not_yet_re:-^$}" | grep -E '\.(cc|cpp)$')
fi
if [[ -n "${GDRMESH_TIDY_LIST:-}" ]]; then
  printf '%s\n' "${files[@]}"
  exit 0
fi
if [[ -n "${GDRMESH_TIDY_LOG:-}" ]]; then
  log="$GDRMESH_TIDY_LOG"
else
  log="$(mktemp)"
  trap 'rm -f "$log"' EXIT
fi
# A source found clean is not checked again while nothing it could depend on has changed: the
# key is a hash of clang-tidy's version, .clang-tidy, the header filter, the source's compile
# command and text, and every header of ours (any header change re-checks everything). The
# cache is a folder of empty files named by key (GDRMESH_TIDY_CACHE; "" turns it off).
cache="${GDRMESH_TIDY_CACHE-${XDG_CACHE_HOME:-$HOME/.cache}/gdrmesh-tidy}"
[[ -n "$cache" ]] && mkdir -p "$cache"
t0=$SECONDS
mapfile -t jobs_list < <(cd "$root" && python3 - "$db" "$root" "$cache" "$header_filter" \
  "$("$tidy" --version)" "${files[@]}" <<'PY'
import hashlib, json, os, subprocess, sys
db, root, cache, header_filter, version = sys.argv[1:6]
files = sys.argv[6:]
commands = {}
for entry in json.load(open(db)):
    commands.setdefault(os.path.relpath(entry['file'], root), entry.get('command') or
                        ' '.join(entry.get('arguments', [])))
headers = hashlib.sha256()
tracked = subprocess.run(['git', 'ls-files', '*.h', '.clang-tidy'], capture_output=True,
                         text=True, check=True).stdout.split()
for h in sorted(tracked):
    if os.path.exists(h):
        headers.update(h.encode() + b'\0' + open(h, 'rb').read())
for f in files:
    k = hashlib.sha256()
    for part in (version, header_filter, commands.get(f, ''), headers.hexdigest()):
        k.update(part.encode() + b'\0')
    k.update(open(f, 'rb').read())
    key = k.hexdigest()
    if cache and os.path.exists(os.path.join(cache, key)):
        continue
    print(f + ' ' + (key if cache else '-'))
PY
)
skipped=$((${#files[@]} - ${#jobs_list[@]}))
# One clang-tidy per source; each prints its findings and exits non-zero on any (the config's
# WarningsAsErrors); a clean one records its key. xargs exits 123 when any failed.
status=0
if (( ${#jobs_list[@]} )); then
  printf '%s\n' "${jobs_list[@]}" |
    (cd "$root" && xargs -P "$jobs" -L 1 bash -c \
      '"$0" -p "$1" --quiet --header-filter="$2" "$4" && { [[ "$5" == - ]] || : >"$3/$5"; }' \
      "$tidy" "$build" "$header_filter" "$cache") >"$log" 2>&1 || status=$?
fi
# A header's finding is printed once per source that includes it: count each once.
findings="$(grep -E '^[^ ].*:[0-9]+:[0-9]+: (warning|error):' "$log" | sort -u || true)"
count=0
[[ -n "$findings" ]] && count="$(wc -l <<<"$findings")"
if (( status != 0 || count != 0 )); then
  grep -Ev '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$|^Suppressed [0-9]+ warnings|^Use -header-filter|^Error while processing' "$log" >&2 || true
  echo "check-tidy: $count finding(s) in ${#jobs_list[@]} sources checked, $skipped unchanged since clean ($((SECONDS - t0)) s)" >&2
  exit 1
fi
echo "check-tidy: ${#files[@]} sources clean (${#jobs_list[@]} checked, $skipped unchanged since a clean run; $((SECONDS - t0)) s, $jobs jobs)"
