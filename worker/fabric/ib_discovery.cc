#include "worker/fabric/ib_discovery.h"

#include <fcntl.h>
#include <infiniband/ibnetdisc.h>
#include <infiniband/mad.h>
#include <infiniband/umad.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <memory>
#include <vector>

#include "worker/fabric/mad_port.h"

namespace gdrmesh::fabric {
namespace {

// PortInfo:CapabilityMask bit 14, IsExtendedSpeedsSupported (IBA vol 1, 14.2.5.6).
constexpr uint32_t kCapMaskExtSpeeds = 1U << 14;
// LinearForwardingTable blocks: 64 one-byte entries each.
constexpr int kLftBlock = 64;

std::string cleanDescription(const char* desc) {
  std::string s(desc);
  for (char& c : s) {
    if (std::isprint(static_cast<unsigned char>(c)) == 0) c = ' ';
  }
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

const char* portStateName(uint32_t v) {
  switch (v) {
    case 1:
      return "Down";
    case 2:
      return "Init";
    case 3:
      return "Armed";
    case 4:
      return "Active";
    default:
      return "NoChange";
  }
}

const char* physStateName(uint32_t v) {
  switch (v) {
    case 1:
      return "Sleep";
    case 2:
      return "Polling";
    case 3:
      return "Disabled";
    case 4:
      return "PortConfigurationTraining";
    case 5:
      return "LinkUp";
    case 6:
      return "LinkErrorRecovery";
    case 7:
      return "PhyTest";
    default:
      return "NoStateChange";
  }
}

int activeWidth(uint32_t v) {
  switch (v) {
    case 1:
      return 1;
    case 2:
      return 4;
    case 4:
      return 8;
    case 8:
      return 12;
    case 16:
      return 2;
    default:
      return 0;
  }
}

// PortInfo's LinkSpeedActive, overridden by LinkSpeedExtActive where the port supports
// extended speeds, and by Mellanox's extended PortInfo for FDR10.
std::string activeSpeed(const ibnd_port_t& p) {
  auto* info = const_cast<uint8_t*>(p.info);  // NOLINT: libibmad's getters take non-const
  // A switch's CapabilityMask is valid on its management port 0 only (IBA 14.2.5.6).
  const ibnd_port_t* cap_port = &p;
  if (p.node->type == IB_NODE_SWITCH && p.node->ports != nullptr && p.node->ports[0] != nullptr) {
    cap_port = p.node->ports[0];
  }
  const uint32_t cap =
      mad_get_field(const_cast<uint8_t*>(cap_port->info), 0, IB_PORT_CAPMASK_F);  // NOLINT
  if ((cap & kCapMaskExtSpeeds) != 0) {
    switch (mad_get_field(info, 0, IB_PORT_LINK_SPEED_EXT_ACTIVE_F)) {
      case 1:
        return "FDR";
      case 2:
        return "EDR";
      case 4:
        return "HDR";
      case 8:
        return "NDR";
      default:
        break;
    }
  }
  auto* ext = const_cast<uint8_t*>(p.ext_info);  // NOLINT: as above
  if (mad_get_field(ext, 0, IB_MLNX_EXT_PORT_LINK_SPEED_ACTIVE_F) == 1) return "FDR10";
  switch (mad_get_field(info, 0, IB_PORT_LINK_SPEED_ACTIVE_F)) {
    case 1:
      return "SDR";
    case 2:
      return "DDR";
    case 4:
      return "QDR";
    default:
      return "";
  }
}

struct FabricDeleter {
  void operator()(ibnd_fabric_t* f) const { ibnd_destroy_fabric(f); }
};
using FabricPtr = std::unique_ptr<ibnd_fabric_t, FabricDeleter>;

std::string portName(const std::string& ca, int port) {
  return (ca.empty() ? std::string("(first HCA)") : ca) + "/" +
         (port == 0 ? std::string("(first active port)") : std::to_string(port));
}

Status checkUmad(const DiscoverOptions& opts) {
  // What libibumad itself reads first; through open(2), so ibsim's umad2sim (which wraps it)
  // answers in the tests as the kernel does on a real host.
  const int abi = ::open("/sys/class/infiniband_mad/abi_version", O_RDONLY | O_CLOEXEC);
  if (abi < 0) {
    return failedPrecondition(
        "no InfiniBand management interface on this host: /sys/class/infiniband_mad/abi_version "
        "cannot be read (the ib_umad module is not loaded, or there is no InfiniBand device)",
        "run on a host with an InfiniBand HCA and load ib_umad (modprobe ib_umad); RoCE NICs "
        "have no subnet to discover");
  }
  ::close(abi);
  if (umad_init() < 0) {
    return failedPrecondition("libibumad cannot initialise (umad_init failed)",
                              "load the ib_umad kernel module (modprobe ib_umad)");
  }
  char names[UMAD_MAX_DEVICES][UMAD_CA_NAME_LEN];
  const int n = umad_get_cas_names(names, UMAD_MAX_DEVICES);
  if (n <= 0) {
    return failedPrecondition(
        "no InfiniBand device with a management (umad) interface on this host "
        "(/sys/class/infiniband_mad is empty or missing, /dev/infiniband/umad* absent)",
        "run on a host with an InfiniBand HCA and the ib_umad module loaded (modprobe "
        "ib_umad); RoCE NICs have no subnet to discover");
  }
  if (!opts.ca.empty()) {
    bool found = false;
    std::string all;
    for (int i = 0; i < n; ++i) {
      found = found || opts.ca == names[i];
      all += (all.empty() ? "" : ", ") + std::string(names[i]);
    }
    if (!found) {
      return notFound("--ca " + opts.ca + ": no such InfiniBand device (have: " + all + ")",
                      "name one of the listed devices");
    }
  }
  return Status::okStatus();
}

Port portOf(const ibnd_port_t& p) {
  auto* info = const_cast<uint8_t*>(p.info);  // NOLINT: libibmad's getters take non-const
  Port out;
  out.number = p.portnum;
  out.guid = p.guid;
  out.lid = p.node->type == IB_NODE_SWITCH ? 0 : p.base_lid;
  out.state = portStateName(mad_get_field(info, 0, IB_PORT_STATE_F));
  out.phys_state = physStateName(mad_get_field(info, 0, IB_PORT_PHYS_STATE_F));
  if (p.remoteport != nullptr) {
    out.width = activeWidth(mad_get_field(info, 0, IB_PORT_LINK_WIDTH_ACTIVE_F));
    out.speed = activeSpeed(p);
    out.remote_guid = p.remoteport->node->guid;
    out.remote_port = p.remoteport->portnum;
  }
  return out;
}

Status readLft(ibnd_node_t* n, ibmad_port* srcport, Node* out) {
  out->lft_top = static_cast<uint16_t>(mad_get_field(n->switchinfo, 0, IB_SW_LINEAR_FDB_TOP_F));
  out->lft.assign(static_cast<size_t>(out->lft_top) + 1, kNoRoute);
  uint8_t block_data[IB_SMP_DATA_SIZE];
  for (int block = 0; block <= out->lft_top / kLftBlock; ++block) {
    // Directed route (the path libibnetdisc found), so the query does not depend on the LFTs
    // it is reading.
    ib_portid_t portid = n->path_portid;
    if (smp_query_via(block_data, &portid, IB_ATTR_LINEARFORWTBL, static_cast<unsigned>(block), 0,
                      srcport) == nullptr) {
      return unavailable("switch " + out->name + " (" + guidHex(out->guid) +
                             ") did not answer LinearForwardingTable block " +
                             std::to_string(block),
                         "check the switch and its management port; raise --timeout");
    }
    for (int i = 0; i < kLftBlock; ++i) {
      const int lid = block * kLftBlock + i;
      if (lid > out->lft_top) break;
      out->lft[static_cast<size_t>(lid)] = block_data[i];
    }
  }
  return Status::okStatus();
}

}  // namespace

Result<Fabric> discoverFabric(const DiscoverOptions& opts) {
  GDR_RETURN_IF_ERROR(checkUmad(opts));
  char* ca = opts.ca.empty() ? nullptr : const_cast<char*>(opts.ca.c_str());  // NOLINT: C API
  ibnd_config cfg{};
  cfg.timeout_ms = static_cast<unsigned>(opts.timeout_ms);
  cfg.retries = static_cast<unsigned>(opts.retries);
  FabricPtr ib(ibnd_discover_fabric(ca, opts.ca_port, nullptr, &cfg));
  if (!ib) {
    return unavailable(
        "subnet discovery from " + portName(opts.ca, opts.ca_port) +
            " failed (ibnd_discover_fabric)",
        "the port must be linked (ibstat), and this process needs read/write access to "
        "/dev/infiniband/umad* (run as root or grant the rdma group)");
  }
  Fabric f;
  f.source = portName(opts.ca, opts.ca_port);
  f.discovered_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
  std::unique_ptr<MadPort> smi;
  if (opts.read_lfts) {
    smi = std::make_unique<MadPort>(opts.ca, opts.ca_port,
                                    std::vector<int>{IB_SMI_CLASS, IB_SMI_DIRECT_CLASS},
                                    MadPort::Side::kSmi);
    if (smi->get() == nullptr) {
      return unavailable("cannot open the SMI port " + portName(opts.ca, opts.ca_port) +
                             " for LFT queries (mad_rpc_open_port)",
                         "needs read/write access to /dev/infiniband/umad* (root)");
    }
    mad_rpc_set_timeout(smi->get(), opts.timeout_ms);
    mad_rpc_set_retries(smi->get(), opts.retries);
  }
  for (ibnd_node_t* n = ib->nodes; n != nullptr; n = n->next) {
    Node node;
    node.kind = n->type == IB_NODE_SWITCH   ? NodeKind::kSwitch
                : n->type == IB_NODE_ROUTER ? NodeKind::kRouter
                                            : NodeKind::kHca;
    node.name = cleanDescription(n->nodedesc);
    node.guid = n->guid;
    node.num_ports = n->numports;
    if (node.kind == NodeKind::kSwitch) node.lid = n->smalid;
    for (int i = 1; i <= n->numports; ++i) {
      if (n->ports == nullptr || n->ports[i] == nullptr) continue;
      node.ports.push_back(portOf(*n->ports[i]));
    }
    if (node.kind == NodeKind::kSwitch) {
      if (opts.read_lfts) GDR_RETURN_IF_ERROR(readLft(n, smi->get(), &node));
      f.switches.push_back(std::move(node));
    } else {
      f.hosts.push_back(std::move(node));
    }
  }
  auto by_name = [](const Node& a, const Node& b) {
    return a.name != b.name ? a.name < b.name : a.guid < b.guid;
  };
  std::sort(f.switches.begin(), f.switches.end(), by_name);
  std::sort(f.hosts.begin(), f.hosts.end(), by_name);
  f.rebuildLinks();
  return f;
}

}  // namespace gdrmesh::fabric
