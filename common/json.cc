#include "common/json.h"

#include <cstdio>
#include <string>
#include <utility>

#include "common/json_fields.h"
#include "common/units.h"

namespace gdrmesh {

using nlohmann::json;

json toJson(const Inventory& inv) {
  json j;
  j["hostname"] = inv.hostname;
  j["worker_version"] = inv.worker_version;
  j["cuda_driver_version"] = inv.cuda_driver_version;
  j["rdma_core_version"] = inv.rdma_core_version;
  j["kernel_release"] = inv.kernel_release;
  j["nvidia_driver_version"] = inv.nvidia_driver_version;
  j["transports"] = inv.transports;
  j["capabilities"] = json::array();
  for (const auto& c : inv.capabilities) {
    auto names = [](const auto& v) {
      json a = json::array();
      for (const auto& x : v) a.push_back(toString(x));
      return a;
    };
    j["capabilities"].push_back({{"transport", toString(c.transport)},
                                 {"bandwidth_ops", names(c.bandwidth_ops)},
                                 {"latency_ops", names(c.latency_ops)},
                                 {"memory", names(c.memory)},
                                 {"reg_paths", names(c.reg_paths)},
                                 {"max_message_size", c.max_message_size},
                                 {"max_inline", c.max_inline},
                                 {"rdma_cm", c.rdma_cm},
                                 {"gid_index", c.gid_index},
                                 {"bidirectional", c.bidirectional},
                                 {"end_signal", c.end_signal}});
  }
  j["notes"] = inv.notes;
  j["preflight"] = json::array();
  for (const auto& c : inv.preflight) {
    j["preflight"].push_back({{"id", c.id},
                              {"title", c.title},
                              {"status", c.status},
                              {"detail", c.detail},
                              {"remediation", c.remediation}});
  }
  j["nics"] = json::array();
  for (const auto& n : inv.nics) {
    json jn{{"name", n.name},           {"pci_bus_id", n.pci_bus_id}, {"numa_node", n.numa_node},
            {"node_guid", n.node_guid}, {"fw_version", n.fw_version}, {"ports", json::array()}};
    for (const auto& p : n.ports) {
      json jp{{"port", p.port},
              {"state", p.state},
              {"link_layer", p.link_layer},
              {"rate_gbps", p.rate_gbps},
              {"active_mtu", p.active_mtu},
              {"max_mtu", p.max_mtu},
              {"lid", p.lid},
              {"netdev", p.netdev},
              {"gids", json::array()}};
      for (const auto& g : p.gids) {
        jp["gids"].push_back({{"index", g.index}, {"gid", g.gid}, {"type", g.type}});
      }
      jn["ports"].push_back(std::move(jp));
    }
    j["nics"].push_back(std::move(jn));
  }
  j["gpus"] = json::array();
  for (const auto& g : inv.gpus) {
    j["gpus"].push_back({{"index", g.index},
                         {"name", g.name},
                         {"uuid", g.uuid},
                         {"pci_bus_id", g.pci_bus_id},
                         {"memory_bytes", g.memory_bytes},
                         {"numa_node", g.numa_node},
                         {"dma_buf_supported", g.dma_buf_supported},
                         {"gpu_direct_rdma_supported", g.gpu_direct_rdma_supported},
                         {"compute_capability", std::to_string(g.compute_capability_major) + "." +
                                                    std::to_string(g.compute_capability_minor)},
                         {"nearest_nic", g.nearest_nic},
                         {"nearest_class", g.nearest_class}});
  }
  return j;
}

namespace {

using InventoryFields = JsonFields<json>;

TransportCapabilities inventoryCapabilityFromJson(InventoryFields& c) {
  TransportCapabilities t;
  t.transport = c.named(
      "transport", [](const std::string& s) { return parseTransportKind(s); }, "a transport");
  t.bandwidth_ops = c.names("bandwidth_ops", [](const std::string& s) { return parseOp(s); });
  t.latency_ops = c.names("latency_ops", [](const std::string& s) { return parseOp(s); });
  t.memory = c.names("memory", [](const std::string& s) { return parseMemoryKind(s); });
  t.reg_paths = c.names("reg_paths", [](const std::string& s) { return parseRegPath(s); });
  t.max_message_size = c.count("max_message_size");
  t.max_inline = c.count32("max_inline");
  t.rdma_cm = c.flag("rdma_cm");
  t.gid_index = c.flag("gid_index");
  t.bidirectional = c.flag("bidirectional");
  t.end_signal = c.flag("end_signal");
  return t;
}

NicPort inventoryPortFromJson(InventoryFields& p) {
  NicPort port;
  port.port = p.integer("port");
  port.state = p.text("state");
  port.link_layer = p.text("link_layer");
  port.rate_gbps = p.number("rate_gbps");
  port.active_mtu = p.integer("active_mtu");
  port.max_mtu = p.integer("max_mtu");
  port.lid = p.count32("lid");
  port.netdev = p.text("netdev");
  p.each("gids", [&](InventoryFields& e) {
    port.gids.push_back({e.integer("index"), e.text("gid"), e.text("type")});
  });
  return port;
}

Nic inventoryNicFromJson(InventoryFields& n) {
  Nic nic;
  nic.name = n.text("name");
  nic.pci_bus_id = n.text("pci_bus_id");
  nic.numa_node = n.integer("numa_node");
  nic.node_guid = n.text("node_guid");
  nic.fw_version = n.text("fw_version");
  n.each("ports", [&](InventoryFields& p) { nic.ports.push_back(inventoryPortFromJson(p)); });
  return nic;
}

Gpu inventoryGpuFromJson(InventoryFields& g) {
  Gpu gpu;
  gpu.index = g.integer("index");
  gpu.name = g.text("name");
  gpu.uuid = g.text("uuid");
  gpu.pci_bus_id = g.text("pci_bus_id");
  gpu.memory_bytes = g.count("memory_bytes");
  gpu.numa_node = g.integer("numa_node");
  gpu.dma_buf_supported = g.flag("dma_buf_supported");
  gpu.gpu_direct_rdma_supported = g.flag("gpu_direct_rdma_supported");
  const std::string cc = g.text("compute_capability");  // "8.0"
  if (g.ok() && std::sscanf(cc.c_str(), "%d.%d", &gpu.compute_capability_major,
                            &gpu.compute_capability_minor) != 2) {
    g.fail(g.path("compute_capability"), "'" + cc + "' is not MAJOR.MINOR");
  }
  gpu.nearest_nic = g.text("nearest_nic");
  gpu.nearest_class = g.text("nearest_class");
  return gpu;
}

}  // namespace

Result<Inventory> inventoryFromJson(const json& j) {
  Status error = Status::okStatus();
  InventoryFields r(j, "inventory", "inventory JSON", &error);
  Inventory inv;
  inv.hostname = r.text("hostname");
  inv.worker_version = r.text("worker_version");
  inv.cuda_driver_version = r.text("cuda_driver_version");
  inv.rdma_core_version = r.text("rdma_core_version");
  inv.kernel_release = r.text("kernel_release");
  inv.nvidia_driver_version = r.text("nvidia_driver_version");
  inv.transports = r.texts("transports");
  r.each("capabilities",
         [&](InventoryFields& c) { inv.capabilities.push_back(inventoryCapabilityFromJson(c)); });
  inv.notes = r.texts("notes");
  r.each("preflight", [&](InventoryFields& c) {
    inv.preflight.push_back(
        {c.text("id"), c.text("title"), c.text("status"), c.text("detail"), c.text("remediation")});
  });
  r.each("nics", [&](InventoryFields& n) { inv.nics.push_back(inventoryNicFromJson(n)); });
  r.each("gpus", [&](InventoryFields& g) { inv.gpus.push_back(inventoryGpuFromJson(g)); });
  if (!error.ok()) return error;
  return inv;
}

json toJson(const Measurement& m) {
  json j{{"message_size_bytes", m.message_size},
         {"iterations", m.iterations},
         {"warmup_iterations", m.warmup_iterations},
         {"staging_seconds", m.staging_seconds}};
  if (m.has_bandwidth) {
    j["bandwidth"] = {{"bytes", m.bw.bytes},          {"messages", m.bw.messages},
                      {"seconds", m.bw.seconds},      {"avg_gbps", m.bw.avg_gbps},
                      {"peak_gbps", m.bw.peak_gbps},  {"avg_GBps", m.bw.avgGBps()},
                      {"peak_GBps", m.bw.peakGBps()}, {"msg_rate_mpps", m.bw.msg_rate_mpps}};
  } else {
    j["bandwidth"] = nullptr;
  }
  if (m.has_latency) {
    j["latency"] = {{"samples", m.lat.samples},     {"min_us", m.lat.min_us},
                    {"median_us", m.lat.median_us}, {"mean_us", m.lat.mean_us},
                    {"stdev_us", m.lat.stdev_us},   {"p99_us", m.lat.p99_us},
                    {"p999_us", m.lat.p999_us},     {"max_us", m.lat.max_us}};
  } else {
    j["latency"] = nullptr;
  }
  if (m.counters.valid) {
    j["port_counters"] = {{"xmit_bytes", m.counters.xmit_bytes},
                          {"rcv_bytes", m.counters.rcv_bytes},
                          {"xmit_packets", m.counters.xmit_packets},
                          {"rcv_packets", m.counters.rcv_packets},
                          {"errors", m.counters.errors}};
  } else {
    j["port_counters"] = nullptr;
  }
  return j;
}

json toJson(const IntegrityReport& i) {
  return {{"checked", i.checked},
          {"bytes_checked", i.bytes_checked},
          {"wrong_bytes", i.wrong_bytes},
          {"first_wrong_offset", i.first_wrong_offset},
          {"where", i.where}};
}

json toJson(const EndpointRecord& e) {
  return {{"worker", e.worker},
          {"host", e.host},
          {"nic", e.nic},
          {"port", e.port},
          {"gpu", e.gpu},
          {"gpu_pci", e.gpu_pci},
          {"memory", toString(e.memory)},
          {"reg_path", toString(e.reg_path)},
          {"gid_index", e.gid_index},
          {"topo_class", e.topo_class},
          {"cpu_binding", e.cpu_binding}};
}

json toJson(const TestResult& r) {
  return {{"id", r.id},
          {"test_id", r.test_id},
          {"run_id", r.run_id},
          {"started", formatRfc3339(r.started_ms)},
          {"finished", formatRfc3339(r.finished_ms)},
          {"op", toString(r.op)},
          {"mode", toString(r.mode)},
          {"transport", toString(r.transport)},
          {"gpudirect", r.gpudirect()},
          {"initiator", toJson(r.initiator)},
          {"target", toJson(r.target)},
          {"message_size_bytes", r.message_size},
          {"iterations", r.iterations},
          {"num_qps", r.num_qps},
          {"path_mtu", r.path_mtu},
          {"measurement", toJson(r.measurement)},
          {"integrity", toJson(r.integrity)},
          {"status", toString(r.status)},
          {"reason", r.reason}};
}

json toJson(const std::vector<WorkerStatus>& workers) {
  json j = json::array();
  for (const auto& w : workers) {
    j.push_back({{"name", w.name},
                 {"state", w.state},
                 {"connected", w.connected_ms ? formatRfc3339(w.connected_ms) : ""},
                 {"last_heartbeat", w.last_heartbeat_ms ? formatRfc3339(w.last_heartbeat_ms) : ""},
                 {"peer", w.peer},
                 {"active_tests", w.active_tests},
                 {"labels", w.labels},  // what --select KEY=VALUE matches
                 {"findings", w.findings},
                 {"inventory", toJson(w.inventory)}});
  }
  return j;
}

}  // namespace gdrmesh
