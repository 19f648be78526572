// The transport contract (tests/unit/emulated/transport_contract.h) for the verbs transport.
// run_contract.sh runs it inside the Soft-RoCE VM (ctest label softroce), where the initiator
// uses $RXE_B and the target $RXE_A, the two ends of the harness's veth pair, and where the
// transport must be viable (a missing device fails every case instead of skipping it).
// Elsewhere GDRMESH_VERBS_INIT_DEV / GDRMESH_VERBS_TARGET_DEV name the devices (default: the
// first device with an ACTIVE port for both), and a host without RDMA skips.
#include <cstdlib>
#include <string>

#include "tests/unit/emulated/transport_contract.h"
#include "worker/transport/verbs/verbs_transport.h"

namespace gdrmesh::contract {
namespace {

std::string env(const char* name, const char* fallback_name) {
  if (const char* v = std::getenv(name); v && *v) return v;
  if (const char* v = std::getenv(fallback_name); v && *v) return v;
  return "";
}

TransportContractParam verbsParam() {
  TransportContractParam p;
  p.name = "Verbs";
  p.make = [] { return std::make_unique<VerbsTransport>(); };
  const std::string init = env("GDRMESH_VERBS_INIT_DEV", "RXE_B");
  const std::string target = env("GDRMESH_VERBS_TARGET_DEV", "RXE_A");
  p.configure = [init, target](EndpointSpec& s) {
    s.device = s.role == Role::kInitiator ? init : target;
  };
  p.must_be_viable = std::getenv("GDRMESH_VM") != nullptr;
  p.host_memory_only = false;  // GPU memory registers through dma-buf or peermem
  // Where verbs differs from the emulated transport (transport_contract.h says why):
  p.send_checks_key = false;
  p.checks_peer_length_locally = true;
  p.target_sees_initiator_loss_promptly = false;
  p.peer_destroyed_codes = {Code::kUnavailable, Code::kFailedPrecondition, Code::kDeadlineExceeded};
  return p;
}

}  // namespace

GDRMESH_INSTANTIATE_TRANSPORT_CONTRACT(Softroce, verbsParam());

}  // namespace gdrmesh::contract
