// Inventories and workers: wire <-> domain, and the stored form of a worker's inventory.
#include <google/protobuf/util/json_util.h>

#include "common/json.h"
#include "convert.h"

namespace gdrmesh::convert {

namespace {

void capabilitiesToProto(const TransportCapabilities& in, pb::TransportCapabilities* out) {
  out->set_transport(toProto(in.transport));
  for (Op o : in.bandwidth_ops) out->add_bandwidth_ops(toProto(o));
  for (Op o : in.latency_ops) out->add_latency_ops(toProto(o));
  for (MemoryKind m : in.memory) out->add_memory(toProto(m));
  for (RegPath r : in.reg_paths) out->add_reg_paths(toProto(r));
  out->set_max_message_size(in.max_message_size);
  out->set_max_inline(in.max_inline);
  out->set_rdma_cm(in.rdma_cm);
  out->set_gid_index(in.gid_index);
  out->set_bidirectional(in.bidirectional);
  out->set_end_signal(in.end_signal);
}

// Values this build does not know (a newer worker's) are left out: a capability is only
// claimed in words both sides understand.
TransportCapabilities capabilitiesFromProto(const pb::TransportCapabilities& in) {
  TransportCapabilities out;
  out.transport = fromProto(in.transport());
  for (int v : in.bandwidth_ops()) {
    if (v != pb::OP_UNSPECIFIED && pb::Op_IsValid(v)) {
      out.bandwidth_ops.push_back(fromProto(static_cast<pb::Op>(v)));
    }
  }
  for (int v : in.latency_ops()) {
    if (v != pb::OP_UNSPECIFIED && pb::Op_IsValid(v)) {
      out.latency_ops.push_back(fromProto(static_cast<pb::Op>(v)));
    }
  }
  for (int v : in.memory()) {
    if (v != pb::MEMORY_KIND_UNSPECIFIED && pb::MemoryKind_IsValid(v)) {
      out.memory.push_back(fromProto(static_cast<pb::MemoryKind>(v)));
    }
  }
  for (int v : in.reg_paths()) {
    // AUTO is a request, never a capability.
    if (v != pb::REG_PATH_UNSPECIFIED && v != pb::REG_PATH_AUTO && pb::RegPath_IsValid(v)) {
      out.reg_paths.push_back(fromProto(static_cast<pb::RegPath>(v)));
    }
  }
  out.max_message_size = in.max_message_size();
  out.max_inline = in.max_inline();
  out.rdma_cm = in.rdma_cm();
  out.gid_index = in.gid_index();
  out.end_signal = in.end_signal();
  out.bidirectional = in.bidirectional();
  return out;
}

}  // namespace

void toProto(const Inventory& in, pb::Inventory* out) {
  out->set_hostname(in.hostname);
  out->set_worker_version(in.worker_version);
  out->set_cuda_driver_version(in.cuda_driver_version);
  out->set_rdma_core_version(in.rdma_core_version);
  out->set_kernel_release(in.kernel_release);
  out->set_nvidia_driver_version(in.nvidia_driver_version);
  for (const auto& n : in.nics) {
    auto* pn = out->add_nics();
    pn->set_name(n.name);
    pn->set_pci_bus_id(n.pci_bus_id);
    pn->set_numa_node(n.numa_node);
    pn->set_node_guid(n.node_guid);
    pn->set_fw_version(n.fw_version);
    for (const auto& p : n.ports) {
      auto* pp = pn->add_ports();
      pp->set_port(p.port);
      pp->set_state(p.state);
      pp->set_link_layer(p.link_layer);
      pp->set_rate_gbps(p.rate_gbps);
      pp->set_active_mtu(p.active_mtu);
      pp->set_max_mtu(p.max_mtu);
      pp->set_lid(p.lid);
      pp->set_netdev(p.netdev);
      for (const auto& g : p.gids) {
        auto* pg = pp->add_gids();
        pg->set_index(g.index);
        pg->set_gid(g.gid);
        pg->set_type(g.type);
      }
    }
  }
  for (const auto& g : in.gpus) {
    auto* pg = out->add_gpus();
    pg->set_index(g.index);
    pg->set_name(g.name);
    pg->set_uuid(g.uuid);
    pg->set_pci_bus_id(g.pci_bus_id);
    pg->set_memory_bytes(g.memory_bytes);
    pg->set_numa_node(g.numa_node);
    pg->set_dma_buf_supported(g.dma_buf_supported);
    pg->set_gpu_direct_rdma_supported(g.gpu_direct_rdma_supported);
    pg->set_cc_major(g.compute_capability_major);
    pg->set_cc_minor(g.compute_capability_minor);
    pg->set_nearest_nic(g.nearest_nic);
    pg->set_nearest_class(g.nearest_class);
  }
  for (const auto& t : in.transports) {
    auto k = parseTransportKind(t);
    if (k) out->add_transports(toProto(*k));
  }
  for (const auto& n : in.notes) out->add_notes(n);
  for (const auto& c : in.capabilities) capabilitiesToProto(c, out->add_capabilities());
  for (const auto& c : in.preflight) {
    auto* pc = out->add_preflight();
    pc->set_id(c.id);
    pc->set_title(c.title);
    pc->set_status(c.status);
    pc->set_detail(c.detail);
    pc->set_remediation(c.remediation);
  }
}

Inventory fromProto(const pb::Inventory& in) {
  Inventory out;
  out.hostname = in.hostname();
  out.worker_version = in.worker_version();
  out.cuda_driver_version = in.cuda_driver_version();
  out.rdma_core_version = in.rdma_core_version();
  out.kernel_release = in.kernel_release();
  out.nvidia_driver_version = in.nvidia_driver_version();
  for (const auto& pn : in.nics()) {
    Nic n;
    n.name = pn.name();
    n.pci_bus_id = pn.pci_bus_id();
    n.numa_node = pn.numa_node();
    n.node_guid = pn.node_guid();
    n.fw_version = pn.fw_version();
    for (const auto& pp : pn.ports()) {
      NicPort p;
      p.port = pp.port();
      p.state = pp.state();
      p.link_layer = pp.link_layer();
      p.rate_gbps = pp.rate_gbps();
      p.active_mtu = pp.active_mtu();
      p.max_mtu = pp.max_mtu();
      p.lid = pp.lid();
      p.netdev = pp.netdev();
      for (const auto& pg : pp.gids()) p.gids.push_back({pg.index(), pg.gid(), pg.type()});
      n.ports.push_back(std::move(p));
    }
    out.nics.push_back(std::move(n));
  }
  for (const auto& pg : in.gpus()) {
    Gpu g;
    g.index = pg.index();
    g.name = pg.name();
    g.uuid = pg.uuid();
    g.pci_bus_id = pg.pci_bus_id();
    g.memory_bytes = pg.memory_bytes();
    g.numa_node = pg.numa_node();
    g.dma_buf_supported = pg.dma_buf_supported();
    g.gpu_direct_rdma_supported = pg.gpu_direct_rdma_supported();
    g.compute_capability_major = pg.cc_major();
    g.compute_capability_minor = pg.cc_minor();
    g.nearest_nic = pg.nearest_nic();
    g.nearest_class = pg.nearest_class();
    out.gpus.push_back(std::move(g));
  }
  for (int t : in.transports()) {
    out.transports.push_back(toString(fromProto(static_cast<pb::Transport>(t))));
  }
  for (const auto& n : in.notes()) out.notes.push_back(n);
  for (const auto& c : in.capabilities()) {
    if (c.transport() == pb::TRANSPORT_UNSPECIFIED || !pb::Transport_IsValid(c.transport())) {
      continue;
    }
    out.capabilities.push_back(capabilitiesFromProto(c));
  }
  for (const auto& c : in.preflight()) {
    out.preflight.push_back({c.id(), c.title(), c.status(), c.detail(), c.remediation()});
  }
  return out;
}

WorkerStatus fromProto(const pb::WorkerInfo& in) {
  WorkerStatus w;
  w.name = in.name();
  w.state = in.state();
  w.connected_ms = in.connected_ms();
  w.last_heartbeat_ms = in.last_heartbeat_ms();
  w.peer = in.peer();
  w.active_tests = in.active_tests();
  w.labels.insert(in.labels().begin(), in.labels().end());
  w.inventory = fromProto(in.inventory());
  w.findings.assign(in.findings().begin(), in.findings().end());
  return w;
}

std::string storedInventoryJson(const Inventory& in) {
  return toJson(in).dump();
}

Result<Inventory> inventoryFromStoredJson(const std::string& text) {
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) {
    return invalidArgument("stored inventory: the text does not parse as JSON",
                           "the worker's next registration stores it again");
  }
  auto domain = inventoryFromJson(j);
  if (domain.ok()) return domain;
  // A row of an older build: protobuf's JSON mapping of v1.Inventory.
  pb::Inventory old;
  auto st = google::protobuf::util::JsonStringToMessage(text, &old);
  if (st.ok()) return fromProto(old);
  return invalidArgument("stored inventory: neither the domain encoding (" +
                             domain.status().message() + ") nor protobuf's JSON mapping (" +
                             std::string(st.message()) + ")",
                         "the worker's next registration stores it again");
}

}  // namespace gdrmesh::convert
