#!/usr/bin/env bash
# vm.sh - run a guest script inside a throw-away qemu VM with Soft-RoCE (rdma_rxe).
#
# The host kernel of the CI machines has no RDMA support, so real verbs only run
# inside a VM booted from Debian's own kernel. This harness:
#   1. fetches Debian's kernel package (cached), extracts it, runs depmod;
#   2. builds an initramfs with busybox, iproute2, rdma-core, perftest and every
#      --bin/--lib given plus all their shared-library dependencies;
#   3. boots it under qemu (KVM when /dev/kvm exists, TCG otherwise), sets up three
#      rxe devices (rxe0/rxe1 on a veth pair, rxe2 on dummy0), runs the guest script
#      and hands its exit code back through isa-debug-exit;
#   4. extracts files the guest exported with /opt/export into WORKDIR/out/.
#
# See tests/softroce/README.md for the guest environment and the export protocol.
#
# Exit codes: the guest script's exit code (0..127; larger codes are clamped to 127),
#   2   usage or host setup error (message on stderr),
#   124 timeout,
#   125 the guest died without a verdict (kernel panic, /init failed, qemu error).
set -euo pipefail

# The whole script is one { ... } block, so bash parses all of it before running any of it.
# bash otherwise reads a script as it goes: an edit to this file during a VM run (minutes) made
# it resume at a stale byte offset inside extract_files() ("tmp: unbound variable" at a line in
# its body, with `rm -rf "$tmp"` run outside the function). Keep the closing "exit; }" last.
{
readonly PROG="vm.sh"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly HERE

# Modules to load, in this order (their modules.dep dependencies are added before
# each one). crc32_generic is not a hard dependency of rdma_rxe but `rdma link add`
# fails with ENOENT without it. configfs and ib_cm..rdma_ucm serve librdmacm.
readonly MODULES=(configfs crc32_generic udp_tunnel ip6_udp_tunnel ib_core ib_uverbs
    ib_cm iw_cm rdma_cm rdma_ucm rdma_rxe dummy veth)

# Programs every guest gets (host path). iproute2's ip and rdma land in /usr/bin.
readonly BASE_PROGS=(/usr/bin/ibv_devinfo /usr/bin/ibv_rc_pingpong /usr/bin/rping
    /usr/bin/ib_write_bw /usr/bin/ib_read_bw /usr/bin/ib_send_bw
    /usr/bin/ib_write_lat /usr/bin/ib_read_lat /usr/bin/ib_send_lat)

die() {
    echo "$PROG: error: $*" >&2
    exit 2
}
log() { echo "$PROG: $*" >&2; }

usage() {
    cat <<'EOF'
Usage: tests/softroce/vm.sh --workdir DIR --script GUEST_SCRIPT [options]

Boots a qemu VM with Soft-RoCE devices rxe0/rxe1 (veth pair) and rxe2 (dummy0) and
runs GUEST_SCRIPT in it with /bin/sh. Exits with the script's exit code.

Options:
  --workdir DIR     scratch and result folder (created): console.log, out/, initramfs
  --script FILE     guest script, copied to /opt/test.sh
  --bin PATH        executable to copy to /opt/bin (on PATH); repeatable
  --lib PATH        shared library to copy to /opt/lib (on LD_LIBRARY_PATH); repeatable
  --file PATH       any other file to copy to /opt/share; repeatable
  --module NAME     extra kernel module (e.g. bridge, sch_netem): it and its dependencies go
                    to /opt/modules, names in load order in /opt/modules/load-order; the
                    guest script loads them (insmod); repeatable
  --timeout SECS    whole-VM wall-clock limit (default 300)
  --mtu N           MTU of veth0, veth1 and dummy0 (default 1500)
  --mem MB          guest memory (default 2048)
  --quiet           do not stream the guest console to stderr
  -h, --help        this text

Environment: GDRMESH_VM_CACHE (default ~/.cache/gdrmesh-vm) caches the kernel;
GDRMESH_VM_KERNEL_PKG overrides the kernel package (e.g. linux-image-6.1.0-56-amd64);
GDRMESH_VM_ACCEL=tcg|kvm forces the accelerator (default: KVM when qemu can start on it and the
guest reaches /init within GDRMESH_VM_KVM_BOOT_S, default 30; else TCG, remembered per host boot).
Exit codes: guest script's code (0..127), 2 setup error, 124 timeout,
125 guest died without a verdict (see WORKDIR/console.log).
EOF
}

# ---------------------------------------------------------------- arguments
WORKDIR=""
SCRIPT=""
TIMEOUT=300
MTU=1500
MEM=2048
QUIET=0
BINS=()
LIBS=()
FILES=()
EXTRA_MODULES=()

need_arg() { [[ $# -ge 2 && -n "$2" ]] || die "$1 needs a value (see --help)"; }

while [[ $# -gt 0 ]]; do
    case "$1" in
        --workdir) need_arg "$@"; WORKDIR="$2"; shift 2 ;;
        --script) need_arg "$@"; SCRIPT="$2"; shift 2 ;;
        --bin) need_arg "$@"; BINS+=("$2"); shift 2 ;;
        --lib) need_arg "$@"; LIBS+=("$2"); shift 2 ;;
        --file) need_arg "$@"; FILES+=("$2"); shift 2 ;;
        --module) need_arg "$@"; EXTRA_MODULES+=("$2"); shift 2 ;;
        --timeout) need_arg "$@"; TIMEOUT="$2"; shift 2 ;;
        --mtu) need_arg "$@"; MTU="$2"; shift 2 ;;
        --mem) need_arg "$@"; MEM="$2"; shift 2 ;;
        --quiet) QUIET=1; shift ;;
        -h | --help) usage; exit 0 ;;
        *) die "unknown argument '$1' (see --help)" ;;
    esac
done

[[ -n "$WORKDIR" ]] || die "--workdir is required (see --help)"
[[ -n "$SCRIPT" ]] || die "--script is required (see --help)"
[[ -f "$SCRIPT" ]] || die "guest script '$SCRIPT' not found"
[[ "$TIMEOUT" =~ ^[1-9][0-9]*$ ]] || die "--timeout must be a positive integer, got '$TIMEOUT'"
[[ "$MTU" =~ ^[0-9]+$ && "$MTU" -ge 576 && "$MTU" -le 65535 ]] ||
    die "--mtu must be an integer in 576..65535, got '$MTU'"
[[ "$MEM" =~ ^[1-9][0-9]*$ ]] || die "--mem must be a positive integer (MB), got '$MEM'"
for f in "${BINS[@]}" "${LIBS[@]}" "${FILES[@]}"; do
    [[ -f "$f" ]] || die "'$f' not found (given with --bin/--lib/--file)"
done

# ---------------------------------------------------------------- host tools
QEMU="$(command -v qemu-system-x86_64 || true)"
[[ -n "$QEMU" ]] || die "qemu-system-x86_64 not found: run deploy/install-deps.sh (Debian: apt-get install qemu-system-x86)"
need_tool() {
    local tool="$1" pkg="$2"
    command -v "$tool" >/dev/null 2>&1 ||
        die "$tool not found: run deploy/install-deps.sh (Debian package: $pkg)"
}
need_tool cpio cpio
need_tool gzip gzip
need_tool ldd libc-bin
need_tool dpkg dpkg
need_tool depmod kmod
need_tool timeout coreutils
need_tool flock util-linux
need_tool base64 coreutils
need_tool sha256sum coreutils
for p in "${BASE_PROGS[@]}"; do
    [[ -x "$p" ]] || die "$p not found: run deploy/install-deps.sh (Debian packages: perftest ibverbs-utils rdmacm-utils)"
done
BUSYBOX=""
for p in /usr/bin/busybox /bin/busybox; do
    if [[ -x "$p" ]] && ! ldd "$p" >/dev/null 2>&1; then BUSYBOX="$p"; break; fi
done
[[ -n "$BUSYBOX" ]] || die "static busybox not found: run deploy/install-deps.sh (Debian package: busybox-static)"
IP_BIN="$(command -v ip || true)"
RDMA_BIN="$(command -v rdma || true)"
[[ -x "$IP_BIN" && -x "$RDMA_BIN" ]] || die "iproute2 'ip'/'rdma' not found: run deploy/install-deps.sh (Debian package: iproute2)"
MULTIARCH="$(gcc -print-multiarch 2>/dev/null || dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)"
RXE_PROVIDER="$(compgen -G "/usr/lib/$MULTIARCH/libibverbs/librxe-rdmav*.so" | head -n1 || true)"
[[ -n "$RXE_PROVIDER" && -f /etc/libibverbs.d/rxe.driver ]] ||
    die "rxe verbs provider not found: run deploy/install-deps.sh (Debian package: ibverbs-providers)"

mkdir -p "$WORKDIR"
WORKDIR="$(cd "$WORKDIR" && pwd)"
CACHE="${GDRMESH_VM_CACHE:-$HOME/.cache/gdrmesh-vm}"
mkdir -p "$CACHE"
T_START=$(date +%s.%N)

# ---------------------------------------------------------------- kernel (cached)
# Resolves the kernel package that linux-image-amd64 depends on, downloads and extracts
# it once into $CACHE/kernel/<pkg>_<version>/ and runs depmod. Sets KROOT, KVER, VMLINUZ.
resolve_kernel_pkg() {
    if [[ -n "${GDRMESH_VM_KERNEL_PKG:-}" ]]; then
        echo "$GDRMESH_VM_KERNEL_PKG"
        return
    fi
    apt-cache depends linux-image-amd64 2>/dev/null |
        awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9].*-amd64$/ { print $2; exit }'
}

prepare_kernel() {
    local pkg ver key dir dl deb memo="$CACHE/kernel/resolved"
    pkg=""
    ver=""
    # apt-cache takes seconds on a loaded machine: reuse the last answer until the apt
    # lists change (apt-get update) or the package is overridden
    if [[ -z "${GDRMESH_VM_KERNEL_PKG:-}" && -f "$memo" && "$memo" -nt /var/lib/apt/lists &&
        ! "$memo" -ot /var/cache/apt/pkgcache.bin ]]; then
        read -r pkg ver <"$memo" || true
    fi
    if [[ -z "$pkg" || -z "$ver" ]]; then
        pkg="$(resolve_kernel_pkg || true)"
        if [[ -n "$pkg" ]]; then
            ver="$(apt-cache policy "$pkg" 2>/dev/null | awk '$1 == "Candidate:" { print $2; exit }')"
            [[ "$ver" == "(none)" ]] && ver=""
        fi
        if [[ -n "$pkg" && -n "$ver" && -z "${GDRMESH_VM_KERNEL_PKG:-}" ]]; then
            mkdir -p "$CACHE/kernel"
            echo "$pkg $ver" >"$memo"
        fi
    fi
    if [[ -z "$pkg" || -z "$ver" ]]; then
        # Offline or no apt metadata: fall back to the newest kernel already cached.
        dir="$(find "$CACHE/kernel" -mindepth 2 -maxdepth 2 -name .complete -printf '%h\n' 2>/dev/null | sort -V | tail -n1 || true)"
        [[ -n "$dir" ]] || die "cannot resolve the Debian kernel package (apt-cache depends linux-image-amd64 gave nothing) and nothing is cached in $CACHE/kernel; run apt-get update"
        log "warning: could not resolve the kernel package with apt; using cached $(basename "$dir")"
    else
        key="${pkg}_${ver//:/%}"
        dir="$CACHE/kernel/$key"
        if [[ ! -f "$dir/.complete" ]]; then
            log "preparing kernel $pkg $ver in $dir (once)"
            rm -rf "$dir"
            mkdir -p "$dir/dl"
            dl="$dir/dl"
            # apt-get download writes into the current directory
            (cd "$dl" && apt-get download -q "$pkg=$ver" >&2) ||
                die "apt-get download $pkg=$ver failed (is the Debian mirror reachable? try apt-get update)"
            deb="$(compgen -G "$dl/*.deb" | head -n1 || true)"
            [[ -n "$deb" ]] || die "apt-get download $pkg produced no .deb in $dl"
            dpkg -x "$deb" "$dir/root" || die "dpkg -x $deb failed"
            rm -rf "$dl"
            touch "$dir/.complete.tmp"
        fi
    fi
    KROOT="$dir/root"
    local vm
    vm="$(compgen -G "$KROOT/boot/vmlinuz-*" | head -n1 || true)"
    [[ -n "$vm" ]] || die "no vmlinuz-* in $KROOT/boot (broken cache? remove $dir)"
    VMLINUZ="$vm"
    KVER="${vm##*/vmlinuz-}"
    [[ -d "$KROOT/lib/modules/$KVER" ]] || die "no modules for $KVER in $KROOT/lib/modules (broken cache? remove $dir)"
    if [[ -f "$dir/.complete.tmp" ]]; then
        depmod -b "$KROOT" "$KVER" || die "depmod -b $KROOT $KVER failed"
        mv "$dir/.complete.tmp" "$dir/.complete"
    fi
}

exec 9>"$CACHE/.lock"
flock 9
prepare_kernel
flock -u 9
exec 9>&-
MODDIR="$KROOT/lib/modules/$KVER"

# Orders MODULES plus their modules.dep dependencies (dependencies first).
declare -A MOD_SEEN=()
MOD_ORDER=()
mod_path() { # name -> path relative to $MODDIR (from modules.dep), empty if built in
    local name="$1" alt
    alt="${name//_/-}"
    awk -F: -v a="/$name.ko" -v b="/$alt.ko" '
        { p = $1; sub(/\.(xz|gz|zst)$/, "", p) }
        substr(p, length(p) - length(a) + 1) == a || substr(p, length(p) - length(b) + 1) == b { print $1; exit }
    ' "$MODDIR/modules.dep"
}
mod_add() { # path relative to $MODDIR
    local rel="$1" dep deps
    [[ -n "${MOD_SEEN[$rel]:-}" ]] && return 0
    MOD_SEEN[$rel]=1
    deps="$(awk -F': *' -v m="$rel" '$1 == m { print $2; exit }' "$MODDIR/modules.dep")"
    for dep in $deps; do mod_add "$dep"; done
    MOD_ORDER+=("$rel")
}
for m in "${MODULES[@]}"; do
    rel="$(mod_path "$m")"
    if [[ -z "$rel" ]]; then
        grep -qE "/${m}\.ko$" "$MODDIR/modules.builtin" 2>/dev/null && continue
        die "kernel module $m not found in $MODDIR (kernel $KVER)"
    fi
    mod_add "$rel"
done
# --module: added after the base modules; MOD_SEEN skips what the base already loads
BASE_MOD_COUNT=${#MOD_ORDER[@]}
for m in "${EXTRA_MODULES[@]}"; do
    rel="$(mod_path "$m")"
    if [[ -z "$rel" ]]; then
        grep -qE "/${m}\.ko$" "$MODDIR/modules.builtin" 2>/dev/null && continue
        die "kernel module $m (--module) not found in $MODDIR (kernel $KVER)"
    fi
    mod_add "$rel"
done
EXTRA_MOD_ORDER=("${MOD_ORDER[@]:$BASE_MOD_COUNT}")
MOD_ORDER=("${MOD_ORDER[@]:0:$BASE_MOD_COUNT}")

# ---------------------------------------------------------------- initramfs
# Two gzip'ed cpio archives, concatenated (the kernel unpacks them in order):
#   base  everything that depends only on the host packages and this script; cached in
#         $CACHE/initramfs/ under a key of this script, the kernel and the dpkg database;
#   run   the guest script, --bin/--lib/--file and their libraries; built every run.
ROOT="" # the tree being filled (base or run)

guest_path() { # host path -> guest path (merged /usr)
    case "$1" in
        /lib/* | /lib64/* | /bin/* | /sbin/*) echo "/usr$1" ;;
        *) echo "$1" ;;
    esac
}

declare -A COPIED=()
copy_file() { # host-src guest-dst
    local src="$1" dst="$2"
    [[ -n "${COPIED[$dst]:-}" ]] && return 0
    COPIED[$dst]=1
    mkdir -p "$ROOT$(dirname "$dst")"
    cp -L "$src" "$ROOT$dst" || die "cannot copy $src into the initramfs"
}

# Copies every shared library ldd lists for $1 (the full closure, ldd is recursive).
copy_deps() {
    local file="$1" out line lib
    # static executables, scripts and data files: ldd fails, nothing to copy
    out="$(LC_ALL=C ldd "$file" 2>&1)" || return 0
    if grep -q "not found" <<<"$out"; then
        die "missing shared libraries for $file:"$'\n'"$(grep "not found" <<<"$out")"
    fi
    while read -r line; do
        lib=""
        if [[ "$line" =~ =\>\ (/[^ ]+)\ \( ]]; then
            lib="${BASH_REMATCH[1]}"
        elif [[ "$line" =~ ^(/[^ ]+)\ \( ]]; then
            lib="${BASH_REMATCH[1]}"
        fi
        [[ -n "$lib" ]] && copy_file "$lib" "$(guest_path "$lib")"
    done <<<"$out"
    return 0
}

copy_with_deps() { # host-src guest-dst
    copy_file "$1" "$2"
    copy_deps "$1"
}

pack() { # tree-dir archive
    (cd "$1" && find . -mindepth 1 -print0 | LC_ALL=C sort -z |
        cpio --null -o -H newc -R +0:+0 --quiet | gzip -1 >"$2") ||
        die "building the initramfs archive $2 failed"
}

copy_modules() { # --module: dest-dir rel-path...; uncompressed, flat, load order in dest/load-order
    local dest="$1" rel name
    shift
    mkdir -p "$dest"
    : >"$dest/load-order"
    for rel in "$@"; do
        name="$(basename "$rel")"
        case "$name" in
            *.ko.xz) xz -dc "$MODDIR/$rel" >"$dest/${name%.xz}"; name="${name%.xz}" ;;
            *.ko.gz) gzip -dc "$MODDIR/$rel" >"$dest/${name%.gz}"; name="${name%.gz}" ;;
            *.ko.zst) zstd -qdc "$MODDIR/$rel" >"$dest/${name%.zst}"; name="${name%.zst}" ;;
            *) cp "$MODDIR/$rel" "$dest/$name" ;;
        esac
        echo "$name" >>"$dest/load-order"
    done
}

build_base() { # archive manifest
    local rel name applet p lib src d
    ROOT="$WORKDIR/initramfs-base"
    rm -rf "$ROOT"
    mkdir -p "$ROOT"/{usr/bin,usr/sbin,usr/lib/"$MULTIARCH",usr/lib64,usr/lib/modules,etc/libibverbs.d,proc,sys,dev,tmp,root,run,opt/bin,opt/lib,opt/share}
    # merged /usr like the host, so every path ldd prints resolves in the guest
    ln -s usr/bin "$ROOT/bin"
    ln -s usr/sbin "$ROOT/sbin"
    ln -s usr/lib64 "$ROOT/lib64"
    ln -s usr/lib "$ROOT/lib"

    copy_file "$BUSYBOX" /usr/bin/busybox
    copy_with_deps "$IP_BIN" /usr/bin/ip
    copy_with_deps "$RDMA_BIN" /usr/bin/rdma
    for p in "${BASE_PROGS[@]}"; do copy_with_deps "$p" "/usr/bin/$(basename "$p")"; done
    # dlopen'ed, so ldd of the programs does not list them
    copy_with_deps "$RXE_PROVIDER" "/usr/lib/$MULTIARCH/libibverbs/$(basename "$RXE_PROVIDER")"
    copy_file /etc/libibverbs.d/rxe.driver /etc/libibverbs.d/rxe.driver
    for lib in libibverbs.so.1 librdmacm.so.1 libnl-3.so.200 libnl-route-3.so.200 libgcc_s.so.1 libstdc++.so.6; do
        src=""
        for d in "/usr/lib/$MULTIARCH" "/lib/$MULTIARCH"; do
            [[ -e "$d/$lib" ]] && { src="$d/$lib"; break; }
        done
        [[ -n "$src" ]] || die "$lib not found on the host: run deploy/install-deps.sh"
        copy_with_deps "$src" "/usr/lib/$MULTIARCH/$lib"
    done
    # busybox applet links, created last so they never shadow the real programs
    while read -r applet; do
        [[ -z "$applet" || "$applet" == busybox ]] && continue
        [[ -e "$ROOT/usr/bin/$applet" || -e "$ROOT/usr/sbin/$applet" ]] && continue
        ln -s busybox "$ROOT/usr/bin/$applet"
    done < <("$BUSYBOX" --list)

    # kernel modules, flat, in load order
    : >"$ROOT/usr/lib/modules/load-order"
    for rel in "${MOD_ORDER[@]}"; do
        name="$(basename "$rel")"
        case "$name" in
            *.ko.xz) xz -dc "$MODDIR/$rel" >"$ROOT/usr/lib/modules/${name%.xz}"; name="${name%.xz}" ;;
            *.ko.gz) gzip -dc "$MODDIR/$rel" >"$ROOT/usr/lib/modules/${name%.gz}"; name="${name%.gz}" ;;
            *.ko.zst) zstd -qdc "$MODDIR/$rel" >"$ROOT/usr/lib/modules/${name%.zst}"; name="${name%.zst}" ;;
            *) cp "$MODDIR/$rel" "$ROOT/usr/lib/modules/$name" ;;
        esac
        echo "$name" >>"$ROOT/usr/lib/modules/load-order"
    done

    cat >"$ROOT/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
EOF
    cat >"$ROOT/etc/group" <<'EOF'
root:x:0:
nogroup:x:65534:
EOF
    cat >"$ROOT/etc/hosts" <<'EOF'
127.0.0.1 localhost
10.77.0.1 node-a
10.77.0.2 node-b
10.77.1.1 node-lo
EOF
    echo gdrmesh-vm >"$ROOT/etc/hostname"

    # /opt/export FILE [NAME]: prints FILE base64-encoded between marker lines on the
    # console; the harness writes it to WORKDIR/out/NAME after checking its sha256.
    cat >"$ROOT/opt/export" <<'EOF'
#!/bin/sh
# usage: /opt/export FILE [NAME]   (NAME: [A-Za-z0-9._-], default basename of FILE)
f="$1"
name="${2:-$(basename "$f")}"
[ -f "$f" ] || { echo "export: $f: no such file" >&2; exit 1; }
case "$name" in
    *[!A-Za-z0-9._-]* | "" | . | ..) echo "export: bad name '$name'" >&2; exit 1 ;;
esac
sum=$(sha256sum <"$f" | cut -d' ' -f1)
{
    echo "@@FILE $name@@"
    base64 <"$f" | sed 's/^/@@B /'
    echo "@@END $name $sum@@"
} >/dev/console
EOF

    # /opt/gid_index DEV [PORT]: prints the lowest GID index of DEV whose GID is an
    # IPv4-mapped RoCE v2 GID (::ffff:a.b.c.d). Exit 1 if there is none.
    cat >"$ROOT/opt/gid_index" <<'EOF'
#!/bin/sh
dev="$1"
port="${2:-1}"
d="/sys/class/infiniband/$dev/ports/$port"
[ -d "$d/gids" ] || { echo "gid_index: no device/port $dev/$port" >&2; exit 1; }
i=0
while [ -e "$d/gids/$i" ]; do
    gid=$(cat "$d/gids/$i" 2>/dev/null) || gid=""
    case "$gid" in
        0000:0000:0000:0000:0000:ffff:*)
            if [ "$gid" != "0000:0000:0000:0000:0000:ffff:0000:0000" ]; then
                echo "$i"
                exit 0
            fi
            ;;
    esac
    i=$((i + 1))
done
echo "gid_index: $dev port $port has no IPv4-mapped GID" >&2
exit 1
EOF

    cat >"$ROOT/init" <<'EOF'
#!/bin/sh
# gdrmesh Soft-RoCE guest init (generated by tests/softroce/vm.sh)
export PATH=/opt/bin:/opt:/usr/bin:/usr/sbin
export LD_LIBRARY_PATH=/opt/lib
export HOME=/root
verdict() { # code: hands the code to the host and stops the VM
    echo "@@GDRMESH_EXIT $1@@"
    sync
    code=$1
    [ "$code" -gt 127 ] && code=127
    # isa-debug-exit: qemu exits with 2*code+1
    if [ -e /dev/port ]; then
        printf "\\$(printf %o "$code")" | dd of=/dev/port bs=1 seek=244 count=1 conv=notrunc 2>/dev/null
    fi
    poweroff -f
    sleep 60
}
fail() {
    echo "guest-init: FAILED: $*"
    verdict 125
}
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /tmp
echo "@@GDRMESH_BOOT $(cut -d' ' -f1 /proc/uptime)@@"
hostname gdrmesh-vm

while read -r m; do
    insmod "/usr/lib/modules/$m" || fail "insmod $m"
done </usr/lib/modules/load-order
grep -q configfs /proc/filesystems && mount -t configfs configfs /sys/kernel/config 2>/dev/null

MTU=1500
for a in $(cat /proc/cmdline); do
    case "$a" in gdrmesh.mtu=*) MTU="${a#gdrmesh.mtu=}" ;; esac
done
IP=/usr/bin/ip
$IP link set lo up || fail "lo up"
$IP link add veth0 type veth peer name veth1 || fail "veth pair"
[ -e /sys/class/net/dummy0 ] || $IP link add dummy0 type dummy || fail "dummy0"
for i in veth0 veth1 dummy0; do
    $IP link set "$i" mtu "$MTU" || fail "mtu $MTU on $i"
done
$IP addr add 10.77.0.1/24 dev veth0 || fail "addr veth0"
$IP addr add 10.77.0.2/24 dev veth1 || fail "addr veth1"
$IP addr add 10.77.1.1/24 dev dummy0 || fail "addr dummy0"
for i in veth0 veth1 dummy0; do $IP link set "$i" up || fail "$i up"; done
# Two local addresses on the two ends of one veth pair: without this the kernel
# routes 10.77.0.1 <-> 10.77.0.2 through lo and the rxe QPs never reach RTR.
for i in all default veth0 veth1; do
    echo 1 >/proc/sys/net/ipv4/conf/$i/accept_local
    echo 0 >/proc/sys/net/ipv4/conf/$i/rp_filter
done
# A 1 MiB RDMA read is ~1024 packets at path MTU 1024, queued at once on the per-CPU
# backlog of the veth peer; the default netdev_max_backlog (1000) drops some and the
# retransmission timeouts cut ib_read_bw 1M from ~48 to ~12 MB/s under TCG.
echo 50000 >/proc/sys/net/core/netdev_max_backlog
$IP route add 10.77.0.2 dev veth0 src 10.77.0.1 table 100 || fail "route table 100"
$IP route add 10.77.0.1 dev veth1 src 10.77.0.2 table 100 || fail "route table 100"
$IP rule add pref 100 iif lo lookup 100 || fail "ip rule 100"
$IP rule add pref 1000 lookup local || fail "ip rule 1000"
$IP rule del pref 0 || fail "ip rule del 0"

/usr/bin/rdma link add rxe0 type rxe netdev veth0 || fail "rdma link add rxe0"
/usr/bin/rdma link add rxe1 type rxe netdev veth1 || fail "rdma link add rxe1"
/usr/bin/rdma link add rxe2 type rxe netdev dummy0 || fail "rdma link add rxe2"
for d in rxe0 rxe1 rxe2; do
    n=0
    until grep -q ACTIVE "/sys/class/infiniband/$d/ports/1/state" 2>/dev/null; do
        n=$((n + 1))
        [ $n -gt 200 ] && fail "$d port not ACTIVE after 10 s"
        usleep 50000
    done
    n=0
    until /opt/gid_index "$d" >/dev/null 2>&1; do
        n=$((n + 1))
        [ $n -gt 200 ] && fail "$d has no IPv4-mapped GID after 10 s"
        usleep 50000
    done
done
ulimit -l unlimited
echo "@@GDRMESH_READY $(cut -d' ' -f1 /proc/uptime)@@"

# kernel messages go to /opt/dmesg.log (exported), not into the console stream
dmesg -n 1
export GDRMESH_VM=1 RXE_A=rxe0 RXE_B=rxe1 RXE_LO=rxe2
export IP_A=10.77.0.1 IP_B=10.77.0.2 IP_LO=10.77.1.1 GDRMESH_VM_MTU="$MTU"
cd /tmp
/bin/sh /opt/test.sh </dev/null
rc=$?
echo "@@GDRMESH_SCRIPT_DONE $(cut -d' ' -f1 /proc/uptime)@@"
dmesg >/tmp/dmesg.log 2>&1 && /opt/export /tmp/dmesg.log dmesg.log
verdict "$rc"
EOF
    chmod 0755 "$ROOT/init" "$ROOT/opt/export" "$ROOT/opt/gid_index"
    pack "$ROOT" "$1.tmp.$$"
    printf '%s\n' "${!COPIED[@]}" >"$2.tmp.$$"
    mv "$2.tmp.$$" "$2"
    mv "$1.tmp.$$" "$1"
    rm -rf "$ROOT"
}

base_key() { # changes when this script, the kernel or any host package changes
    {
        sha256sum "${BASH_SOURCE[0]}"
        echo "$KROOT $KVER $MULTIARCH"
        stat -c '%n %s %Y' /var/lib/dpkg/status "$BUSYBOX" "$IP_BIN" "$RDMA_BIN" "$RXE_PROVIDER" "${BASE_PROGS[@]}"
    } | sha256sum | cut -c1-16
}

rm -rf "$WORKDIR/out"
mkdir -p "$WORKDIR/out" "$CACHE/initramfs"
BASE="$CACHE/initramfs/base-$(base_key).cpio.gz"
if [[ ! -f "$BASE" || ! -f "$BASE.list" ]]; then
    log "building the base initramfs (cached as $BASE)"
    find "$CACHE/initramfs" -name 'base-*' -mtime +7 -delete 2>/dev/null || true
    build_base "$BASE" "$BASE.list"
fi

# per-run archive; files already in the base archive are not copied again
ROOT="$WORKDIR/initramfs"
rm -rf "$ROOT"
mkdir -p "$ROOT"/opt/{bin,lib,share}
COPIED=()
while read -r f; do COPIED[$f]=1; done <"$BASE.list"
for b in "${BINS[@]}"; do
    copy_with_deps "$b" "/opt/bin/$(basename "$b")"
    chmod 0755 "$ROOT/opt/bin/$(basename "$b")"
done
for l in "${LIBS[@]}"; do copy_with_deps "$l" "/opt/lib/$(basename "$l")"; done
for f in "${FILES[@]}"; do copy_file "$f" "/opt/share/$(basename "$f")"; done
if [[ ${#EXTRA_MODULES[@]} -gt 0 ]]; then copy_modules "$ROOT/opt/modules" "${EXTRA_MOD_ORDER[@]}"; fi
# the perftest wrappers are part of every guest (sourced by guest scripts)
copy_file "$HERE/lib_perftest.sh" /opt/share/lib_perftest.sh
copy_file "$SCRIPT" /opt/test.sh
chmod 0755 "$ROOT/opt/test.sh"
pack "$ROOT" "$WORKDIR/run.cpio.gz"
INITRD="$WORKDIR/initrd.cpio.gz"
cat "$BASE" "$WORKDIR/run.cpio.gz" >"$INITRD"
T_BUILT=$(date +%s.%N)

# ---------------------------------------------------------------- boot
# KVM when /dev/kvm is usable AND qemu can start a vCPU on it: inside some VMs /dev/kvm exists
# but qemu aborts at once ("failed to set MSR 0x10a"); a paused 2-second start tells. A qemu
# that is still up when the probe's timeout ends (124) is a working KVM.
#
# That probe is not enough: on the CI machines (nested KVM) qemu starts fine under KVM, but the
# guest kernel hangs right after SeaBIOS's "Booting from ROM" and never reaches /init (CI,
# 2026-11-27: all four Soft-RoCE suites ran into their 600-900 s timeouts that way;
# `-cpu host,-arch-capabilities` and `-cpu qemu64` hang the same way). So a KVM boot has a
# watchdog: when /init's boot marker is not on the console within GDRMESH_VM_KVM_BOOT_S
# (default 30 s; a working KVM guest reaches it in about 1 s, TCG in 5-15 s), the VM is killed
# and booted again under TCG, and the finding is remembered for this host boot
# ($CACHE/accel/kvm-hangs-<boot_id>) so later runs go straight to TCG.
# GDRMESH_VM_ACCEL=tcg|kvm skips the probe and the watchdog.
ACCEL=(-accel tcg)
WATCH_KVM=0
T_KVM_LOST=""
BOOT_ID="$(cat /proc/sys/kernel/random/boot_id 2>/dev/null || echo unknown)"
KVM_MEMO="$CACHE/accel/kvm-hangs-$BOOT_ID"
KVM_BOOT_S="${GDRMESH_VM_KVM_BOOT_S:-30}"
[[ "$KVM_BOOT_S" =~ ^[1-9][0-9]*$ ]] || die "GDRMESH_VM_KVM_BOOT_S must be a whole number of seconds (got '$KVM_BOOT_S')"
case "${GDRMESH_VM_ACCEL:-auto}" in
    tcg) ;;
    kvm) ACCEL=(-accel kvm -cpu host) ;;
    auto)
        if [[ -f "$KVM_MEMO" ]]; then
            log "KVM guests hang on this host (found earlier this boot: $KVM_MEMO): TCG"
        elif [[ -r /dev/kvm && -w /dev/kvm ]]; then
            # (in a command substitution: the shell's "Aborted" notice stays off the log)
            probe_rc=$({
                timeout 2 "$QEMU" -accel kvm -cpu host -display none -S -nodefaults -m 64 \
                    </dev/null >/dev/null 2>&1
                echo $?
            } 2>/dev/null)
            if [[ $probe_rc -eq 124 ]]; then
                ACCEL=(-accel kvm -cpu host)
                WATCH_KVM=1
            else
                log "/dev/kvm is present but qemu cannot use it (probe exit $probe_rc): TCG"
            fi
        fi
        ;;
    *) die "GDRMESH_VM_ACCEL must be tcg, kvm or auto (got '$GDRMESH_VM_ACCEL')" ;;
esac
CONSOLE="$WORKDIR/console.log"

STREAM_PID=""
QEMU_PID=""
cleanup() {
    # shellcheck disable=SC2317 # invoked by the EXIT trap
    if [[ -n "$QEMU_PID" ]]; then kill "$QEMU_PID" 2>/dev/null || true; fi
    # shellcheck disable=SC2317
    if [[ -n "$STREAM_PID" ]]; then kill "$STREAM_PID" 2>/dev/null || true; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Starts qemu with ACCEL in the background (QEMU_PID) and, unless --quiet, the live view of its
# console (STREAM_PID).
# tsc=reliable: under TCG the kernel otherwise falls back to the HPET clocksource, where one
# clock_gettime costs ~0.9 us (measured) instead of ~0.1 us; real hosts use the TSC. perftest
# reads the TSC directly, so without this every clock-based tool pays a cost perftest does not.
# GDRMESH_VM_KVM_QEMU_EXTRA: extra qemu arguments for a KVM boot only, to try the watchdog on a
# host where KVM works ("-S" starts the vCPUs paused, which looks exactly like the hang above).
start_vm() {
    : >"$CONSOLE"
    log "booting kernel $KVER (${ACCEL[1]}, mtu $MTU, timeout ${TIMEOUT}s); console: $CONSOLE"
    local extra=()
    # shellcheck disable=SC2206 # word splitting wanted: a list of arguments
    [[ "${ACCEL[1]}" == kvm && -n "${GDRMESH_VM_KVM_QEMU_EXTRA:-}" ]] && extra=($GDRMESH_VM_KVM_QEMU_EXTRA)
    timeout -k 5 "$TIMEOUT" "$QEMU" -m "$MEM" -smp 2 "${ACCEL[@]}" -nographic -nic none -no-reboot \
        -kernel "$VMLINUZ" -initrd "$INITRD" \
        -append "console=ttyS0 quiet panic=-1 oops=panic tsc=reliable gdrmesh.mtu=$MTU" \
        -device isa-debug-exit,iobase=0xf4,iosize=0x04 "${extra[@]}" \
        </dev/null >"$CONSOLE" 2>&1 &
    QEMU_PID=$!
    if [[ "$QUIET" -eq 0 ]]; then
        # live view of the console without the base64 payload of exported files
        tail -n +1 -f --pid="$QEMU_PID" "$CONSOLE" 2>/dev/null |
            awk '{ sub(/\r$/, ""); gsub(/\033(\[[0-9;?]*[A-Za-z]|c)/, "") } /^@@B / { next } { print "  | " $0; fflush() }' >&2 &
        STREAM_PID=$!
    fi
}
stop_vm() {
    kill "$QEMU_PID" 2>/dev/null || true
    wait "$QEMU_PID" 2>/dev/null || true
    QEMU_PID=""
    if [[ -n "$STREAM_PID" ]]; then
        kill "$STREAM_PID" 2>/dev/null || true
        wait "$STREAM_PID" 2>/dev/null || true
        STREAM_PID=""
    fi
}

start_vm
if [[ "$WATCH_KVM" -eq 1 ]]; then
    # A watchdog, not a synchronisation: it polls the console of a guest it does not control.
    waited=0
    while kill -0 "$QEMU_PID" 2>/dev/null && ! grep -q '@@GDRMESH_BOOT ' "$CONSOLE"; do
        if ((waited >= KVM_BOOT_S * 4)); then
            stop_vm
            mkdir -p "$CACHE/accel"
            echo "KVM guest did not reach /init within ${KVM_BOOT_S}s ($(date -u +%FT%TZ), kernel $KVER)" >"$KVM_MEMO"
            log "the KVM guest did not reach /init within ${KVM_BOOT_S}s (nested KVM that hangs after the boot ROM): booting again under TCG; remembered in $KVM_MEMO"
            ACCEL=(-accel tcg)
            T_KVM_LOST=$(date +%s.%N)
            start_vm
            break
        fi
        sleep 0.25
        waited=$((waited + 1))
    done
fi
set +e
wait "$QEMU_PID"
QRC=$?
set -e
QEMU_PID=""
if [[ -n "$STREAM_PID" ]]; then
    wait "$STREAM_PID" 2>/dev/null || true
    STREAM_PID=""
fi
T_END=$(date +%s.%N)

# ---------------------------------------------------------------- results
# Exported files: "@@FILE name@@", "@@B <base64>" lines, "@@END name sha256@@".
extract_files() {
    local tmp="$WORKDIR/out.tmp" name sum got
    rm -rf "$tmp"
    mkdir -p "$tmp"
    tr -d '\r' <"$CONSOLE" | awk -v dir="$tmp" '
        /^@@FILE [A-Za-z0-9._-]+@@$/ { name = substr($2, 1, length($2) - 2); f = dir "/" name ".b64"; printf "" > f; next }
        /^@@B / && name != "" { print substr($0, 5) >> f; next }
        /^@@END / && name != "" { sum = $3; sub(/@@$/, "", sum); print sum > (dir "/" name ".sum"); close(f); name = ""; next }
    '
    for b in "$tmp"/*.b64; do
        [[ -e "$b" ]] || continue
        name="$(basename "$b" .b64)"
        if [[ ! -f "$tmp/$name.sum" ]]; then
            log "warning: exported file $name is truncated (no end marker)"
            continue
        fi
        sum="$(cat "$tmp/$name.sum")"
        if ! base64 -d <"$b" >"$WORKDIR/out/$name" 2>/dev/null; then
            log "warning: exported file $name is corrupt (bad base64; console lines interleaved?)"
            rm -f "$WORKDIR/out/$name"
            continue
        fi
        got="$(sha256sum <"$WORKDIR/out/$name" | cut -d' ' -f1)"
        if [[ "$got" != "$sum" ]]; then
            log "warning: exported file $name fails its sha256 check (console lines interleaved?)"
            mv "$WORKDIR/out/$name" "$WORKDIR/out/$name.corrupt"
        fi
    done
    rm -rf "$tmp"
}
extract_files

# (not anchored at the line start: the first line carries the terminal reset of SeaBIOS)
marker() { tr -d '\r' <"$CONSOLE" | sed -n "s/.*@@$1 \\([^@]*\\)@@\$/\\1/p" | tail -n1; }
BOOT_S="$(marker GDRMESH_BOOT)"
READY_S="$(marker GDRMESH_READY)"
DONE_S="$(marker GDRMESH_SCRIPT_DONE)"
MARK_RC="$(marker GDRMESH_EXIT)"
timing="build $(awk -v a="$T_START" -v b="$T_BUILT" 'BEGIN { printf "%.1f", b - a }')s"
if [[ -n "$T_KVM_LOST" ]]; then
    timing+=", lost to the hung KVM guest $(awk -v a="$T_BUILT" -v b="$T_KVM_LOST" 'BEGIN { printf "%.1f", b - a }')s"
    T_BUILT="$T_KVM_LOST"
fi
timing+=", vm wall $(awk -v a="$T_BUILT" -v b="$T_END" 'BEGIN { printf "%.1f", b - a }')s"
[[ -n "$BOOT_S" ]] && timing+=", guest: init at ${BOOT_S}s"
[[ -n "$READY_S" ]] && timing+=", rxe ready at ${READY_S}s"
[[ -n "$DONE_S" ]] && timing+=", script done at ${DONE_S}s"
exported="$(find "$WORKDIR/out" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort | tr '\n' ' ')"

if [[ "$QRC" -eq 124 || "$QRC" -eq 137 ]]; then
    log "TIMEOUT: the VM ran past ${TIMEOUT}s and was killed ($timing); see $CONSOLE"
    exit 124
fi
if [[ $((QRC % 2)) -eq 1 ]]; then
    RC=$(((QRC - 1) / 2))
elif [[ -n "$MARK_RC" ]]; then
    RC="$MARK_RC" # no isa-debug-exit (no /dev/port?): the console line still says it
else
    log "the guest died without a verdict (qemu exit $QRC: kernel panic, /init failure or qemu error; $timing)"
    log "last console lines ($CONSOLE):"
    tr -d '\r' <"$CONSOLE" | grep -v '^@@B ' | tail -n 30 | sed 's/^/  | /' >&2
    exit 125
fi
[[ "$RC" -gt 127 ]] && RC=127
log "guest script exited $RC ($timing)"
log "exported to $WORKDIR/out: ${exported:-nothing}"
exit "$RC"
# shellcheck disable=SC2317 # reached only when the code above did not exit
exit
}
