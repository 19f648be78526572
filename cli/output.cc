#include "cli/output.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <sstream>

#include "common/json.h"
#include "common/units.h"
#include "convert.h"

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

std::string mainFigure(const TestResult& r) {
  const auto& m = r.measurement;
  if (m.has_bandwidth) return fmt(m.bw.avg_gbps, 2) + " Gb/s";
  if (m.has_latency) return fmt(m.lat.median_us, 2) + " us";
  return "-";
}

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
                 endpointLabel(r.initiator), endpointLabel(r.target), dataPath(r), mainFigure(r),
                 integrity, reason});
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
  o << "integrity " << r.integrity.toString() << "\n";
  return o.str();
}

// ---------------------------------------------------------------- sweeps

std::string formatElapsed(double seconds) {
  if (seconds < 0 || !std::isfinite(seconds)) return "-";
  auto total = static_cast<int64_t>(std::llround(seconds));
  char buf[48];
  if (total < 60) {
    std::snprintf(buf, sizeof(buf), "%llds", static_cast<long long>(total));
  } else if (total < 3600) {
    std::snprintf(buf, sizeof(buf), "%lldm%02llds", static_cast<long long>(total / 60),
                  static_cast<long long>(total % 60));
  } else {
    std::snprintf(buf, sizeof(buf), "%lldh%02lldm", static_cast<long long>(total / 3600),
                  static_cast<long long>((total % 3600) / 60));
  }
  return buf;
}

std::string progressLine(const v1::SweepProgress& p) {
  std::string s = "sweep " + p.id() + " " + p.state() + "  " + std::to_string(p.tests_done()) +
                  "/" + std::to_string(p.tests_total()) + " tests  " +
                  std::to_string(p.tests_failed()) + " failed";
  if (p.tests_skipped() > 0) s += "  " + std::to_string(p.tests_skipped()) + " skipped";
  if (p.retests() > 0) s += "  " + std::to_string(p.retests()) + " retests";
  s += "  elapsed " + formatElapsed(p.elapsed_seconds());
  if ((p.state() == "running" || p.state() == "queued") && p.eta_seconds() >= 0) {
    s += "  ETA " + formatElapsed(p.eta_seconds());
  }
  if (!p.verdict().empty()) s += "  verdict " + p.verdict();
  if (!p.reason().empty() && p.state() != "running") s += "  (" + p.reason() + ")";
  return s;
}

bool ProgressThrottle::shouldPrint(const v1::SweepProgress& p) {
  int bucket = p.tests_total() == 0
                   ? 0
                   : static_cast<int>(uint64_t{p.tests_done()} * 20 / uint64_t{p.tests_total()});
  bool print = p.state() != last_state_ || bucket > last_bucket_;
  last_state_ = p.state();
  if (bucket > last_bucket_) last_bucket_ = bucket;
  return print;
}

namespace {

std::string joined(const google::protobuf::RepeatedPtrField<std::string>& items, const char* sep) {
  std::string s;
  for (const auto& i : items) s += (s.empty() ? "" : sep) + i;
  return s;
}

std::string when(int64_t ms) {
  return ms > 0 ? formatRfc3339(ms).substr(0, 19) + "Z" : "-";
}

}  // namespace

std::string sweepReportText(const v1::SweepReport& r, const ReportOptions& opts) {
  const auto& p = r.progress();
  std::ostringstream o;
  o << "sweep     " << p.id() << "  " << p.state();
  if (!p.verdict().empty()) o << "  verdict " << p.verdict();
  o << "\n";
  if (!p.reason().empty()) o << "reason    " << p.reason() << "\n";
  o << "pattern   " << (p.pattern().empty() ? "-" : p.pattern());
  if (!p.name().empty()) o << "  name " << p.name();
  o << "\n";
  o << "started   " << when(p.started_ms()) << "  finished " << when(p.finished_ms())
    << "  elapsed " << formatElapsed(p.elapsed_seconds()) << "\n";
  uint32_t passed = p.tests_done() >= p.tests_failed() + p.tests_skipped()
                        ? p.tests_done() - p.tests_failed() - p.tests_skipped()
                        : 0;
  o << "tests     " << p.tests_done() << "/" << p.tests_total() << " done: " << passed
    << " passed, " << p.tests_failed() << " failed, " << p.tests_skipped() << " skipped";
  if (p.retests() > 0) o << ", " << p.retests() << " retests";
  if (p.rounds_total() > 0) o << "  (" << p.rounds_total() << " rounds)";
  o << "\n";
  for (const auto& n : r.notes()) o << "note      " << n << "\n";

  std::vector<std::vector<std::string>> t{
      {"VERDICT", "SRC", "DST", "SIZE", "VALUE", "CLASS", "REASONS"}};
  size_t failing = 0;
  for (const auto& v : r.verdicts()) {
    if (v.verdict() == "FAIL") ++failing;
    if (!opts.all_verdicts && v.verdict() != "FAIL") continue;
    std::string value = v.unit().empty() ? "-" : fmt(v.value(), 2) + " " + v.unit();
    t.push_back({v.verdict() + (v.retest() ? " (retest)" : ""), v.src(), v.dst(),
                 formatSize(v.message_size()), value, v.topo_class().empty() ? "-" : v.topo_class(),
                 v.reasons().empty() ? "-" : joined(v.reasons(), "; ")});
  }
  if (opts.all_verdicts) {
    o << "\nverdicts (" << r.verdicts_size() << ", " << failing << " failing)\n";
    o << (t.size() > 1 ? renderTable(t) : "no verdicts\n");
  } else if (failing > 0) {
    o << "\nfailing verdicts (" << failing << " of " << r.verdicts_size() << ")\n"
      << renderTable(t);
  }
  if (r.suspects_size() > 0) {
    std::vector<const v1::Suspect*> ranked;
    for (const auto& s : r.suspects()) ranked.push_back(&s);
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const auto* a, const auto* b) { return a->score() > b->score(); });
    o << "\nsuspects, most likely first\n";
    int rank = 0;
    for (const auto* s : ranked) {
      o << "  " << ++rank << ". " << s->kind() << " " << s->name() << "  score "
        << fmt(s->score(), 2) << "\n";
      for (const auto& e : s->evidence()) o << "       - " << e << "\n";
    }
  }
  if (opts.results) {
    std::vector<TestResult> rows;
    for (const auto& res : r.results()) rows.push_back(convert::fromProto(res));
    o << "\n" << resultsTable(rows);
  }
  return o.str();
}

std::string sweepsTable(const std::vector<v1::SweepProgress>& sweeps) {
  if (sweeps.empty()) return "no sweeps\n";
  std::vector<std::vector<std::string>> t{
      {"ID", "STATE", "VERDICT", "PATTERN", "NAME", "CREATED", "TESTS", "FAILED", "ELAPSED"}};
  for (const auto& p : sweeps) {
    t.push_back({p.id(), p.state(), p.verdict().empty() ? "-" : p.verdict(),
                 p.pattern().empty() ? "-" : p.pattern(), p.name().empty() ? "-" : p.name(),
                 when(p.created_ms()),
                 std::to_string(p.tests_done()) + "/" + std::to_string(p.tests_total()),
                 std::to_string(p.tests_failed()), formatElapsed(p.elapsed_seconds())});
  }
  return renderTable(t);
}

std::string formatLocalTime(int64_t unix_ms) {
  if (unix_ms <= 0) return "-";
  std::time_t secs = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  localtime_r(&secs, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M %Z", &tm);
  return buf;
}

std::string schedulesTable(const std::vector<v1::ScheduleInfo>& schedules, int64_t now_ms) {
  if (schedules.empty()) return "no schedules (add them under `schedules:` in the config)\n";
  std::vector<std::vector<std::string>> t{{"NAME", "CRON", "TZ", "NEXT RUN (LOCAL)",
                                           "NEXT RUN (UTC)", "LAST RUN", "LAST STATE", "LAST SWEEP",
                                           "MISSED"}};
  for (const auto& s : schedules) {
    std::string next_local = formatLocalTime(s.next_run_ms());
    if (s.next_run_ms() > now_ms && now_ms > 0) {
      next_local +=
          " (in " + formatElapsed(static_cast<double>(s.next_run_ms() - now_ms) / 1e3) + ")";
    }
    t.push_back({s.name(), s.cron(), s.timezone().empty() ? "-" : s.timezone(), next_local,
                 when(s.next_run_ms()), when(s.last_run_ms()),
                 s.last_state().empty() ? "-" : s.last_state(),
                 s.last_sweep_id().empty() ? "-" : s.last_sweep_id(), std::to_string(s.missed())});
  }
  return renderTable(t);
}

std::string protoJson(const google::protobuf::Message& m) {
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = true;
  opts.preserve_proto_field_names = true;
  opts.always_print_primitive_fields = true;
  std::string out;
  auto st = google::protobuf::util::MessageToJsonString(m, &out, opts);
  if (!st.ok()) return "{\"error\": \"cannot print as JSON\"}\n";
  return out;
}

}  // namespace gdrmesh::cli
