#!/usr/bin/env bash
# Installs what gdrmesh needs on Debian 12 or Ubuntu 24.04, from the distribution's own
# packages. Idempotent: already-installed packages are skipped quickly.
#
#   deploy/install-deps.sh            build + test dependencies (default; deploy/test.sh)
#   deploy/install-deps.sh --main     what the main job needs (deploy/quickstart.sh): build the
#                                     `gdrmesh` program and run it; no test tools, no qemu, no
#                                     browser, no clang
#   deploy/install-deps.sh --runtime  only what a worker/coordinator host needs to run
set -euo pipefail

mode="${1:-all}"
SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: run as root or install sudo" >&2; exit 2; }
  SUDO="sudo"
fi

runtime=(libgrpc++1.51 libprotobuf32 libsqlite3-0 libssl3 libyaml-cpp0.7 libspdlog1.10 libfmt9 libibverbs1 librdmacm1 ibverbs-providers
         rdma-core tzdata
         libibnetdisc5 libibmad5 libibumad3)  # fabric discovery
# Building the `gdrmesh` program (what the main job builds).
build=(build-essential cmake ninja-build pkg-config
       libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
       libsqlite3-dev libyaml-cpp-dev
       libssl-dev  # certificates and mTLS (security/certs.h)
       libibverbs-dev librdmacm-dev ibverbs-providers rdma-core
       libibnetdisc-dev libibmad-dev libibumad-dev  # fabric discovery (worker/fabric)
       nlohmann-json3-dev libcli11-dev libcpp-httplib-dev
       libspdlog-dev  # the daemons' log (common/log.h)
       tzdata)  # zone database for schedules (coordinator/orchestrator/cron.h)
# Building and checking the tests (deploy/test.sh).
tests=(git sqlite3 libgtest-dev libgmock-dev clang-format ccache bc
       clang  # libFuzzer harnesses (tests/fuzz/run_ci.sh)
       e2fsprogs  # chattr: the read-only database fault test (tests/fault/readonly)
       clang-tidy  # deploy/check-tidy.sh (.clang-tidy)
       curl  # the status page token test (tests/integration/trust) and tests/bench/history_queries.sh
       slurmctld slurmd slurm-client munge  # a single-host Slurm (tests/integration/slurm)
       help2man lintian mmdebstrap bash-completion  # the .deb's man page; its test (tests/package/deb)
       podman runc  # the container image's test (tests/package/container)
       ibsim-utils opensm infiniband-diags  # simulated InfiniBand fabric tests (tests/fabric)
       lldpd iproute2)  # RoCE from LLDP: real lldpd in two network namespaces (tests/fabric)
# The Kubernetes manifests' validator (tests/package/kubernetes: npm's kubernetes-models). A
# machine whose Node.js comes from elsewhere, npm bundled, keeps it: Debian's npm conflicts with it.
command -v npm >/dev/null || tests+=(nodejs npm)
# Soft-RoCE VM tests (tests/softroce): qemu, a static busybox, the rdma userspace and perftest.
softroce=(qemu-system-x86 busybox-static ibverbs-utils rdmacm-utils perftest iproute2 cpio kmod
          ca-certificates)
# Status page browser test (tests/browser); the rogue gRPC client (tests/fault/rogue).
browser=(chromium python3-prometheus-client python3-grpcio python3-protobuf)

# Ubuntu names the runtime libraries differently; resolve by what apt knows.
pick() {
  local out=()
  for p in "$@"; do
    if apt-cache show "$p" >/dev/null 2>&1; then out+=("$p"); fi
  done
  echo "${out[@]}"
}

missing() {
  local out=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || out+=("$p")
  done
  echo "${out[@]}"
}

case "$mode" in
  --runtime) want=("${runtime[@]}") ;;
  --main) want=("${build[@]}") ;;
  all|--all) want=("${build[@]}" "${tests[@]}" "${softroce[@]}" "${browser[@]}") ;;
  *) echo "usage: $0 [--main | --runtime]" >&2; exit 2 ;;
esac

need=$(missing "${want[@]}")
if [[ -z "$need" ]]; then
  echo "install-deps: all packages present"
  exit 0
fi
echo "install-deps: installing: $need"
$SUDO apt-get update -qq
# shellcheck disable=SC2086
need=$(pick $need)
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $need
echo "install-deps: done"
