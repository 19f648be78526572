// Who a control-plane peer is and what it may do. Pure: no OpenSSL, no gRPC, no sockets, so the
// rules are unit-tested on their own (tests/unit/security) and the service layers only map a
// verified certificate to a PeerIdentity and a Status to a gRPC status.
//
// Roles (the OU of a certificate the cluster CA issued, see security/certs.h):
//   coordinator  the server; never a client of its own services
//   worker       registers exactly the worker name in its certificate (CN), nothing else
//   simulator    registers simulated workers named "<CN>-*" (`gdrmesh worker --simulate`),
//                which only ever offer the simulated transport; never a real worker
//   admin        every ControlService RPC: tests, sweeps, schedules, and reads
//   reader       read-only ControlService RPCs (list workers, results, sweeps, schedules)
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace gdrmesh {

enum class PeerRole { kCoordinator, kWorker, kSimulator, kAdmin, kReader };

const char* toString(PeerRole role);
// "coordinator" | "worker" | "simulator" | "admin" | "reader"; the error names `field`.
Result<PeerRole> parseRole(const std::string& text, const std::string& field);
std::vector<std::string> roleNames();

// The verified identity of a peer: the role and name of its client certificate.
struct PeerIdentity {
  PeerRole role = PeerRole::kReader;
  std::string name;
  std::string describe() const;  // "admin 'alice'"
};

// A node's TLS material, PEM text: the cluster CA, its own certificate and private key.
struct TlsMaterial {
  std::string ca_pem;
  std::string cert_pem;
  std::string key_pem;
};

// Names in certificates: 1-64 characters from A-Z a-z 0-9 . _ - (the worker-name alphabet).
bool validIdentityName(const std::string& name);

// What a ControlService RPC needs.
enum class Access { kRead, kAdmin };

// Whether `peer` may call `rpc` that needs `access`: PERMISSION_DENIED naming the RPC, the
// peer and the credential it needs otherwise.
Status authorizeControl(const PeerIdentity& peer, Access access, const std::string& rpc);

// Whether `peer` may register the worker `name` (`simulated`: Register.simulated).
// PERMISSION_DENIED naming both names otherwise.
Status authorizeRegister(const PeerIdentity& peer, const std::string& name, bool simulated);

// The host part of "HOST:PORT" / "[V6]:PORT" (brackets kept: "[::1]").
std::string listenHost(const std::string& listen);
// 127.0.0.0/8, ::1 and "localhost". 0.0.0.0, [::] and every other name are not loopback.
bool isLoopbackHost(const std::string& host);
// Plaintext (--insecure) is only for loopback unless `allow_remote` (--insecure-allow-remote).
Status checkPlaintextListen(const std::string& listen, bool allow_remote);

}  // namespace gdrmesh
