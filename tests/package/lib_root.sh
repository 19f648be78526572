# Sourced by tests/package/*/run_*.sh: the clean Debian 12 root they share.
# debian12_tarball CACHE_DIR: prints the path of a tarball of a minimal Debian 12 root
# (mmdebstrap --variant=apt: Essential packages and apt), made on first use and again once it is
# 14 days old, under an exclusive lock (two runs on one machine make it once).
debian12_tarball() {
  local cache=$1 tarball=$1/debian12-apt.tar
  mkdir -p "$cache"
  (
    flock 9
    if [[ ! -f $tarball ]] || [[ -n $(find "$tarball" -mtime +14) ]]; then
      echo "--- making the Debian 12 root (mmdebstrap bookworm, variant apt) -> $tarball" >&2
      rm -rf "$tarball.tmp"
      mmdebstrap --quiet --variant=apt --mode=root --format=tar bookworm "$tarball.tmp" >&2 ||
        exit 1
      mv "$tarball.tmp" "$tarball"
    fi
  ) 9>"$cache/debian12-apt.lock" || return 1
  echo "$tarball"
}
