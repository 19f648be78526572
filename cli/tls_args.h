// The TLS options every command that talks gRPC shares: --tls-dir (or --cert/--key/--ca) for
// mutual TLS with the cluster's certificates, or --insecure for plaintext. Neither is a usage
// error: plaintext is only ever used when asked for (docs/security.md).
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "security/certs.h"
#include "security/policy.h"

namespace gdrmesh::cli {

struct TlsArgs {
  std::string dir;  // --tls-dir: DIR/ca.pem, DIR/cert.pem, DIR/key.pem
  std::string cert;
  std::string key;
  std::string ca;
  bool insecure = false;
};

// Adds --tls-dir, --cert, --key, --ca and --insecure (--tls-ca instead of --ca on a command that
// has a --ca of its own: `fabric discover --ca HCA`). `env_insecure`: GDRMESH_INSECURE also
// sets --insecure (clients and workers; the coordinator takes only the flag).
void addTlsOptions(CLI::App* cmd, TlsArgs* args, bool env_insecure);

// The TLS material of the options, checked (security/certs.h loadTls) for one of `roles`;
// nullopt for --insecure. Errors name the flag and the fix.
Result<std::optional<TlsMaterial>> resolveTls(const TlsArgs& args,
                                              const std::vector<PeerRole>& roles,
                                              CertInfo* info = nullptr);

}  // namespace gdrmesh::cli
