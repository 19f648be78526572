#include "cli/output.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "common/json.h"
#include "common/units.h"

namespace gdrmesh::cli {

std::string fmt(double v, int precision) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", precision, v);
  return buf;
}

std::string renderTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> w;
  for (const auto& r : rows) {
    if (w.size() < r.size()) w.resize(r.size(), 0);
    for (size_t i = 0; i < r.size(); ++i) w[i] = std::max(w[i], r[i].size());
  }
  std::ostringstream out;
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size(); ++i) {
      out << r[i];
      if (i + 1 < r.size()) out << std::string(w[i] - r[i].size() + 2, ' ');
    }
    out << "\n";
  }
  return out.str();
}

nlohmann::json workersJson(const std::vector<WorkerView>& workers) {
  return toJson(workers);
}

std::string workersTable(const std::vector<WorkerView>& workers) {
  if (workers.empty()) return "no workers registered\n";
  std::vector<std::vector<std::string>> rows{
      {"NAME", "STATE", "HOST", "TRANSPORTS", "NICS", "GPUS", "LAST HEARTBEAT"}};
  for (const auto& w : workers) {
    std::string transports, nics, gpus;
    for (const auto& t : w.inventory.transports) transports += (transports.empty() ? "" : ",") + t;
    for (const auto& n : w.inventory.nics) {
      std::string state = n.ports.empty() ? "?" : n.ports[0].state;
      nics += (nics.empty() ? "" : ",") + n.name + "(" + state + ")";
    }
    for (const auto& g : w.inventory.gpus) {
      gpus += (gpus.empty() ? "" : ",") + std::to_string(g.index) + ":" + g.pci_bus_id;
    }
    rows.push_back({w.name, w.state, w.inventory.hostname, transports.empty() ? "-" : transports,
                    nics.empty() ? "-" : nics, gpus.empty() ? "-" : gpus,
                    w.last_heartbeat_ms ? formatRfc3339(w.last_heartbeat_ms) : "-"});
  }
  std::string out = renderTable(rows);
  for (const auto& w : workers) {
    for (const auto& n : w.inventory.notes) out += "  " + w.name + ": " + n + "\n";
  }
  return out;
}

namespace {

std::string side(const EndpointRecord& e) {
  std::string s = e.worker;
  if (!e.nic.empty()) s += "/" + e.nic;
  if (e.memory == MemoryKind::kCuda) s += " gpu" + std::to_string(e.gpu);
  return s;
}

std::string dataPath(const TestResult& r) {
  // e.g. "emulated host->host", "verbs cuda(dmabuf)->cuda(dmabuf) GPUDirect"
  auto one = [](const EndpointRecord& e) {
    std::string s = toString(e.memory);
    if (e.memory == MemoryKind::kCuda) s += std::string("(") + toString(e.reg_path) + ")";
    return s;
  };
  std::string s = std::string(r.ran() ? "" : "requested ") + toString(r.transport) + " " +
                  one(r.initiator) + "->" + one(r.target);
  if (r.gpudirect()) s += " GPUDirect";
  return s;
}

std::string figure(const TestResult& r) {
  const auto& m = r.measurement;
  if (m.has_bandwidth) return fmt(m.bw.avg_gbps, 2) + " Gb/s";
  if (m.has_latency) return fmt(m.lat.median_us, 2) + " us";
  return "-";
}

}  // namespace

std::string resultsTable(const std::vector<TestResult>& rows) {
  if (rows.empty()) return "no results\n";
  std::vector<std::vector<std::string>> t{{"TIME", "STATUS", "OP", "SIZE", "INITIATOR", "TARGET",
                                           "DATA PATH", "RESULT", "INTEGRITY", "REASON"}};
  for (const auto& r : rows) {
    std::string integrity = !r.integrity.checked ? "-"
                            : r.integrity.wrong_bytes == 0
                                ? "ok"
                                : std::to_string(r.integrity.wrong_bytes) + " B wrong";
    std::string reason = r.reason.size() > 60 ? r.reason.substr(0, 57) + "..." : r.reason;
    t.push_back({formatRfc3339(r.started_ms).substr(0, 19), toString(r.status),
                 std::string(toString(r.op)) + "/" + toString(r.mode), formatSize(r.message_size),
                 side(r.initiator), side(r.target), dataPath(r), figure(r), integrity, reason});
  }
  return renderTable(t);
}

std::string sweepTable(const std::vector<TestResult>& rows) {
  if (rows.empty()) return "no results\n";
  std::vector<std::vector<std::string>> t{{"SIZE", "STATUS", "AVG Gb/s", "AVG GB/s", "PEAK Gb/s",
                                           "Mpps", "LAT MEDIAN us", "LAT p99 us", "INTEGRITY"}};
  for (const auto& r : rows) {
    const auto& m = r.measurement;
    t.push_back({formatSize(r.message_size), toString(r.status),
                 m.has_bandwidth ? fmt(m.bw.avg_gbps, 3) : "-",
                 m.has_bandwidth ? fmt(m.bw.avgGBps(), 3) : "-",
                 m.has_bandwidth ? fmt(m.bw.peak_gbps, 3) : "-",
                 m.has_bandwidth ? fmt(m.bw.msg_rate_mpps, 4) : "-",
                 m.has_latency ? fmt(m.lat.median_us, 2) : "-",
                 m.has_latency ? fmt(m.lat.p99_us, 2) : "-",
                 !r.integrity.checked ? "-"
                 : r.integrity.ok()   ? "ok"
                                      : r.integrity.toString()});
  }
  std::string out;
  if (!rows.empty()) {
    const auto& r = rows.front();
    out = std::string("sweep ") + r.run_id + ": " + side(r.initiator) + " -> " + side(r.target) +
          "  " + toString(r.op) + " " + toString(r.mode) + "  data path " + dataPath(r) + "\n";
  }
  out += renderTable(t);
  for (const auto& r : rows) {
    if (!r.reason.empty()) out += formatSize(r.message_size) + ": " + r.reason + "\n";
  }
  return out;
}

std::string resultDetail(const TestResult& r) {
  std::ostringstream o;
  o << "test      " << r.test_id << "  " << toString(r.status);
  if (!r.reason.empty()) o << ": " << r.reason;
  o << "\n";
  o << "pair      " << side(r.initiator) << " -> " << side(r.target) << "  op " << toString(r.op)
    << " " << toString(r.mode) << ", " << formatSize(r.message_size) << " x " << r.iterations
    << ", " << r.num_qps << " QP\n";
  o << "data path " << dataPath(r);
  if (r.transport == TransportKind::kEmulated) o << "  (software transport: NOT RDMA)";
  if (r.path_mtu > 0) o << "  path MTU " << r.path_mtu;
  o << "\n";
  const auto& m = r.measurement;
  if (m.has_bandwidth) {
    o << "bandwidth avg " << fmt(m.bw.avg_gbps, 3) << " Gb/s (" << fmt(m.bw.avgGBps(), 3)
      << " GB/s)  peak " << fmt(m.bw.peak_gbps, 3) << " Gb/s  msg rate "
      << fmt(m.bw.msg_rate_mpps, 4) << " Mpps  [decimal units]\n";
  }
  if (m.has_latency) {
    o << "latency   min " << fmt(m.lat.min_us, 2) << "  median " << fmt(m.lat.median_us, 2)
      << "  mean " << fmt(m.lat.mean_us, 2) << "  stdev " << fmt(m.lat.stdev_us, 2) << "  p99 "
      << fmt(m.lat.p99_us, 2) << "  p99.9 " << fmt(m.lat.p999_us, 2) << "  max "
      << fmt(m.lat.max_us, 2) << " us\n";
  }
  if (m.staging_seconds > 0) {
    o << "staging   " << fmt(m.staging_seconds * 1e3, 3) << " ms of host<->GPU copies included\n";
  }
  o << "integrity " << r.integrity.toString() << "\n";
  return o.str();
}

}  // namespace gdrmesh::cli
