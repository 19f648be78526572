#include "security/grpc_tls.h"

#include <grpcpp/grpcpp.h>

#include "security/certs.h"

namespace gdrmesh {

std::shared_ptr<grpc::ServerCredentials> serverCredentials(const std::optional<TlsMaterial>& tls) {
  if (!tls) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions o(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  o.pem_root_certs = tls->ca_pem;
  o.pem_key_cert_pairs.push_back({tls->key_pem, tls->cert_pem});
  return grpc::SslServerCredentials(o);
}

std::shared_ptr<grpc::ChannelCredentials> channelCredentials(
    const std::optional<TlsMaterial>& tls) {
  if (!tls) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions o;
  o.pem_root_certs = tls->ca_pem;
  o.pem_private_key = tls->key_pem;
  o.pem_cert_chain = tls->cert_pem;
  return grpc::SslCredentials(o);
}

Result<CertInfo> peerCertificate(const grpc::AuthContext* ctx) {
  const std::string fix =
      "connect with a certificate of this cluster's CA (--tls-dir, see `gdrmesh certs issue`)";
  if (ctx == nullptr || !ctx->IsPeerAuthenticated()) {
    return Status(Code::kPermissionDenied, "the client presented no certificate", fix);
  }
  auto pems = ctx->FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME);
  if (pems.empty()) {
    return Status(Code::kPermissionDenied, "the client presented no certificate", fix);
  }
  auto info =
      parseCertificate(std::string(pems.front().data(), pems.front().size()), "client certificate");
  if (!info.ok()) {
    return Status(Code::kPermissionDenied, info.status().message(), info.status().fix());
  }
  return info;
}

Result<PeerIdentity> peerIdentity(const grpc::AuthContext* ctx, RevocationList* revoked) {
  GDR_ASSIGN_OR_RETURN(CertInfo info, peerCertificate(ctx));
  if (revoked != nullptr) GDR_RETURN_IF_ERROR(revoked->check(info));
  return info.identity;
}

std::string tlsFailureHint(const std::string& grpc_message, bool client_uses_tls) {
  const std::string& m = grpc_message;
  auto has = [&m](const char* t) { return m.find(t) != std::string::npos; };
  if (client_uses_tls && has("wrong version number")) {
    return "the coordinator answered in plaintext: it runs with --insecure; use --insecure "
           "too (loopback only), or restart it with --tls-dir";
  }
  if (has("handshake") || has("SSL") || has("ssl") || has("certificate") || has("Socket closed") ||
      has("Connection reset")) {
    if (client_uses_tls) {
      return "the TLS handshake failed: check that the coordinator serves TLS with a certificate "
             "of the same CA (ca.pem), that the address is one of its certificate's names "
             "(`gdrmesh certs issue --role coordinator --san HOST`), and that this client's "
             "certificate is valid";
    }
    return "this client speaks plaintext (--insecure) but the coordinator may serve TLS: pass "
           "--tls-dir DIR (or set GDRMESH_TLS_DIR) with a certificate of the cluster's CA";
  }
  return "";
}

}  // namespace gdrmesh
