#!/usr/bin/env bash
# The Debian package, for real (ctest label `package`; issue #21):
#   1. builds it (CPack, as `cmake --build BUILD --target package`) and checks what it holds;
#   2. lintian: no errors (the overrides it ships are listed in deploy/debian/README.md);
#   3. unpacks a clean Debian 12 root (mmdebstrap --variant=apt, cached as a tarball), installs
#      the package's dependencies, then the package itself (apt, from the .deb);
#   4. starts the coordinator and two workers in that root with the command lines, users,
#      capabilities and limits of the installed units, read from the unit files and their
#      /etc/default files (systemd does not run in a chroot: this script does what it would),
#      in a network namespace of their own (the units' fixed ports cannot collide);
#   5. runs a pair test (emulated transport: no RDMA here) as an admin, and checks it PASSED;
#   6. purges the package and checks that nothing is left but the results database (and the
#      gdrmesh system user that owns it: Debian leaves system users in place).
#   tests/package/run_package_test.sh BUILD_DIR
# Exit 77 (skipped, with the reason) without root, or without mmdebstrap, lintian, unshare,
# setpriv or ip. Downloads are cached in $GDRMESH_PACKAGE_CACHE (default
# /var/cache/gdrmesh-ci): the root's tarball (made again after 14 days), apt's package lists and
# the .debs, so a second run downloads nothing new.
set -euo pipefail

# ---- inside the namespaces (the script calls itself; see below) ----------------------------
if [[ "${1:-}" == --in-ns ]]; then
  phase=$2 root=$3 cache=$4
  mount -t proc proc "$root/proc"
  mount --rbind /dev "$root/dev"
  mount --rbind /sys "$root/sys"
  mount -o remount,bind,ro "$root/sys" 2>/dev/null || true
  if [[ $phase == apt ]]; then
    mkdir -p "$cache/archives/partial" "$cache/lists/partial"
    mount --bind "$cache/archives" "$root/var/cache/apt/archives"
    mount --bind "$cache/lists" "$root/var/lib/apt/lists"
    cp /etc/resolv.conf "$root/etc/resolv.conf"
  else
    ip link set lo up
  fi
  shift 4
  exec "$@"
fi

build="${1:?usage: $0 BUILD_DIR}"
build="$(cd "$build" && pwd)"
skip() {
  echo "SKIPPED: $*"
  exit 77
}
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
step() { echo "--- package: $* ($((SECONDS - t0)) s)"; }
t0=$SECONDS

[[ $(id -u) -eq 0 ]] || skip "needs root: a chroot with mounts and a network namespace"
for tool in mmdebstrap lintian unshare setpriv ip dpkg-deb; do
  command -v "$tool" >/dev/null ||
    skip "$tool is not installed (deploy/install-deps.sh installs it: apt-get install $tool)"
done
unshare --mount --net true 2>/dev/null || skip "cannot make mount and network namespaces here"

cache="${GDRMESH_PACKAGE_CACHE:-/var/cache/gdrmesh-ci}"
work="$(mktemp -d /tmp/gdrmesh-package.XXXXXX)"
root="$work/root"
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT

# ---- 1. the package --------------------------------------------------------------------------
step "building the package"
rm -f "$build"/package/gdrmesh_*.deb
# What `cmake --build BUILD --target package` does, without building the build's test programs
# first (that target depends on `all`): the program and the package's generated files, then
# CPack with the build's own CPackConfig.cmake.
{ cmake --build "$build" --target gdrmesh_package_files && (cd "$build" && cpack); } \
  >"$work/cpack.log" 2>&1 || {
  cat "$work/cpack.log"
  fail "building the package in $build failed"
}
debs=("$build"/package/gdrmesh_*.deb)
[[ ${#debs[@]} -eq 1 && -f ${debs[0]} ]] || fail "expected one gdrmesh_*.deb in $build/package"
deb=${debs[0]}
echo "package: $deb ($(stat -c %s "$deb") bytes)"
dpkg-deb -c "$deb" | awk '{print $6}' >"$work/contents"
for f in ./usr/bin/gdrmesh ./lib/systemd/system/gdrmesh-coordinator.service \
  ./lib/systemd/system/gdrmesh-worker.service ./etc/default/gdrmesh-coordinator \
  ./etc/default/gdrmesh-worker ./etc/gdrmesh/coordinator.yaml \
  ./usr/share/man/man1/gdrmesh.1.gz ./usr/share/bash-completion/completions/gdrmesh \
  ./usr/share/doc/gdrmesh/copyright ./usr/share/doc/gdrmesh/changelog.Debian.gz; do
  grep -qx -- "$f" "$work/contents" || fail "the package lacks $f"
done
dpkg-deb -e "$deb" "$work/control"
for f in /etc/default/gdrmesh-coordinator /etc/default/gdrmesh-worker /etc/gdrmesh/coordinator.yaml; do
  grep -qx -- "$f" "$work/control/conffiles" || fail "$f is not a conffile"
done
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
[[ $depends == *libgrpc++* && $depends == *libibverbs1* && $depends == *adduser* ]] ||
  fail "Depends lacks what dpkg-shlibdeps should have found (libgrpc++, libibverbs1) or adduser"

# The packaged completion, with the packaged program, in bash-completion (where installed).
if [[ -f /usr/share/bash-completion/bash_completion ]]; then
  mkdir -p "$work/x"
  dpkg-deb -x "$deb" "$work/x"
  got=$(PATH="$work/x/usr/bin:$PATH" bash -c '
    source /usr/share/bash-completion/bash_completion
    source "$1"
    complete_words() {
      COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMP_LINE="$*"
      COMP_POINT=${#COMP_LINE}; COMPREPLY=(); _gdrmesh; echo "${COMPREPLY[*]}"
    }
    complete_words gdrmesh wor; complete_words gdrmesh coordinator --http-t
    complete_words gdrmesh sweep run --pat' _ "$work/x/usr/share/bash-completion/completions/gdrmesh")
  [[ $got == $'worker workers\n--http-token-file\n--pattern' ]] ||
    fail "bash completion: got '$got'"
  echo "bash completion: subcommands and options complete"
else
  echo "bash-completion not installed: the completion script is not exercised"
fi

# ---- 2. lintian ------------------------------------------------------------------------------
step "lintian"
lintian --allow-root --fail-on error --display-level '>=warning' "$deb" | tee "$work/lintian.log" ||
  fail "lintian reports errors (above)"

# ---- 3. a clean Debian 12 root ---------------------------------------------------------------
# shellcheck source=tests/package/lib_root.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib_root.sh"
tarball=$(debian12_tarball "$cache") ||
  fail "mmdebstrap could not make a Debian 12 root (mirror unreachable?)"
step "unpacking the root"
mkdir -p "$root"
tar -xf "$tarball" -C "$root"
cp "$deb" "$root/tmp/"
in_root_apt() {
  unshare --mount --fork "$0" --in-ns apt "$root" "$cache" \
    chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive "$@"
}
step "apt-get update"
in_root_apt apt-get update -qq
# The dependencies first, so that the snapshot below holds them and the package adds only itself.
step "installing the dependencies: $depends"
in_root_apt apt-get satisfy -y -qq --no-install-recommends "$depends" >"$work/deps.log" ||
  {
    cat "$work/deps.log"
    fail "apt-get satisfy of the package's Depends failed"
  }

# What the root holds, without what changes by itself (logs, apt's and dpkg's own state).
snapshot() {
  (cd "$root" && find . -xdev \( -path ./proc -o -path ./sys -o -path ./dev -o -path ./run \
    -o -path ./tmp -o -path ./var/tmp -o -path ./var/log -o -path ./var/cache/apt \
    -o -path ./var/lib/apt -o -path ./var/lib/dpkg -o -path ./var/cache/debconf \
    -o -path ./var/cache/ldconfig -o -path ./etc/ld.so.cache -o -path './etc/*-' \) -prune -o \
    -printf '%p %y %m %U:%G\n' | LC_ALL=C sort)
}
snapshot >"$work/before"
cp "$root/etc/passwd" "$work/passwd.before"

step "installing the package"
in_root_apt apt-get install -y -qq --no-install-recommends "/tmp/$(basename "$deb")" >"$work/install.log" ||
  {
    cat "$work/install.log"
    fail "apt-get install of the .deb failed"
  }
chroot "$root" getent passwd gdrmesh >/dev/null || fail "postinst made no gdrmesh user"
uid=$(chroot "$root" id -u gdrmesh)
[[ $uid -lt 1000 ]] || fail "gdrmesh is not a system user (uid $uid)"
state=$(chroot "$root" stat -c '%U:%G %a' /var/lib/gdrmesh)
[[ $state == "gdrmesh:gdrmesh 750" ]] || fail "/var/lib/gdrmesh: $state, expected gdrmesh:gdrmesh 750"
chroot "$root" dpkg-query -W -f='${Conffiles}\n' gdrmesh | grep -q /etc/default/gdrmesh-worker ||
  fail "dpkg does not list /etc/default/gdrmesh-worker as a conffile"
chroot "$root" gdrmesh --version
# The units as systemd reads them (an unknown or misspelt setting is reported): on copies whose
# ExecStart= names the root's program, since systemd-analyze checks that it exists.
if command -v systemd-analyze >/dev/null; then
  mkdir -p "$work/units"
  for u in gdrmesh-coordinator.service gdrmesh-worker.service; do
    sed "s|^ExecStart=/usr/bin/gdrmesh |ExecStart=$root/usr/bin/gdrmesh |" \
      "$root/lib/systemd/system/$u" >"$work/units/$u"
  done
  systemd-analyze --man=no verify "$work"/units/*.service >"$work/verify.log" 2>&1 || true
  [[ ! -s $work/verify.log ]] || {
    cat "$work/verify.log"
    fail "systemd-analyze verify reports the above"
  }
  echo "systemd-analyze verify: no findings"
else
  echo "systemd-analyze not installed: the units' syntax is not checked"
fi

# ---- 4. certificates, as docs/operations.md tells the operator -----------------------------
step "certificates"
pki=/tmp/pki
g() { chroot "$root" gdrmesh "$@" >/dev/null; }
g certs init --dir "$pki"
g certs issue --dir "$pki" --role coordinator --name coord --san localhost,127.0.0.1
g certs issue --dir "$pki" --role worker --name node1
g certs issue --dir "$pki" --role worker --name node2
g certs issue --dir "$pki" --role admin --name ops
install_tls() { # NAME DEST: the folder as docs/operations.md installs it
  chroot "$root" install -d -o gdrmesh -g gdrmesh -m 700 "$2"
  chroot "$root" sh -c "install -o gdrmesh -g gdrmesh -m 600 $pki/$1/*.pem $2/"
}
install_tls coord /etc/gdrmesh/coordinator
install_tls node1 /etc/gdrmesh/worker
# The operator's edit of the worker's conffile; node2 stands for a second host (its own copy).
sed -i 's|^GDRMESH_COORDINATOR=.*|GDRMESH_COORDINATOR=127.0.0.1:7070|' "$root/etc/default/gdrmesh-worker"
install_tls node2 /etc/gdrmesh/worker-node2
sed 's|^GDRMESH_TLS_DIR=.*|GDRMESH_TLS_DIR=/etc/gdrmesh/worker-node2|' \
  "$root/etc/default/gdrmesh-worker" >"$root/tmp/gdrmesh-worker-node2"

# ---- 5. the units' command lines -------------------------------------------------------------
# unit_command UNIT [ENVFILE]: sets RUN to the command that starts UNIT as systemd would: its
# Environment= lines, then EnvironmentFile (or ENVFILE in its place), ExecStart= with ${VAR} as
# one argument and $VAR split at white space, User=/Group=, LimitNOFILE=/LimitMEMLOCK=,
# AmbientCapabilities= and CapabilityBoundingSet=. Any other expansion is refused.
unit_command() {
  local unit="$root/lib/systemd/system/$1" key value line tok
  local -A env=()
  local -a order=()
  setkv() {
    [[ -v "env[$1]" ]] || order+=("$1")
    env[$1]=$2
  }
  local envfile="" umask="0022" user="" group="" nofile="" memlock="" ambient="" bounding="" exec=""
  while IFS= read -r line; do
    [[ $line =~ ^([A-Za-z]+)=(.*)$ ]] || continue
    key=${BASH_REMATCH[1]} value=${BASH_REMATCH[2]}
    case $key in
      Environment) setkv "${value%%=*}" "${value#*=}" ;;
      EnvironmentFile) envfile=${value#-} ;;
      ExecStart) exec=$value ;;
      User) user=$value ;;
      Group) group=$value ;;
      LimitNOFILE) nofile=$value ;;
      LimitMEMLOCK) memlock=$value ;;
      AmbientCapabilities) ambient=$value ;;
      UMask) umask=$value ;;
      CapabilityBoundingSet) bounding=$value ;;
    esac
  done <"$unit"
  [[ -n $2 ]] && envfile=$2
  while IFS= read -r line; do
    [[ $line =~ ^[[:space:]]*(#|$) ]] && continue
    [[ $line =~ ^([A-Za-z_][A-Za-z0-9_]*)=(.*)$ ]] || fail "$envfile: not KEY=VALUE: $line"
    key=${BASH_REMATCH[1]} value=${BASH_REMATCH[2]}
    if [[ $value =~ ^\"(.*)\"$ || $value =~ ^\'(.*)\'$ ]]; then value=${BASH_REMATCH[1]}; fi
    setkv "$key" "$value"
  done <"$root$envfile"
  local -a argv=()
  local -a words
  read -ra words <<<"$exec"
  for tok in "${words[@]}"; do
    if [[ $tok =~ ^\$\{([A-Za-z_0-9]+)\}$ ]]; then
      argv+=("${env[${BASH_REMATCH[1]}]-}")
    elif [[ $tok =~ ^\$([A-Za-z_0-9]+)$ ]]; then
      local -a split
      read -ra split <<<"${env[${BASH_REMATCH[1]}]-}"
      argv+=("${split[@]}")
    elif [[ $tok == *'$'* || $tok == *%* ]]; then
      fail "$1: ExecStart= word '$tok': an expansion this script does not emulate"
    else
      argv+=("$tok")
    fi
  done
  local caps="-all" k
  for k in $ambient; do caps+=",+${k#CAP_}"; done
  caps=${caps,,}
  local bset="-all"
  for k in $bounding; do bset+=",+${k#CAP_}"; done
  bset=${bset,,}
  [[ $memlock == infinity ]] && memlock=unlimited
  # systemd raises these as PID 1; here that needs CAP_SYS_RESOURCE, which a container may lack:
  # then the limit stays at this sandbox's hard limit, and the log says so.
  if [[ -n $nofile ]] && ! prlimit --nofile="$nofile" true 2>/dev/null; then
    echo "$1: LimitNOFILE=$nofile cannot be set here (no CAP_SYS_RESOURCE): $(ulimit -Hn)"
    nofile=$(ulimit -Hn)
  fi
  if [[ -n $memlock ]] && ! prlimit --memlock="$memlock" true 2>/dev/null; then
    echo "$1: LimitMEMLOCK=$memlock cannot be set here (no CAP_SYS_RESOURCE): $(ulimit -Hl) KiB"
    memlock=
  fi
  RUN=(chroot "$root" prlimit ${nofile:+--nofile=$nofile} ${memlock:+--memlock=$memlock}
    setpriv --reuid="$user" --regid="${group:-$user}" --init-groups
    --inh-caps="$caps" --ambient-caps="$caps" --bounding-set="$bset"
    env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin)
  for k in "${order[@]}"; do RUN+=("$k=${env[$k]}"); done
  RUN+=(/bin/sh -c "umask $umask && exec \"\$@\"" sh "${argv[@]}")
  echo "$1: ${argv[*]}"
}

step "starting the coordinator and two workers, as their units would"
# StateDirectory= and CacheDirectory= of the units: systemd makes them, owned by User=.
chroot "$root" install -d -o gdrmesh -g gdrmesh -m 750 /var/lib/gdrmesh /var/cache/gdrmesh-worker
# One network namespace (with its own loopback) for everything that talks.
coproc NS { unshare --mount --net --fork "$0" --in-ns run "$root" "$cache" bash; }
ns_pid=$NS_PID
pids+=("$ns_pid")
start_unit() { # NAME UNIT [ENVFILE]
  unit_command "$2" "${3:-}"
  echo "(${RUN[*]@Q}) >$work/$1.log 2>&1 &" >&"${NS[1]}"
}
wait_for() { # FILE PATTERN WHAT: until FILE shows PATTERN (30 s at most)
  local i
  for ((i = 0; i < 300; i++)); do
    grep -q -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  cat "$1" >&2 || true
  fail "$3: no '$2' within 30 s"
}
start_unit coordinator gdrmesh-coordinator.service
wait_for "$work/coordinator.log" "listening on 0.0.0.0:7070" "the coordinator"
grep -q "mutual TLS as" "$work/coordinator.log" || fail "the coordinator runs without TLS"
start_unit node1 gdrmesh-worker.service
start_unit node2 gdrmesh-worker.service /tmp/gdrmesh-worker-node2
admin=(chroot "$root" env GDRMESH_COORDINATOR=127.0.0.1:7070 "GDRMESH_TLS_DIR=$pki/ops" gdrmesh)
for ((i = 0; i < 300; i++)); do
  rm -f "$work/workers.done"
  echo "${admin[*]@Q} workers >$work/workers.txt 2>&1; echo done >$work/workers.done" >&"${NS[1]}"
  wait_for "$work/workers.done" "done" "gdrmesh workers"
  [[ $(grep -cE '^node[12] .*online' "$work/workers.txt") -eq 2 ]] && break
  sleep 0.1
done
cat "$work/workers.txt"
[[ $(grep -cE '^node[12] .*online' "$work/workers.txt") -eq 2 ]] ||
  fail "node1 and node2 did not both register (logs: $(cat "$work"/node*.log))"

step "pair test node1 -> node2 (emulated transport)"
echo "${admin[*]@Q} test node1 node2 --transport emulated --size 64KiB --iters 200 >$work/test.txt 2>&1; echo \$? >$work/test.rc" >&"${NS[1]}"
wait_for "$work/test.rc" . "gdrmesh test"
cat "$work/test.txt"
[[ $(cat "$work/test.rc") == 0 ]] || fail "gdrmesh test node1 node2 exited $(cat "$work/test.rc")"
grep -q PASSED "$work/test.txt" || fail "the pair test did not pass"
# The workers ran as gdrmesh with CAP_IPC_LOCK only, the coordinator with no capability.
for p in $(pgrep -f "^/usr/bin/gdrmesh worker" || true); do
  [[ $(stat -c %u "/proc/$p") == "$uid" ]] || fail "a worker runs as uid $(stat -c %u "/proc/$p")"
  grep -q '^CapEff:.*0000000000004000$' "/proc/$p/status" ||
    fail "worker $p: effective capabilities $(grep CapEff "/proc/$p/status"), expected CAP_IPC_LOCK only"
done
for p in $(pgrep -f "^/usr/bin/gdrmesh coordinator" || true); do
  grep -q '^CapEff:.*0000000000000000$' "/proc/$p/status" ||
    fail "the coordinator has capabilities: $(grep CapEff "/proc/$p/status")"
done

step "stopping (SIGTERM, as systemctl stop)"
echo 'kill -TERM $(jobs -p); wait; exit 0' >&"${NS[1]}"
wait "$ns_pid" || true
grep -q "stopped" "$work/coordinator.log" || fail "the coordinator did not stop cleanly"
[[ -f $root/var/lib/gdrmesh/results.db ]] || fail "no database in /var/lib/gdrmesh"

# ---- 6. remove, purge, and what is left --------------------------------------------------------
step "remove and purge"
in_root_apt apt-get remove -y -qq gdrmesh >"$work/remove.log" || {
  cat "$work/remove.log"
  fail "apt-get remove failed"
}
[[ -f $root/etc/default/gdrmesh-worker ]] || fail "remove (not purge) deleted the conffiles"
in_root_apt apt-get purge -y -qq gdrmesh >"$work/purge.log" || {
  cat "$work/purge.log"
  fail "apt-get purge failed"
}
snapshot >"$work/after"
comm -13 "$work/before" "$work/after" >"$work/added"
comm -23 "$work/before" "$work/after" >"$work/removed"
echo "left after purge:"
cat "$work/added"
[[ ! -s $work/removed ]] || fail "purge removed what was there before: $(cat "$work/removed")"
grep -qE "^\./var/lib/gdrmesh/results\.db f " "$work/added" || fail "purge removed the database"
unexpected=$(grep -vE "^\./var/lib/gdrmesh( d |/results\.db(-wal|-shm|\.spool|\.spool-reserve|\.crl-state)? f )" \
  "$work/added" || true)
[[ -z $unexpected ]] || fail "purge left more than the database: $unexpected"
diff <(grep -v '^gdrmesh:' "$root/etc/passwd") "$work/passwd.before" >/dev/null ||
  fail "/etc/passwd changed beyond the gdrmesh user"
step "passed"
echo "package test: $((SECONDS - t0)) s"
