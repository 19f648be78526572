# shellcheck shell=bash
# The fabric tests' common set-up (tests/fabric/README.md), sourced by their scripts: a generated
# fat tree served by ibsim, routed once by OpenSM's ftree, the tools run "on" its first host
# through umad2sim. Each function says what went wrong and returns 1; the caller decides how to
# fail (its own `fail`, or `exit 1`).
#
#   fabric_require TOOL...       exit 77 (ctest: skipped) naming what is missing; sets umad2sim
#   fabric_sim_start WORK NAME   serve WORK/net with ibsim (socket gdrmesh-NAME-PID), wait until
#                                it is ready; sets sim_pid, first_host, sim_env, fd 9 (console)
#   fabric_route WORK            OpenSM's ftree, told the tree's roots; sets fabric_engine
#                                (GDRMESH_FABRIC_NO_ROOTS=1: without them, to compare by hand)
#   fabric_reroute WORK          OpenSM's ftree again (after a fault), told the roots fabric_route
#                                found: a failed cable leaves the top level as it was
#   fabric_sim_stop              stop the simulator fabric_sim_start started (and only it)
#
# The roots (`opensm -a`, root_guid_file): the switches of the top level, ranked from the cables
# as `fabric_check.py roots` does (leaves 0, the others by distance). Without them ftree insists
# on a pure fat tree (fabric_validate_topology in osm_ucast_ftree.c: "ERR AB0A: Different number
# of downward port groups on switches") and falls back to minhop after a single failed cable;
# with them it routes the tree (docs/fabric.md, "OpenSM's ftree after a failed link").

fabric_lib_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

skip() {
  echo "SKIPPED: $*"
  exit 77
}

fabric_require() {
  local tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null ||
      skip "$tool is not installed (deploy/install-deps.sh installs ibsim-utils opensm infiniband-diags)"
  done
  umad2sim="$(dpkg -L libumad2sim0 2>/dev/null | grep '/libumad2sim.so$' | head -1 || true)"
  [[ -n "$umad2sim" && -f "$umad2sim" ]] ||
    skip "libumad2sim.so not found (package libumad2sim0, with ibsim-utils)"
}

fabric_sim_start() {
  local work="$1" name="$2"
  first_host=$(grep -m1 '^Hca' "$work/net" | sed 's/.*"\(h[0-9]*\)".*/\1/')
  # ibsim reads its console from a fifo held open on fd 9 (closing it ends ibsim); its socket
  # name is unique to this run, so tests can run side by side.
  export IBSIM_SOCKNAME="gdrmesh-$name-$$"
  rm -f "$work/console"
  mkfifo "$work/console"
  ibsim -s -N 4096 -S 1024 -P 16384 "$work/net" <"$work/console" >"$work/ibsim.log" 2>&1 &
  sim_pid=$!
  exec 9>"$work/console"
  sim_env=(env SIM_HOST="$first_host" LD_PRELOAD="$umad2sim" OSM_TMP_DIR="$work"
           OSM_CACHE_DIR="$work")
  local _
  for _ in $(seq 1 300); do  # ready when its log says so (an event, bounded: 30 s)
    grep -q "Network simulator ready" "$work/ibsim.log" && return 0
    kill -0 "$sim_pid" 2>/dev/null || {
      cat "$work/ibsim.log"
      echo "ibsim exited"
      return 1
    }
    sleep 0.1
  done
  tail "$work/ibsim.log"
  echo "ibsim not ready after 30 s"
  return 1
}

fabric_route() {
  local work="$1"
  "${sim_env[@]}" ibnetdiscover >"$work/ibnetdiscover-roots.txt" 2>"$work/ibnetdiscover-roots.err" || {
    cat "$work/ibnetdiscover-roots.err"
    echo "ibnetdiscover failed (the roots for OpenSM)"
    return 1
  }
  python3 "$fabric_lib_dir/fabric_check.py" roots "$work/ibnetdiscover-roots.txt" >"$work/roots.txt" || {
    echo "no roots found in ibnetdiscover's output"
    return 1
  }
  local roots=(-a "$work/roots.txt")
  # GDRMESH_FABRIC_NO_ROOTS=1: OpenSM as before the roots were passed (to compare, by hand).
  [[ -n "${GDRMESH_FABRIC_NO_ROOTS:-}" ]] && roots=()
  fabric_opensm "$work" "${roots[@]}"
}

fabric_reroute() {
  local work="$1"
  [[ -s "$work/roots.txt" ]] || {
    echo "no roots: fabric_route must run first"
    return 1
  }
  fabric_opensm "$work" -a "$work/roots.txt"
}

# One OpenSM sweep (-o: routes, then exits) with ftree and the extra arguments; sets fabric_engine.
fabric_opensm() {
  local work="$1"
  shift
  "${sim_env[@]}" opensm -o -R ftree "$@" -f "$work/opensm.log" >"$work/opensm.out" 2>&1 || {
    tail -20 "$work/opensm.log"
    echo "opensm failed"
    return 1
  }
  fabric_engine=$(grep -oE '(ftree|minhop|updn|dor) tables configured' "$work/opensm.log" |
                  tail -1 | cut -d' ' -f1 || true)
}

fabric_sim_stop() {
  exec 9>&- 2>/dev/null || true
  [[ -n "${sim_pid:-}" ]] && kill "$sim_pid" 2>/dev/null || true
  [[ -n "${sim_pid:-}" ]] && wait "$sim_pid" 2>/dev/null || true
  sim_pid=""
}
