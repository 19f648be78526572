# shellcheck shell=bash
# Sourced by the coordinator benchmarks: plaintext on loopback, asked for explicitly, or (with
# TLS=1 as the first argument) mutual TLS with a CA, a coordinator, an admin (the CLI) and a
# simulator certificate in DIR/pki. Sets coord_tls and sim_tls (arguments for the coordinator
# and the simulated workers) and exports GDRMESH_INSECURE or GDRMESH_TLS_DIR for the CLI.
#   bench_tls TLS BIN DIR
bench_tls() {
  local tls=$1 bin=$2 dir=$3
  export GDRMESH_INSECURE=1
  coord_tls=(--insecure)
  sim_tls=()
  [[ "$tls" == "1" ]] || return 0
  unset GDRMESH_INSECURE
  "$bin" certs init --dir "$dir/pki" >/dev/null
  "$bin" certs issue --dir "$dir/pki" --role coordinator --name coordinator --san 127.0.0.1 >/dev/null
  "$bin" certs issue --dir "$dir/pki" --role admin --name bench >/dev/null
  "$bin" certs issue --dir "$dir/pki" --role simulator --name sim >/dev/null
  coord_tls=(--tls-dir "$dir/pki/coordinator")
  sim_tls=(--tls-dir "$dir/pki/sim")
  export GDRMESH_TLS_DIR="$dir/pki/bench"
}
