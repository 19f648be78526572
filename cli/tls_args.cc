#include "cli/tls_args.h"

#include <chrono>
#include <cstdlib>

namespace gdrmesh::cli {

void addTlsOptions(CLI::App* cmd, TlsArgs* a, bool env_insecure) {
  const char* group = "Security (docs/security.md)";
  cmd->add_option("--tls-dir", a->dir,
                  "mutual TLS with the cluster's certificates: DIR/ca.pem, DIR/cert.pem, "
                  "DIR/key.pem (from `gdrmesh certs issue`; env GDRMESH_TLS_DIR)")
      ->envname("GDRMESH_TLS_DIR")
      ->group(group);
  cmd->add_option("--cert", a->cert, "this node's certificate (PEM; overrides --tls-dir's)")
      ->group(group);
  cmd->add_option("--key", a->key, "this node's private key (PEM; overrides --tls-dir's)")
      ->group(group);
  // A command with a --ca of its own (`fabric discover --ca mlx5_0`: the local HCA) takes the
  // cluster CA as --tls-ca.
  const bool own_ca = cmd->get_option_no_throw("--ca") != nullptr;
  cmd->add_option(own_ca ? "--tls-ca" : "--ca", a->ca,
                  "the cluster CA certificate (PEM; overrides --tls-dir's)")
      ->group(group);
  auto* f =
      cmd->add_flag("--insecure", a->insecure,
                    env_insecure ? "plaintext gRPC, no authentication (loopback tests only; env "
                                   "GDRMESH_INSECURE=1)"
                                 : "plaintext gRPC, no authentication: loopback only unless "
                                   "--insecure-allow-remote")
          ->group(group);
  if (env_insecure) f->envname("GDRMESH_INSECURE");
}

namespace {

bool envSet(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0';
}

}  // namespace

Result<std::optional<TlsMaterial>> resolveTls(const TlsArgs& args,
                                              const std::vector<PeerRole>& roles, CertInfo* info) {
  TlsArgs a = args;
  // A flag on the command line beats the environment: `--insecure` with GDRMESH_TLS_DIR set,
  // or `--tls-dir` with GDRMESH_INSECURE=1 set, means the flag.
  const char* env_dir = std::getenv("GDRMESH_TLS_DIR");
  const bool dir_from_env = !a.dir.empty() && env_dir != nullptr && a.dir == env_dir &&
                            a.cert.empty() && a.key.empty() && a.ca.empty();
  const bool insecure_from_env = a.insecure && envSet("GDRMESH_INSECURE");
  if (a.insecure && dir_from_env && !insecure_from_env) a.dir.clear();
  const bool tls_on_command_line =
      (!a.dir.empty() && !dir_from_env) || !a.cert.empty() || !a.key.empty() || !a.ca.empty();
  if (insecure_from_env && tls_on_command_line) a.insecure = false;
  const bool any_tls = !a.dir.empty() || !a.cert.empty() || !a.key.empty() || !a.ca.empty();
  if (a.insecure && any_tls) {
    return invalidArgument("--insecure: cannot be combined with --tls-dir/--cert/--key/--ca",
                           "pick one (is GDRMESH_TLS_DIR or GDRMESH_INSECURE set in the "
                           "environment?)");
  }
  if (a.insecure) return std::optional<TlsMaterial>();
  if (!any_tls) {
    return invalidArgument(
        "no TLS credentials: the control plane is TLS with client certificates unless plaintext "
        "is asked for",
        "pass --tls-dir DIR (or set GDRMESH_TLS_DIR) with a certificate from `gdrmesh certs "
        "issue`, or --insecure for plaintext on loopback (see docs/security.md)");
  }
  TlsPaths p = a.dir.empty() ? TlsPaths{} : tlsDirPaths(a.dir);
  if (!a.cert.empty()) p.cert = a.cert;
  if (!a.key.empty()) p.key = a.key;
  if (!a.ca.empty()) p.ca = a.ca;
  for (const auto& [path, flag] :
       {std::pair{p.cert, "--cert"}, std::pair{p.key, "--key"}, std::pair{p.ca, "--ca"}}) {
    if (path.empty()) {
      return invalidArgument(std::string(flag) + ": required without --tls-dir",
                             "pass --tls-dir DIR, or all of --cert, --key and --ca");
    }
  }
  const std::string flag = a.dir.empty() ? "--cert/--key/--ca" : "--tls-dir " + a.dir;
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  auto m = loadTls(p, roles, now_ms, flag, info);
  if (!m.ok()) return m.status();
  return std::optional<TlsMaterial>(std::move(*m));
}

}  // namespace gdrmesh::cli
