// VerbsTransport: viability (an ACTIVE port among the offered devices) and endpoint creation.
// The endpoint itself is verbs_endpoint.h.
#include "worker/transport/verbs/verbs_transport.h"

#include <algorithm>

#include "worker/transport/verbs/verbs_device.h"
#include "worker/transport/verbs/verbs_endpoint.h"

namespace gdrmesh {

VerbsTransport::VerbsTransport(VerbsOptions options)
    : options_(std::move(options)),
      placer_(std::make_shared<verbs::CpuPlacer>(options_.sysfs_root, options_.cpu,
                                                 options_.allowed_cpus)) {}

Status VerbsTransport::viable() const {
  return verbs::anyActivePort(options_.devices);
}

Result<std::unique_ptr<VerbsEndpoint>> VerbsTransport::createVerbsEndpoint(const EndpointSpec& spec,
                                                                           Buffer& buffer,
                                                                           RegPath reg) {
  if (options_.qp_timeout > 31) {
    return invalidArgument("qp_timeout " + std::to_string(options_.qp_timeout) +
                               " must be in 0..31 (4.096 us * 2^n; 0: no retransmission timer)",
                           "use 14 (perftest's default) unless the path cannot lose packets");
  }
  EndpointSpec use = spec;
  if (!options_.devices.empty()) {
    if (use.device.empty()) {
      use.device = options_.devices.front();
    } else if (std::find(options_.devices.begin(), options_.devices.end(), use.device) ==
               options_.devices.end()) {
      std::string names;
      for (const auto& d : options_.devices) names += (names.empty() ? "" : ", ") + d;
      return notFound(
          "RDMA device '" + use.device + "' is not offered by this worker (--nic " + names + ")",
          "pick one of the worker's NICs (`gdrmesh workers`)");
    }
  }
  auto ep = std::make_unique<verbs::VerbsEndpointImpl>(
      use, buffer, options_.registrar ? *options_.registrar : verbs::systemRegistrar(),
      options_.sysfs_root, options_.max_rd_atomic, options_.qp_timeout, placer_);
  GDR_RETURN_IF_ERROR(ep->init(reg));
  return std::unique_ptr<VerbsEndpoint>(std::move(ep));
}

Result<std::unique_ptr<Endpoint>> VerbsTransport::createEndpoint(const EndpointSpec& spec,
                                                                 Buffer& buffer, RegPath reg) {
  GDR_ASSIGN_OR_RETURN(auto ep, createVerbsEndpoint(spec, buffer, reg));
  return std::unique_ptr<Endpoint>(std::move(ep));
}

}  // namespace gdrmesh
