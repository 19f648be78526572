#include "cli/output.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <sstream>

#include "common/fabric/counters.h"
#include "common/fabric/fabric.h"
#include "common/json.h"
#include "common/limits.h"
#include "common/pair_spec.h"
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

namespace {

std::string workerTransports(const WorkerView& w) {
  std::string out;
  for (const auto& t : w.inventory.transports) out += (out.empty() ? "" : ",") + t;
  return out;
}
std::string workerCapabilities(const WorkerView& w) {
  std::string out;
  for (const auto& c : w.inventory.capabilities)
    out += (out.empty() ? "" : " ") + capabilityCell(c);
  return out;
}
std::string workerNics(const WorkerView& w) {
  std::string out;
  for (const auto& n : w.inventory.nics) {
    std::string state = n.ports.empty() ? "?" : n.ports[0].state;
    out += (out.empty() ? "" : ",") + n.name + "(" + state + ")";
  }
  return out;
}
// "rack=r12,zone=a": what `--select KEY=VALUE` matches.
std::string workerLabels(const WorkerView& w, const char* sep) {
  std::string out;
  for (const auto& [k, v] : w.labels) out += (out.empty() ? "" : sep) + k + "=" + v;
  return out;
}
std::string workerGpus(const WorkerView& w) {
  std::string out;
  for (const auto& g : w.inventory.gpus) {
    out += (out.empty() ? "" : ",") + std::to_string(g.index) + ":" + g.pci_bus_id;
  }
  return out;
}

}  // namespace

std::string capabilityCell(const TransportCapabilities& c) {
  auto has = [](const auto& list, auto v) {
    return std::find(list.begin(), list.end(), v) != list.end();
  };
  std::vector<std::string> parts;
  if (has(c.memory, MemoryKind::kCuda)) {
    std::string gpu;
    for (RegPath p : c.reg_paths) {
      if (p == RegPath::kHost || p == RegPath::kAuto) continue;
      gpu += std::string(gpu.empty() ? "" : "/") + toString(p);
    }
    if (!gpu.empty()) parts.push_back("gpu:" + gpu);
  }
  const bool imm_bw = has(c.bandwidth_ops, Op::kWriteImm);
  const bool imm_lat = has(c.latency_ops, Op::kWriteImm);
  if (imm_bw && imm_lat) {
    parts.emplace_back("imm");
  } else if (imm_bw || imm_lat) {
    parts.emplace_back(imm_bw ? "imm(bw)" : "imm(lat)");
  }
  if (c.rdma_cm) parts.emplace_back("cm");
  if (c.bidirectional) parts.emplace_back("bidir");
  if (c.max_inline > 0) parts.emplace_back("inline");
  std::string out = std::string(toString(c.transport)) + "[";
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? " " : "") + parts[i];
  return out + "]";
}

std::string workersTable(const std::vector<WorkerView>& workers, bool notes) {
  if (workers.empty()) return "no workers registered\n";
  std::vector<std::vector<std::string>> rows{{"NAME", "STATE", "HOST", "LABELS", "TRANSPORTS",
                                              "CAPABILITIES", "NICS", "GPUS", "LAST HEARTBEAT",
                                              "NOTES"}};
  size_t total_notes = 0;
  for (const auto& w : workers) {
    const std::string transports = workerTransports(w), nics = workerNics(w), gpus = workerGpus(w);
    const std::string caps = workerCapabilities(w);
    const size_t n = w.inventory.notes.size();
    total_notes += n;
    std::string note_cell = "-";
    if (n > 0) {
      note_cell = std::to_string(n) + (n == 1 ? " note" : " notes") + (notes ? "" : " (--notes)");
    }
    if (!w.findings.empty()) {
      const size_t f = w.findings.size();
      note_cell =
          (n > 0 ? note_cell + ", " : "") + std::to_string(f) + (f == 1 ? " FINDING" : " FINDINGS");
    }
    const std::string labels = workerLabels(w, ",");
    rows.push_back({w.name, w.state, w.inventory.hostname, labels.empty() ? "-" : labels,
                    transports.empty() ? "-" : transports, caps.empty() ? "-" : caps,
                    nics.empty() ? "-" : nics, gpus.empty() ? "-" : gpus,
                    w.last_heartbeat_ms ? formatRfc3339(w.last_heartbeat_ms) : "-", note_cell});
  }
  std::string out = renderTable(rows);
  // The coordinator's findings (a registration that contradicts the config's expected
  // inventory, protocol violations): always shown, they may mean a compromised host.
  std::string findings;
  for (const auto& w : workers) {
    for (const auto& f : w.findings) findings += "  " + w.name + ": " + cleanText(f) + "\n";
  }
  if (!findings.empty()) out += "\nfindings of the coordinator\n" + findings;
  if (notes && total_notes > 0) {
    out += "\nnotes\n";
    for (const auto& w : workers) {
      for (const auto& n : w.inventory.notes) out += "  " + w.name + ": " + n + "\n";
    }
  }
  return out;
}

std::string workersCsv(const std::vector<WorkerView>& workers) {
  std::vector<std::vector<std::string>> rows{{"name", "state", "host", "transports", "nics", "gpus",
                                              "last_heartbeat", "peer", "active_tests", "notes",
                                              "labels"}};
  for (const auto& w : workers) {
    std::string notes;
    for (const auto& n : w.inventory.notes) notes += (notes.empty() ? "" : "; ") + n;
    for (const auto& f : w.findings) notes += (notes.empty() ? "" : "; ") + ("finding: " + f);
    rows.push_back({w.name, w.state, w.inventory.hostname, workerTransports(w), workerNics(w),
                    workerGpus(w), w.last_heartbeat_ms ? formatRfc3339(w.last_heartbeat_ms) : "",
                    w.peer, std::to_string(w.active_tests), notes, workerLabels(w, "; ")});
  }
  return csvRows(rows);
}

std::string endpointLabel(const EndpointRecord& e) {
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

std::string integrityText(const TestResult& r) {
  if (r.transport == TransportKind::kSimulated) return "simulated: no data moved";
  return r.integrity.toString();
}

std::string integrityCell(const TestResult& r) {
  if (r.transport == TransportKind::kSimulated) return "simulated: no data moved";
  if (!r.integrity.checked) return "-";
  return r.integrity.wrong_bytes == 0 ? "ok" : std::to_string(r.integrity.wrong_bytes) + " B wrong";
}

std::string mainFigure(const TestResult& r) {
  const auto& m = r.measurement;
  if (m.has_bandwidth) return fmt(m.bw.avg_gbps, 2) + " Gb/s";
  if (m.has_latency) return fmt(m.lat.median_us, 2) + " us";
  return "-";
}

std::string resultsTable(const std::vector<TestResult>& rows, uint64_t total) {
  if (rows.empty()) return "no results\n";
  std::vector<std::vector<std::string>> t{{"TIME", "TEST ID", "RUN", "STATUS", "OP", "SIZE",
                                           "INITIATOR", "TARGET", "DATA PATH", "RESULT",
                                           "INTEGRITY", "REASON"}};
  for (const auto& r : rows) {
    const std::string integrity = integrityCell(r);
    std::string reason = r.reason.size() > 60 ? r.reason.substr(0, 57) + "..." : r.reason;
    t.push_back({formatRfc3339(r.started_ms).substr(0, 19), r.test_id,
                 r.run_id.empty() ? "-" : r.run_id, toString(r.status),
                 std::string(toString(r.op)) + "/" + toString(r.mode), formatSize(r.message_size),
                 endpointLabel(r.initiator), endpointLabel(r.target), dataPath(r), mainFigure(r),
                 integrity, reason});
  }
  std::string out = renderTable(t);
  const std::string of = total > kResultCountCap ? "more than " + std::to_string(kResultCountCap)
                                                 : std::to_string(total);
  if (total > rows.size()) {
    out += std::to_string(rows.size()) + " of " + of +
           " results, newest first (--limit N for more, --limit 0 for all)\n";
  } else if (total > 0) {
    out += std::to_string(rows.size()) + " of " + of + " results\n";
  }
  return out;
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
                 r.transport == TransportKind::kSimulated ? integrityCell(r)
                 : !r.integrity.checked                   ? "-"
                 : r.integrity.ok()                       ? "ok"
                                                          : r.integrity.toString()});
  }
  std::string out;
  if (!rows.empty()) {
    const auto& r = rows.front();
    out = std::string("sweep ") + r.run_id + ": " + endpointLabel(r.initiator) + " -> " +
          endpointLabel(r.target) + "  " + toString(r.op) + " " + toString(r.mode) +
          "  data path " + dataPath(r) + "\n";
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
  o << "pair      " << endpointLabel(r.initiator) << " -> " << endpointLabel(r.target) << "  op "
    << toString(r.op) << " " << toString(r.mode) << ", " << formatSize(r.message_size) << " x "
    << r.iterations << ", " << r.num_qps << " QP\n";
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
  o << "integrity " << integrityText(r) << "\n";
  return o.str();
}

// ---------------------------------------------------------------- CSV

std::string csvField(const std::string& v) {
  if (v.find_first_of(",\"\r\n") == std::string::npos) return v;
  std::string out = "\"";
  for (char c : v) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string csvRows(const std::vector<std::vector<std::string>>& rows) {
  std::string out;
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      if (i) out += ",";
      out += csvField(row[i]);
    }
    out += "\r\n";
  }
  return out;
}

std::string csvNumber(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

namespace {

const std::vector<std::string>& resultCsvHeader() {
  static const std::vector<std::string> kHeader = [] {
    std::vector<std::string> h{"test_id",
                               "run_id",
                               "started",
                               "finished",
                               "status",
                               "op",
                               "mode",
                               "transport",
                               "gpudirect",
                               "data_path",
                               "message_size_bytes",
                               "iterations",
                               "num_qps",
                               "path_mtu"};
    for (const char* side : {"initiator", "target"}) {
      for (const char* f : {"worker", "host", "nic", "port", "gpu", "gpu_pci", "memory", "reg_path",
                            "gid_index", "topo_class"}) {
        h.push_back(std::string(side) + "_" + f);
      }
    }
    for (const char* f : {"bw_avg_gbps",
                          "bw_peak_gbps",
                          "bw_msg_rate_mpps",
                          "bw_bytes",
                          "bw_messages",
                          "bw_seconds",
                          "lat_samples",
                          "lat_min_us",
                          "lat_median_us",
                          "lat_mean_us",
                          "lat_stdev_us",
                          "lat_p99_us",
                          "lat_p999_us",
                          "lat_max_us",
                          "staging_seconds",
                          "integrity_checked",
                          "integrity_bytes_checked",
                          "integrity_wrong_bytes",
                          "integrity_first_wrong_offset",
                          "integrity_where",
                          "initiator_cpu_binding",
                          "target_cpu_binding",
                          "reason"}) {
      h.push_back(f);
    }
    return h;
  }();
  return kHeader;
}

std::vector<std::string> resultCsvRow(const TestResult& r) {
  std::vector<std::string> row{r.test_id,
                               r.run_id,
                               formatRfc3339(r.started_ms),
                               formatRfc3339(r.finished_ms),
                               toString(r.status),
                               toString(r.op),
                               toString(r.mode),
                               toString(r.transport),
                               r.gpudirect() ? "true" : "false",
                               dataPath(r),
                               std::to_string(r.message_size),
                               std::to_string(r.iterations),
                               std::to_string(r.num_qps),
                               std::to_string(r.path_mtu)};
  for (const EndpointRecord* e : {&r.initiator, &r.target}) {
    for (const std::string& v :
         {e->worker, e->host, e->nic, std::to_string(e->port), std::to_string(e->gpu), e->gpu_pci,
          std::string(toString(e->memory)), std::string(toString(e->reg_path)),
          std::to_string(e->gid_index), e->topo_class}) {
      row.push_back(v);
    }
  }
  const Measurement& m = r.measurement;
  const bool bw = m.has_bandwidth, lat = m.has_latency;
  for (const std::string& v : {bw ? csvNumber(m.bw.avg_gbps) : "",
                               bw ? csvNumber(m.bw.peak_gbps) : "",
                               bw ? csvNumber(m.bw.msg_rate_mpps) : "",
                               bw ? std::to_string(m.bw.bytes) : "",
                               bw ? std::to_string(m.bw.messages) : "",
                               bw ? csvNumber(m.bw.seconds) : "",
                               lat ? std::to_string(m.lat.samples) : "",
                               lat ? csvNumber(m.lat.min_us) : "",
                               lat ? csvNumber(m.lat.median_us) : "",
                               lat ? csvNumber(m.lat.mean_us) : "",
                               lat ? csvNumber(m.lat.stdev_us) : "",
                               lat ? csvNumber(m.lat.p99_us) : "",
                               lat ? csvNumber(m.lat.p999_us) : "",
                               lat ? csvNumber(m.lat.max_us) : "",
                               csvNumber(m.staging_seconds),
                               std::string(r.integrity.checked ? "true" : "false"),
                               std::to_string(r.integrity.bytes_checked),
                               std::to_string(r.integrity.wrong_bytes),
                               std::to_string(r.integrity.first_wrong_offset),
                               r.integrity.where,
                               r.initiator.cpu_binding,
                               r.target.cpu_binding,
                               r.reason}) {
    row.push_back(v);
  }
  return row;
}

}  // namespace

std::string resultsCsv(const std::vector<TestResult>& rows) {
  std::vector<std::vector<std::string>> t{resultCsvHeader()};
  for (const auto& r : rows) t.push_back(resultCsvRow(r));
  return csvRows(t);
}

// ---------------------------------------------------------------- history

std::string historyTable(const std::vector<TestResult>& rows) {
  if (rows.empty()) return "no results for this pair (widen --since, or drop --size/--op/--mode)\n";
  std::vector<std::vector<std::string>> t{{"TIME", "RUN", "TEST ID", "DIRECTION", "OP", "MODE",
                                           "SIZE", "RESULT", "STATUS", "DATA PATH", "REASON"}};
  for (const auto& r : rows) {
    std::string reason = r.reason.size() > 60 ? r.reason.substr(0, 57) + "..." : r.reason;
    t.push_back({formatRfc3339(r.started_ms).substr(0, 19), r.run_id.empty() ? "-" : r.run_id,
                 r.test_id, endpointLabel(r.initiator) + " -> " + endpointLabel(r.target),
                 toString(r.op), toString(r.mode), formatSize(r.message_size), mainFigure(r),
                 toString(r.status), dataPath(r), reason.empty() ? "-" : reason});
  }
  return renderTable(t);
}

std::string resultWhole(const TestResult& r) {
  std::ostringstream o;
  o << "test       " << r.test_id << "  " << toString(r.status) << "\n";
  o << "reason     " << (r.reason.empty() ? "-" : r.reason) << "\n";
  o << "run        " << (r.run_id.empty() ? "- (ad hoc)" : r.run_id);
  if (r.plan_index >= 0) o << "  plan index " << r.plan_index;
  o << "\n";
  o << "row id     " << r.id << "\n";
  o << "started    " << formatRfc3339(r.started_ms) << "  finished " << formatRfc3339(r.finished_ms)
    << "  (" << fmt(static_cast<double>(r.finished_ms - r.started_ms) / 1e3, 3) << " s)\n";
  o << "test       " << toString(r.op) << " " << toString(r.mode) << ", "
    << formatSize(r.message_size) << " (" << r.message_size << " B) x " << r.iterations << ", "
    << r.num_qps << " QP";
  if (r.path_mtu > 0) o << ", path MTU " << r.path_mtu;
  o << "\n";
  o << "data path  " << dataPath(r);
  if (r.transport == TransportKind::kEmulated) o << "  (software transport: NOT RDMA)";
  if (r.transport == TransportKind::kSimulated) o << "  (simulated: no data moved)";
  o << "\n";
  for (const auto* side : {&r.initiator, &r.target}) {
    const EndpointRecord& e = *side;
    o << (side == &r.initiator ? "initiator  " : "target     ") << e.worker << " (host "
      << (e.host.empty() ? "-" : e.host) << ")  nic " << (e.nic.empty() ? "-" : e.nic) << " port "
      << e.port << "  gid index " << e.gid_index << "\n";
    o << "           memory " << toString(e.memory);
    if (e.memory == MemoryKind::kCuda) {
      o << " gpu " << e.gpu << " (" << (e.gpu_pci.empty() ? "-" : e.gpu_pci) << ")";
    }
    o << "  registration " << toString(e.reg_path) << "  GPU-NIC path "
      << (e.topo_class.empty() ? "-" : e.topo_class);
    // This side's own part of the claim: GPU memory that the NIC moved directly, or not.
    if (e.memory == MemoryKind::kCuda) {
      o << "  GPUDirect " << (isGpuDirect(r.transport, e.memory, e.reg_path) ? "yes" : "no");
    }
    o << "\n";
    // Where this side's test thread ran (verbs: the NIC's NUMA node, or --cpu).
    if (!e.cpu_binding.empty()) o << "           thread " << e.cpu_binding << "\n";
  }
  const Measurement& m = r.measurement;
  o << "measured   " << formatSize(m.message_size) << " x " << m.iterations << " (+"
    << m.warmup_iterations << " warm-up)\n";
  if (m.has_bandwidth) {
    o << "bandwidth  avg " << fmt(m.bw.avg_gbps, 3) << " Gb/s (" << fmt(m.bw.avgGBps(), 3)
      << " GB/s)  peak " << fmt(m.bw.peak_gbps, 3) << " Gb/s (" << fmt(m.bw.peakGBps(), 3)
      << " GB/s)  msg rate " << fmt(m.bw.msg_rate_mpps, 4) << " Mpps\n";
    o << "           " << m.bw.bytes << " B in " << m.bw.messages << " messages over "
      << fmt(m.bw.seconds, 6) << " s  [decimal units]\n";
  } else {
    o << "bandwidth  -\n";
  }
  if (m.has_latency) {
    o << "latency    " << m.lat.samples << " samples  min " << fmt(m.lat.min_us, 2) << "  median "
      << fmt(m.lat.median_us, 2) << "  mean " << fmt(m.lat.mean_us, 2) << "  stdev "
      << fmt(m.lat.stdev_us, 2) << "  p99 " << fmt(m.lat.p99_us, 2) << "  p99.9 "
      << fmt(m.lat.p999_us, 2) << "  max " << fmt(m.lat.max_us, 2) << " us\n";
  } else {
    o << "latency    -\n";
  }
  o << "staging    " << fmt(m.staging_seconds * 1e3, 3) << " ms of host<->GPU copies\n";
  if (m.counters.valid) {
    o << "counters   xmit " << m.counters.xmit_bytes << " B / " << m.counters.xmit_packets
      << " pkts  rcv " << m.counters.rcv_bytes << " B / " << m.counters.rcv_packets
      << " pkts  errors " << m.counters.errors << "\n";
  } else {
    o << "counters   -\n";
  }
  o << "integrity  " << integrityText(r);
  if (r.integrity.checked && r.transport != TransportKind::kSimulated) {
    o << "  (" << r.integrity.bytes_checked << " B checked";
    if (r.integrity.wrong_bytes > 0) {
      o << ", first wrong at offset " << r.integrity.first_wrong_offset;
    }
    if (!r.integrity.where.empty()) o << ", " << r.integrity.where;
    o << ")";
  }
  o << "\n";
  o << "gpudirect  " << (r.gpudirect() ? "yes" : "no")
    << "  (yes only for a passed test whose GPU sides all used dmabuf or peermem)\n";
  return o.str();
}

}  // namespace gdrmesh::cli
