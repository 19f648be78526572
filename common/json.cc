#include "common/json.h"

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
                                 {"bidirectional", c.bidirectional}});
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
                                                    std::to_string(g.compute_capability_minor)}});
  }
  return j;
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
