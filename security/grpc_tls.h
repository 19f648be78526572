// gRPC's side of the control plane's security, for the service layers (coordinator/service,
// worker/service, worker/simulate, cli): credentials from TlsMaterial, and the identity of the
// peer of a call from its verified client certificate.
#pragma once

#include <grpcpp/security/auth_context.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>

#include <memory>
#include <optional>

#include "common/status.h"
#include "security/certs.h"
#include "security/policy.h"
#include "security/revocation.h"

namespace gdrmesh {

// TLS 1.2+ with a client certificate required and verified against `tls->ca_pem`; nullopt:
// plaintext (--insecure).
std::shared_ptr<grpc::ServerCredentials> serverCredentials(const std::optional<TlsMaterial>& tls);

// TLS with this node's certificate as the client certificate, the server verified against the
// CA and its name (the host of the target) against the server certificate's names; nullopt:
// plaintext (--insecure).
std::shared_ptr<grpc::ChannelCredentials> channelCredentials(const std::optional<TlsMaterial>& tls);

// The peer of a call on a TLS server: its verified certificate (role, name, serial).
// PERMISSION_DENIED when there is none (plaintext, or no client certificate) or it is not a
// gdrmesh identity.
Result<CertInfo> peerCertificate(const grpc::AuthContext* ctx);
// The same, as role and name; with `revoked`, PERMISSION_DENIED for a revoked certificate too.
Result<PeerIdentity> peerIdentity(const grpc::AuthContext* ctx, RevocationList* revoked = nullptr);

// A hint for a client whose channel failed, by gRPC's error text: a TLS handshake failure
// or a plaintext client to a TLS server (and the other way round) says what to check.
// "" when the text shows nothing about TLS.
std::string tlsFailureHint(const std::string& grpc_message, bool client_uses_tls);

}  // namespace gdrmesh
