// The transport contract (transport_contract.h), instantiated for the emulated transport.
#include "tests/unit/emulated/transport_contract.h"
#include "worker/transport/emulated/emulated_transport.h"

namespace gdrmesh::contract {
namespace {

TransportContractParam emulatedParam() {
  TransportContractParam p;
  p.name = "Emulated";
  p.make = [] { return std::make_unique<EmulatedTransport>(); };
  p.configure = [](EndpointSpec& s) { s.listen_host = "127.0.0.1"; };
  p.host_memory_only = true;
  return p;
}

}  // namespace

GDRMESH_INSTANTIATE_TRANSPORT_CONTRACT(Emulated, emulatedParam());

}  // namespace gdrmesh::contract
