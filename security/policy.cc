#include "security/policy.h"

#include <algorithm>
#include <cctype>

namespace gdrmesh {

namespace {

struct RoleName {
  PeerRole role;
  const char* name;
};
constexpr RoleName kRoles[] = {{PeerRole::kCoordinator, "coordinator"},
                               {PeerRole::kWorker, "worker"},
                               {PeerRole::kSimulator, "simulator"},
                               {PeerRole::kAdmin, "admin"},
                               {PeerRole::kReader, "reader"}};

}  // namespace

const char* toString(PeerRole role) {
  for (const auto& r : kRoles) {
    if (r.role == role) return r.name;
  }
  return "unknown";
}

std::vector<std::string> roleNames() {
  std::vector<std::string> out;
  for (const auto& r : kRoles) out.emplace_back(r.name);
  return out;
}

Result<PeerRole> parseRole(const std::string& text, const std::string& field) {
  for (const auto& r : kRoles) {
    if (text == r.name) return r.role;
  }
  std::string all;
  for (const auto& r : kRoles) all += (all.empty() ? "" : ", ") + std::string(r.name);
  return invalidArgument(field + ": unknown role '" + text + "'", "use one of " + all);
}

std::string PeerIdentity::describe() const {
  return std::string(toString(role)) + " '" + name + "'";
}

bool validIdentityName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

Status authorizeControl(const PeerIdentity& peer, Access access, const std::string& rpc) {
  const bool admin = peer.role == PeerRole::kAdmin;
  const bool reader = peer.role == PeerRole::kReader;
  if (admin || (access == Access::kRead && reader)) return {};
  const char* needs = access == Access::kAdmin ? "an admin" : "a reader or admin";
  return Status(Code::kPermissionDenied,
                rpc + " needs " + needs + " credential; this client is " + peer.describe(),
                access == Access::kAdmin
                    ? "use a certificate issued with `gdrmesh certs issue --role admin`"
                    : "use a certificate issued with `gdrmesh certs issue --role reader` (or "
                      "admin)");
}

Status authorizeRegister(const PeerIdentity& peer, const std::string& name, bool simulated) {
  if (peer.role == PeerRole::kWorker) {
    if (simulated) {
      return Status(Code::kPermissionDenied,
                    "worker certificate '" + peer.name + "' cannot register simulated workers",
                    "simulated workers use a certificate issued with --role simulator");
    }
    if (name != peer.name) {
      return Status(Code::kPermissionDenied,
                    "worker name '" + name + "' is not the name in this worker's certificate ('" +
                        peer.name + "')",
                    "start the worker with --name " + peer.name +
                        ", or issue it a certificate with `gdrmesh certs issue --role worker "
                        "--name " +
                        name + "`");
    }
    return {};
  }
  if (peer.role == PeerRole::kSimulator) {
    if (!simulated) {
      return Status(Code::kPermissionDenied,
                    "simulator certificate '" + peer.name + "' may only register simulated workers",
                    "a real worker needs its own certificate: `gdrmesh certs issue --role worker "
                    "--name " +
                        name + "`");
    }
    const std::string prefix = peer.name + "-";
    if (name.compare(0, prefix.size(), prefix) != 0) {
      return Status(Code::kPermissionDenied,
                    "simulated worker name '" + name + "' does not start with '" + prefix +
                        "' (the simulator certificate's name)",
                    "run `gdrmesh worker --simulate` with --sim-prefix " + peer.name);
    }
    return {};
  }
  return Status(Code::kPermissionDenied,
                "registering worker '" + name + "' needs a worker certificate; this client is " +
                    peer.describe(),
                "issue one with `gdrmesh certs issue --role worker --name " + name + "`");
}

std::string listenHost(const std::string& listen) {
  if (!listen.empty() && listen[0] == '[') {
    auto close = listen.find(']');
    return close == std::string::npos ? listen : listen.substr(0, close + 1);
  }
  auto colon = listen.rfind(':');
  return colon == std::string::npos ? listen : listen.substr(0, colon);
}

bool isLoopbackHost(const std::string& host) {
  if (host == "localhost" || host == "[::1]" || host == "::1") return true;
  // 127.0.0.0/8 written as a dotted quad.
  if (host.compare(0, 4, "127.") != 0) return false;
  int dots = 0;
  for (char c : host) {
    if (c == '.') {
      ++dots;
    } else if (!std::isdigit(static_cast<unsigned char>(c))) {
      return false;
    }
  }
  return dots == 3;
}

Status checkPlaintextListen(const std::string& listen, bool allow_remote) {
  const std::string host = listenHost(listen);
  if (isLoopbackHost(host) || allow_remote) return {};
  return invalidArgument(
      "--insecure: refusing plaintext gRPC on " + listen + " ('" + host +
          "' is not a loopback address): anyone who reaches it could register workers and start "
          "tests",
      "serve TLS with --tls-dir DIR (see `gdrmesh certs`), listen on 127.0.0.1, or force "
      "plaintext with --insecure-allow-remote");
}

}  // namespace gdrmesh
