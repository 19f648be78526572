// The cluster's certificates, with the OpenSSL library: a cluster CA, and certificates it
// issues to the coordinator, workers, simulators, admins and readers (ECDSA P-256, SHA-256).
// A certificate's identity is its subject: O=gdrmesh, OU=<role>, CN=<name> (security/policy.h
// says what each role may do). Private keys are written 0600, their folders 0700.
//
// Layout (docs/security.md):
//   CA folder (`gdrmesh certs init --dir D`):   D/ca.pem, D/ca.key
//   a node's TLS folder (`gdrmesh certs issue --dir D ... [--out O]`, default O = D/NAME):
//                                                O/ca.pem, O/cert.pem, O/key.pem
// `--tls-dir O` on the coordinator, a worker or the CLI reads exactly those three files.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "security/policy.h"

namespace gdrmesh {

// What a certificate says, as far as gdrmesh cares.
struct CertInfo {
  PeerIdentity identity;
  int64_t not_before_ms = 0;
  int64_t not_after_ms = 0;
  std::string subject;  // "O=gdrmesh, OU=worker, CN=gpu-01"
  std::string issuer;
  std::string serial;  // upper-case hex, as `openssl x509 -serial` prints it
};

// Parses a PEM certificate (the first one in `pem`). The identity needs O=gdrmesh, an OU that
// is a role and a CN that is a valid name; errors name `what` (a file or "peer certificate").
Result<CertInfo> parseCertificate(const std::string& pem, const std::string& what);

struct TlsPaths {
  std::string ca;
  std::string cert;
  std::string key;
};
// DIR/ca.pem, DIR/cert.pem, DIR/key.pem.
TlsPaths tlsDirPaths(const std::string& dir);

// Reads a node's TLS files and checks them before any connection is made, so that a mistake
// is reported as such and not as "unreachable": each file exists and parses, the key belongs
// to the certificate, the certificate is valid at `now_ms` and issued by the CA, and its role
// is one of `roles`. `flag` names the option the paths came from ("--tls-dir /etc/gdrmesh").
Result<TlsMaterial> loadTls(const TlsPaths& paths, const std::vector<PeerRole>& roles,
                            int64_t now_ms, const std::string& flag, CertInfo* info = nullptr);

struct CaOptions {
  std::string dir;
  std::string name = "gdrmesh cluster CA";
  int days = 3650;
  bool force = false;  // overwrite an existing CA (every certificate it issued stops working)
};
// Writes DIR/ca.pem and DIR/ca.key (0600); refuses to overwrite unless `force`.
Status initCa(const CaOptions& options);

struct IssueOptions {
  std::string ca_dir;
  PeerRole role = PeerRole::kWorker;
  std::string name;
  // Extra subjectAltNames: host names and IP addresses the coordinator is reached at. The
  // coordinator's certificate always carries its name as a DNS name too.
  std::vector<std::string> sans;
  int days = 365;
  std::string out_dir;                  // default: CA_DIR/NAME
  std::optional<int64_t> not_before_s;  // default: now - 5 minutes (tests: expired certificates)
  bool force = false;                   // overwrite existing files in out_dir
};
// Writes OUT/ca.pem, OUT/cert.pem and OUT/key.pem (0600); returns OUT.
Result<std::string> issueCertificate(const IssueOptions& options);

// Revocation (`gdrmesh certs revoke`): the CA's certificate revocation list, CA_DIR/crl.pem, an
// X.509 v2 CRL signed by the CA key. Revoking adds the certificate's serial to the list (kept
// entries stay) and signs it again, valid for `days`, with a CRL number (RFC 5280 5.2.3) one
// above the list it replaces (1 for the first): the coordinator refuses a list older than the
// newest it has used (security/revocation.h). The coordinator reads the file given
// with --crl and refuses every call made with a revoked certificate (security/revocation.h).
struct RevokeOptions {
  std::string ca_dir;
  std::string cert_file;  // the certificate to revoke (a node's cert.pem)
  int days = 30;          // the list's nextUpdate
};
struct RevokeOutcome {
  std::string crl_path;
  CertInfo revoked;
  size_t entries = 0;    // serials the list holds now
  bool already = false;  // the serial was on the list before
};
Result<RevokeOutcome> revokeCertificate(const RevokeOptions& options);

// The serials a CRL (PEM) revokes, after checking that the CA of `ca_pem` issued and signed
// it. Errors name `what` (the file) and the fix.
struct RevokedSerials {
  std::vector<std::string> serials;  // upper-case hex, sorted
  std::optional<uint64_t> number;    // the CRL number extension; none, or one over 64 bits
  int64_t this_update_ms = 0;
  int64_t next_update_ms = 0;  // 0: none given
};
Result<RevokedSerials> loadCrl(const std::string& crl_pem, const std::string& ca_pem,
                               const std::string& what);

}  // namespace gdrmesh
