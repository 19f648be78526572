# shellcheck shell=sh
# lib_cluster.sh - a gdrmesh cluster inside the Soft-RoCE VM, for guest scripts (sourced; vm.sh
# puts --file arguments in /opt/share). Waits on conditions, never on fixed sleeps.
#
#   cluster_start_coordinator [extra coordinator flags...]   sets and exports GDRMESH_COORDINATOR
#                                                             and GDRMESH_INSECURE=1 (loopback),
#                                                             and `coordinator` (its pid)
#   cluster_start_worker NAME [PREFIX] [extra worker flags...] PREFIX: a command prefix such as
#                                                             "taskset -c 1" ("" for none)
#   cluster_wait_online N                                     until N workers are online

cluster_start_coordinator() {
  # Loopback inside the VM: plaintext, asked for explicitly (docs/security.md).
  gdrmesh coordinator --listen 127.0.0.1:0 --db /tmp/results.db --port-file /tmp/port --insecure "$@" \
    >/tmp/coordinator.log 2>&1 &
  # shellcheck disable=SC2034 # read by the sourcing script
  coordinator=$!
  _i=0
  while [ ! -s /tmp/port ] && [ $_i -lt 200 ]; do usleep 50000; _i=$((_i + 1)); done
  [ -s /tmp/port ] || { echo "coordinator did not start"; cat /tmp/coordinator.log; exit 1; }
  GDRMESH_COORDINATOR="127.0.0.1:$(cat /tmp/port)"
  GDRMESH_INSECURE=1
  export GDRMESH_COORDINATOR GDRMESH_INSECURE
}

cluster_start_worker() {
  _name=$1
  _prefix=$2
  shift 2
  # shellcheck disable=SC2086 # the prefix is a command and its arguments
  # CLUSTER_BIN: another gdrmesh build for this worker (guest_compare.sh's before binary).
  $_prefix "${CLUSTER_BIN:-gdrmesh}" worker --name "$_name" --no-cuda "$@" >"/tmp/worker-$_name.log" 2>&1 &
}

cluster_wait_online() {
  _i=0
  while [ $_i -lt 200 ]; do
    _n=$(gdrmesh workers -o json 2>/dev/null | grep -c '"state": "online"')
    [ "$_n" -ge "$1" ] && return 0
    usleep 50000
    _i=$((_i + 1))
  done
  echo "only $_n of $1 workers came online"
  return 1
}
