#!/usr/bin/env bash
# The container image, for real (ctest label `package`; issue #21): builds
# deploy/container/Containerfile with rootful podman (its `prebuilt` target from the .deb of this
# build folder: --target prebuilt), runs the binary out of the image, then the
# coordinator and two workers as containers with the run lines of docs/operations.md ("Container
# image"; no /dev/infiniband or GPU here: emulated transport), a pair test, and checks the
# workers' capabilities (IPC_LOCK only) and the coordinator's user (gdrmesh, uid 999). Then the
# package's systemd units under a real systemd (PID 1 of a container, Containerfile.systemd):
# enabled and started as docs/operations.md says, a pair test, their users and capabilities, a
# clean stop, and a purge with systemd running.
#   tests/package/container/run_container_test.sh BUILD_DIR
# The base image: Debian 12 made by mmdebstrap (the tarball tests/package/deb caches), imported
# as localhost/gdrmesh-base:debian12, since this machine reaches Debian's mirror but no image
# registry; a real build takes the Containerfile's default, debian:bookworm-slim.
# Exit 77 (skipped, with the reason) without root, podman, runc or mmdebstrap.
set -euo pipefail

build="${1:?usage: $0 BUILD_DIR}"
build="$(cd "$build" && pwd)"
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
skip() {
  echo "SKIPPED: $*"
  exit 77
}
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
t0=$SECONDS
step() { echo "--- container: $* ($((SECONDS - t0)) s)"; }

[[ $(id -u) -eq 0 ]] || skip "needs root (rootful podman)"
for tool in podman runc mmdebstrap; do
  command -v "$tool" >/dev/null ||
    skip "$tool is not installed (deploy/install-deps.sh installs it: apt-get install $tool)"
done

# This sandbox's quirks, each measured: crun 1.8 refuses the host's hybrid cgroup layout (runc
# does not), and without CAP_SYS_RESOURCE podman's default rlimits (nofile 1048576, nproc) cannot
# be set, so the containers get limits this process may give.
podman=(podman --runtime runc)
limits=(--ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)" --ulimit nproc=32768:32768)

cache="${GDRMESH_PACKAGE_CACHE:-/var/cache/gdrmesh-ci}"
base=localhost/gdrmesh-base:debian12
image=localhost/gdrmesh:ci-test
sd_image=localhost/gdrmesh-systemd:ci-test
sd=gdrmesh-ci-systemd
net=gdrmesh-ci-coord
work="$(mktemp -d /tmp/gdrmesh-container.XXXXXX)"
remove_containers() { # one at a time: podman 4.3's `rm -f A B` stops at the first missing name
  local c
  for c in gdrmesh-ci-node1 gdrmesh-ci-node2 "$net" "$sd"; do
    "${podman[@]}" rm -f -t 0 "$c" >/dev/null 2>&1 || true
  done
}
cleanup() {
  remove_containers
  # The images stay (their layers are the next run's cache); earlier builds' go.
  "${podman[@]}" image prune -f >/dev/null 2>&1 || true
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT
remove_containers # a run that was killed may have left them

step "the package"
{ cmake --build "$build" --target gdrmesh_package_files && (cd "$build" && cpack); } \
  >"$work/cpack.log" 2>&1 || {
  cat "$work/cpack.log"
  fail "building the package in $build failed"
}
# The Containerfile's `prebuilt` target takes build/package/ of the context (the repository root).
ctx="$work/context"
mkdir -p "$ctx/build/package" "$ctx/deploy/container"
cp "$build"/package/gdrmesh_*.deb "$ctx/build/package/"
cp "$src/deploy/container/Containerfile" "$src/deploy/container/Containerfile.dockerignore" \
  "$ctx/deploy/container/"

step "the base image"
# shellcheck source=tests/package/lib_root.sh
source "$src/tests/package/lib_root.sh"
tarball=$(debian12_tarball "$cache") ||
  fail "mmdebstrap could not make a Debian 12 root (mirror unreachable?)"
stamp=$(stat -c %Y "$tarball")
if [[ $("${podman[@]}" image inspect -f '{{index .Labels "tarball"}}' "$base" 2>/dev/null) != "$stamp" ]]; then
  "${podman[@]}" import --change "LABEL tarball=$stamp" "$tarball" "$base" >/dev/null
fi

# Whether this machine can run a container at all (not gdrmesh's part): if not, skip with why.
if ! probe=$("${podman[@]}" run --rm --network none "${limits[@]}" "$base" true 2>&1); then
  skip "podman cannot run a container here: $(tail -1 <<<"$probe")"
fi

step "podman build (--target prebuilt)"
"${podman[@]}" build --network host "${limits[@]}" -f "$ctx/deploy/container/Containerfile" \
  --target prebuilt --build-arg "BASE=$base" -t "$image" "$ctx" >"$work/build.log" 2>&1 || {
  tail -40 "$work/build.log"
  fail "podman build failed"
}
run=("${podman[@]}" run "${limits[@]}")
"${run[@]}" --rm "$image" --version | tee "$work/version"
grep -q "^gdrmesh " "$work/version" || fail "the image's gdrmesh does not run"
[[ $("${podman[@]}" image inspect -f '{{.Config.User}}' "$image") == 999:999 ]] ||
  fail "the image's default user is not gdrmesh (999:999)"

step "certificates"
mkdir -p "$work/pki" "$work/db"
g() { "${run[@]}" --rm --user 0 -v "$work/pki:/pki" "$image" "$@" >/dev/null; }
g certs init --dir /pki
g certs issue --dir /pki --role coordinator --name coord --san localhost,127.0.0.1
g certs issue --dir /pki --role worker --name node1
g certs issue --dir /pki --role worker --name node2
g certs issue --dir /pki --role admin --name ops
chown -R 999:999 "$work/pki/coord" "$work/db"

step "coordinator and two workers (docs/operations.md run lines, emulated transport)"
# The coordinator owns the network namespace (loopback only: --network none); the workers and
# the client join it, as a pod's containers share theirs.
"${run[@]}" -d --name "$net" --network none \
  -v "$work/db:/var/lib/gdrmesh" -v "$work/pki/coord:/etc/gdrmesh/coordinator:ro" \
  -e GDRMESH_TLS_DIR=/etc/gdrmesh/coordinator \
  "$image" coordinator --listen 0.0.0.0:7070 --db /var/lib/gdrmesh/results.db >/dev/null
for n in node1 node2; do
  # The worker's run line less --device /dev/infiniband, the GPU and --ulimit memlock=-1:-1
  # (none here; memlock cannot be raised without CAP_SYS_RESOURCE).
  "${run[@]}" -d --name "gdrmesh-ci-$n" --network "container:$net" --user 0 \
    --cap-drop ALL --cap-add IPC_LOCK \
    -v "$work/pki/$n:/etc/gdrmesh/worker:ro" -e GDRMESH_TLS_DIR=/etc/gdrmesh/worker \
    -e GDRMESH_COORDINATOR=127.0.0.1:7070 "$image" worker >/dev/null
done
admin=("${run[@]}" --rm --network "container:$net" --user 0 -v "$work/pki/ops:/tls:ro"
  -e GDRMESH_TLS_DIR=/tls -e GDRMESH_COORDINATOR=127.0.0.1:7070 "$image")
for ((i = 0; i < 100; i++)); do
  "${admin[@]}" workers >"$work/workers.txt" 2>&1 || true
  [[ $(grep -cE '^node[12] .*online' "$work/workers.txt") -eq 2 ]] && break
  sleep 0.3
done
cat "$work/workers.txt"
[[ $(grep -cE '^node[12] .*online' "$work/workers.txt") -eq 2 ]] || {
  "${podman[@]}" logs "$net" 2>&1 | tail -20
  fail "node1 and node2 did not both register"
}

step "pair test node1 -> node2"
rc=0
"${admin[@]}" test node1 node2 --transport emulated --size 64KiB --iters 200 | tee "$work/test.txt" || rc=$?
[[ $rc -eq 0 ]] || fail "gdrmesh test node1 node2 exited $rc"
grep -q PASSED "$work/test.txt" || fail "the pair test did not pass"
for n in node1 node2; do
  caps=$("${podman[@]}" exec "gdrmesh-ci-$n" grep CapEff /proc/1/status)
  [[ $caps == *0000000000004000 ]] || fail "worker $n: $caps, expected CAP_IPC_LOCK only"
done
[[ $("${podman[@]}" exec "$net" id -u) == 999 ]] || fail "the coordinator does not run as uid 999"
[[ -f $work/db/results.db ]] || fail "no database in the coordinator's volume"
"${podman[@]}" stop -t 10 gdrmesh-ci-node1 gdrmesh-ci-node2 "$net" >/dev/null

# ---- the package's units under a real systemd (PID 1 of a container) ---------------------------
# Certificates, the worker's conffile edited as docs/operations.md says, `systemctl enable --now`,
# a pair test (node1 with itself), the units' user and capabilities, a clean stop, and a purge
# with systemd running (prerm's stop, postrm's daemon-reload and deb-systemd-helper purge).
step "the units under systemd"
cp "$src/tests/package/container/Containerfile.systemd" "$ctx/"
"${podman[@]}" build --network host "${limits[@]}" -f "$ctx/Containerfile.systemd" \
  --build-arg "BASE=$base" -t "$sd_image" "$ctx" >"$work/build-systemd.log" 2>&1 || {
  tail -40 "$work/build-systemd.log"
  fail "podman build of the systemd image failed"
}
# IPC_LOCK in the container's bounding set, so that systemd can give it to the worker.
"${run[@]}" -d --name "$sd" --systemd=always --network none --cap-add IPC_LOCK "$sd_image" >/dev/null
for ((i = 0; i < 100; i++)); do
  state=$("${podman[@]}" exec "$sd" systemctl is-system-running 2>/dev/null || true)
  [[ $state == running || $state == degraded ]] && break
  sleep 0.3
done
[[ $state == running || $state == degraded ]] || fail "systemd in the container did not come up ($state)"
"${podman[@]}" exec "$sd" bash -c '
  set -e
  g() { gdrmesh "$@" >/dev/null; }
  g certs init --dir /root/pki
  g certs issue --dir /root/pki --role coordinator --name coord --san localhost,127.0.0.1
  g certs issue --dir /root/pki --role worker --name node1
  g certs issue --dir /root/pki --role admin --name ops
  install -o gdrmesh -g gdrmesh -m 600 /root/pki/coord/*.pem /etc/gdrmesh/coordinator/
  install -o gdrmesh -g gdrmesh -m 600 /root/pki/node1/*.pem /etc/gdrmesh/worker/
  sed -i "s/^GDRMESH_COORDINATOR=.*/GDRMESH_COORDINATOR=127.0.0.1:7070/" /etc/default/gdrmesh-worker
  systemctl enable --now gdrmesh-coordinator gdrmesh-worker 2>/dev/null
  export GDRMESH_TLS_DIR=/root/pki/ops
  for ((i = 0; i < 100; i++)); do
    gdrmesh workers 2>/dev/null | grep -q "^node1 .*online" && break
    sleep 0.3
  done
  gdrmesh test node1 node1 --transport emulated --size 64KiB --iters 100
' >"$work/systemd.txt" 2>&1 || {
  cat "$work/systemd.txt"
  "${podman[@]}" exec "$sd" journalctl --no-pager -u gdrmesh-coordinator -u gdrmesh-worker | tail -30
  fail "the units did not run a pair test under systemd"
}
grep -q PASSED "$work/systemd.txt" || fail "the pair test under systemd did not pass"
sdx() { "${podman[@]}" exec "$sd" "$@"; }
for u in gdrmesh-coordinator gdrmesh-worker; do
  p=$(sdx systemctl show -p MainPID --value "$u")
  user=$(sdx stat -c %U "/proc/$p")
  caps=$(sdx grep CapEff "/proc/$p/status")
  echo "$u: pid $p, user $user, $caps"
  [[ $user == gdrmesh ]] || fail "$u runs as $user"
  if [[ $u == gdrmesh-worker ]]; then
    [[ $caps == *0000000000004000 ]] || fail "$u: $caps, expected CAP_IPC_LOCK only"
  else
    [[ $caps == *0000000000000000 ]] || fail "$u: $caps, expected none"
  fi
  sdx systemd-analyze security "$u.service" 2>/dev/null | tail -1 || true
done
sdx systemctl stop gdrmesh-worker gdrmesh-coordinator
for u in gdrmesh-coordinator gdrmesh-worker; do
  [[ $(sdx systemctl show -p Result --value "$u") == success ]] || fail "$u did not stop cleanly"
done
sdx systemctl start gdrmesh-coordinator gdrmesh-worker
sdx apt-get purge -y -qq gdrmesh >"$work/purge-systemd.log" 2>&1 || {
  cat "$work/purge-systemd.log"
  fail "apt-get purge under systemd failed"
}
[[ $(sdx systemctl is-active gdrmesh-coordinator gdrmesh-worker || true) != *active$'\n'active* ]] ||
  fail "purge left the units running"
sdx test ! -e /etc/systemd/system/multi-user.target.wants/gdrmesh-worker.service ||
  fail "purge left the worker enabled"
sdx test ! -e /etc/gdrmesh || fail "purge left /etc/gdrmesh"
sdx test -f /var/lib/gdrmesh/results.db || fail "purge removed the database"
step "passed"
echo "container test: $((SECONDS - t0)) s"
