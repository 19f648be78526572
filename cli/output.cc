#include "cli/output.h"

#include <google/protobuf/util/json_util.h>

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

std::string testCountsText(const v1::SweepProgress& p) {
  const uint32_t verified = p.tests_done() >= p.tests_failed() + p.tests_skipped()
                                ? p.tests_done() - p.tests_failed() - p.tests_skipped()
                                : 0;
  return std::to_string(p.tests_done()) + "/" + std::to_string(p.tests_total()) +
         " ran: " + std::to_string(verified) + " data verified, " +
         std::to_string(p.tests_failed()) + " not verified, " + std::to_string(p.tests_skipped()) +
         " skipped";
}

std::string verdictCountsText(uint64_t pass, uint64_t fail, uint64_t skip) {
  return std::to_string(pass) + " PASS, " + std::to_string(fail) + " FAIL, " +
         std::to_string(skip) + " SKIP";
}

std::string progressLine(const v1::SweepProgress& p) {
  std::string s = "sweep " + p.id() + " " + p.state() + "  " + std::to_string(p.tests_done()) +
                  "/" + std::to_string(p.tests_total()) + " ran  " +
                  std::to_string(p.tests_failed()) + " not verified";
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

std::string selectorText(const v1::EndpointSelector& e) {
  const MemoryKind m = convert::fromProto(e.memory());
  if (m != MemoryKind::kCuda) return "host";
  return "cuda gpu" + std::to_string(e.gpu() < 0 ? 0 : e.gpu()) + " (" +
         toString(convert::fromProto(e.reg_path())) + ")";
}

std::string partTestText(const v1::SweepSpec& s) {
  const auto& t = s.test();
  std::string sizes;
  for (uint64_t z : s.sizes()) sizes += (sizes.empty() ? "" : ",") + formatSize(z);
  if (sizes.empty())
    sizes = formatSize(t.message_size() > 0 ? t.message_size() : kDefaultMessageSize);
  return std::string(toString(convert::fromProto(t.op()))) + " " +
         toString(convert::fromProto(t.mode())) + (t.bidirectional() ? " bidir" : "") + " " + sizes;
}

std::string partRunText(const v1::RunTestRequest& t) {
  if (t.duration_seconds() > 0) return fmt(t.duration_seconds(), 1) + " s";
  return std::to_string(t.iterations() > 0 ? t.iterations() : kDefaultIterations) + " iters";
}

}  // namespace

std::string sweepPartsText(const v1::SweepReport& r) {
  // A plain sweep's one part is its own spec, which the summary already shows.
  if (r.parts_size() == 0 || (r.parts_size() == 1 && !r.spec().pattern().empty())) return "";
  std::vector<std::vector<std::string>> t{
      {"#", "PATTERN", "DIRECTION", "TEST", "RUN", "MEMORY", "TESTS"}};
  for (const auto& part : r.parts()) {
    const auto& s = part.spec();
    t.push_back({std::to_string(part.index() + 1), s.pattern().empty() ? "-" : s.pattern(),
                 s.direction().empty() ? "one" : s.direction(), partTestText(s),
                 partRunText(s.test()),
                 selectorText(s.test().initiator()) + " -> " + selectorText(s.test().target()),
                 part.planned_known() ? std::to_string(part.planned()) : "?"});
  }
  std::string out = "\nwhat ran: the config's " + std::to_string(r.parts_size()) + " sweeps\n";
  return out + renderTable(t);
}

std::string figureSummaryText(const v1::SweepReport& r) {
  if (r.figures_size() == 0) return "";
  std::vector<std::vector<std::string>> t{
      {"OP", "MODE", "SIZE", "PAIRS", "MIN", "MEDIAN", "MAX", "WORST PAIRS", "WORST HOSTS"}};
  for (const auto& f : r.figures()) {
    const int digits = 2;
    std::string worst, hosts;
    for (const auto& w : f.worst()) {
      worst +=
          (worst.empty() ? "" : ", ") + w.src() + "->" + w.dst() + " " + fmt(w.value(), digits);
    }
    for (const auto& h : f.worst_hosts()) {
      hosts += (hosts.empty() ? "" : ", ") + h.host() + " " + fmt(h.median(), digits);
    }
    t.push_back({toString(convert::fromProto(f.op())), toString(convert::fromProto(f.mode())),
                 formatSize(f.message_size()), std::to_string(f.pairs()),
                 fmt(f.min(), digits) + " " + f.unit(), fmt(f.median(), digits) + " " + f.unit(),
                 fmt(f.max(), digits) + " " + f.unit(), worst.empty() ? "-" : worst,
                 hosts.empty() ? "-" : hosts});
  }
  return "\nfigures over pairs (Gb/s: higher is better; us: median latency, lower is better; "
         "worst first)\n" +
         renderTable(t);
}

namespace {

// The links' verdicts of a sweep on a fabric: those that fail it always, the rest with `all`.
std::string linkVerdictsText(const v1::SweepReport& r, bool all) {
  if (r.links_size() == 0) return "";
  std::vector<const v1::LinkVerdict*> ranked;
  for (const auto& l : r.links()) ranked.push_back(&l);
  // Worst first; the report keeps them by name, and so does each verdict here.
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto* a, const auto* b) {
    return fabric::linkVerdictSeverity(a->verdict()) > fabric::linkVerdictSeverity(b->verdict());
  });
  size_t failing = 0, not_covered = 0, ok = 0;
  std::vector<std::vector<std::string>> t{{"VERDICT", "LINK", "ENDS", "EVIDENCE"}};
  for (const auto* l : ranked) {
    const bool fails = fabric::linkVerdictFails(l->verdict());
    failing += fails ? 1 : 0;
    not_covered += l->verdict() == fabric::kLinkNotCovered ? 1 : 0;
    ok += l->verdict() == fabric::kLinkOk ? 1 : 0;
    if (!fails && !all) continue;
    t.push_back({l->verdict(), l->link(),
                 l->switch_name() + " port " + std::to_string(l->port()) + " (" +
                     fabric::guidHex(l->switch_guid()) + ") <-> " + l->remote_name() + " port " +
                     std::to_string(l->remote_port()) + " (" + fabric::guidHex(l->remote_guid()) +
                     ")",
                 l->evidence().empty() ? "-" : joined(l->evidence(), "; ")});
  }
  std::ostringstream o;
  o << "\nlinks (" << r.links_size() << ": " << failing << " not ok, " << ok << " ok, "
    << not_covered << " not covered; worst first)\n";
  if (t.size() > 1) o << renderTable(t);
  if (!all && failing < static_cast<size_t>(r.links_size())) {
    o << "(the " << (ok + not_covered) << " ok and not covered links: --verdicts all lists them)\n";
  }
  return o.str();
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
  o << "tests     " << testCountsText(p);
  if (p.retests() > 0) o << ", " << p.retests() << " retests";
  if (p.rounds_total() > 0) o << "  (" << p.rounds_total() << " rounds)";
  o << "\n";
  // The counts cover every verdict when the report holds a page of them (a coordinator older
  // than paging sends none, and every verdict).
  const auto& c = r.verdict_counts();
  const bool counted = c.pass() + c.fail() + c.skip() > 0;
  uint64_t pass = c.pass(), failing = c.fail(), skip = c.skip();
  if (!counted) {
    for (const auto& v : r.verdicts()) {
      pass += v.verdict() == "PASS";
      failing += v.verdict() == "FAIL";
      skip += v.verdict() == "SKIP";
    }
  }
  const uint64_t total = pass + failing + skip;
  if (total > 0 || !p.verdict().empty()) {
    o << "verdicts  " << verdictCountsText(pass, failing, skip);
    if (!p.verdict().empty()) o << ": verdict " << p.verdict();
    o << "\n";
  }
  for (const auto& n : r.notes()) o << "note      " << n << "\n";
  o << sweepPartsText(r);
  o << figureSummaryText(r);

  std::vector<std::vector<std::string>> t{
      {"VERDICT", "SRC", "DST", "SIZE", "VALUE", "CLASS", "REASONS"}};
  for (const auto& v : r.verdicts()) {
    if (!opts.all_verdicts && v.verdict() != "FAIL") continue;
    std::string value = v.unit().empty() ? "-" : fmt(v.value(), 2) + " " + v.unit();
    t.push_back({v.verdict() + (v.retest() ? " (retest)" : ""), v.src(), v.dst(),
                 formatSize(v.message_size()), value, v.topo_class().empty() ? "-" : v.topo_class(),
                 v.reasons().empty() ? "-" : joined(v.reasons(), "; ")});
  }
  if (opts.all_verdicts) {
    o << "\nverdicts (" << total << ", " << failing << " failing)\n";
    o << (t.size() > 1 ? renderTable(t) : "no verdicts\n");
  } else if (failing > 0) {
    o << "\nfailing verdicts (" << failing << " of " << total << ")\n";
    // Fetched with --verdicts none: the counts without the rows.
    o << (t.size() > 1 ? renderTable(t) : "(not fetched: --verdicts failed or all)\n");
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
  o << linkVerdictsText(r, opts.all_verdicts);
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
      {"ID", "STATE", "VERDICT", "PATTERN", "NAME", "CREATED", "RAN", "NOT VERIFIED", "ELAPSED"}};
  for (const auto& p : sweeps) {
    // A sweep can FAIL on its thresholds with no failed test: its failing verdicts say how.
    std::string verdict = p.verdict().empty() ? "-" : p.verdict();
    const auto& vc = p.verdict_counts();
    if (vc.fail() > 0) {
      verdict += " (" + std::to_string(vc.fail()) + " of " +
                 std::to_string(vc.pass() + vc.fail() + vc.skip()) + ")";
    }
    t.push_back({p.id(), p.state(), verdict, p.pattern().empty() ? "-" : p.pattern(),
                 p.name().empty() ? "-" : p.name(), when(p.created_ms()),
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
                                           "MISSED", "REASON"}};
  for (const auto& s : schedules) {
    std::string next_local = formatLocalTime(s.next_run_ms());
    if (s.next_run_ms() > now_ms && now_ms > 0) {
      next_local +=
          " (in " + formatElapsed(static_cast<double>(s.next_run_ms() - now_ms) / 1e3) + ")";
    }
    // A started run shows its sweep's state (and verdict) until the sweep's end.
    std::string last_state = s.last_state().empty() ? "-" : s.last_state();
    if (!s.last_sweep_state().empty()) {
      last_state = s.last_sweep_state();
      if (!s.last_sweep_verdict().empty()) last_state += " " + s.last_sweep_verdict();
    }
    std::string reason = s.last_detail();
    if (s.catch_up_due_ms() > 0) {
      reason = "catch-up of the run due " + when(s.catch_up_due_ms()) + " waits for its workers" +
               (reason.empty() ? "" : "; " + reason);
    }
    t.push_back({s.name(), s.cron(), s.timezone().empty() ? "-" : s.timezone(), next_local,
                 when(s.next_run_ms()), when(s.last_run_ms()), last_state,
                 s.last_sweep_id().empty() ? "-" : s.last_sweep_id(), std::to_string(s.missed()),
                 reason.empty() ? "-" : reason});
  }
  return renderTable(t);
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

namespace {

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

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
  for (const std::string& v : {bw ? num(m.bw.avg_gbps) : "",
                               bw ? num(m.bw.peak_gbps) : "",
                               bw ? num(m.bw.msg_rate_mpps) : "",
                               bw ? std::to_string(m.bw.bytes) : "",
                               bw ? std::to_string(m.bw.messages) : "",
                               bw ? num(m.bw.seconds) : "",
                               lat ? std::to_string(m.lat.samples) : "",
                               lat ? num(m.lat.min_us) : "",
                               lat ? num(m.lat.median_us) : "",
                               lat ? num(m.lat.mean_us) : "",
                               lat ? num(m.lat.stdev_us) : "",
                               lat ? num(m.lat.p99_us) : "",
                               lat ? num(m.lat.p999_us) : "",
                               lat ? num(m.lat.max_us) : "",
                               num(m.staging_seconds),
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

// Flattens one JSON value into (column, text) pairs.
void flatten(const nlohmann::ordered_json& j, const std::string& prefix,
             std::vector<std::pair<std::string, std::string>>* out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) flatten(v, prefix.empty() ? k : prefix + "." + k, out);
    return;
  }
  std::string text;
  if (j.is_string()) {
    text = j.get<std::string>();
  } else if (j.is_array()) {
    for (const auto& item : j) {
      text +=
          (text.empty() ? "" : "; ") + (item.is_string() ? item.get<std::string>() : item.dump());
    }
  } else if (!j.is_null()) {
    text = j.dump();
  }
  out->emplace_back(prefix, text);
}

}  // namespace

std::string resultsCsv(const std::vector<TestResult>& rows) {
  std::vector<std::vector<std::string>> t{resultCsvHeader()};
  for (const auto& r : rows) t.push_back(resultCsvRow(r));
  return csvRows(t);
}

std::string messagesCsv(const std::vector<const google::protobuf::Message*>& records,
                        const google::protobuf::Message& prototype) {
  if (records.empty()) {
    std::vector<std::pair<std::string, std::string>> fields;
    flatten(nlohmann::ordered_json::parse(protoJson(prototype), nullptr, false), "", &fields);
    std::vector<std::string> header;
    header.reserve(fields.size());
    for (const auto& f : fields) header.push_back(f.first);
    return csvRows({header});
  }
  std::vector<std::string> header;
  std::vector<std::vector<std::pair<std::string, std::string>>> flat;
  for (const auto* m : records) {
    std::vector<std::pair<std::string, std::string>> fields;
    flatten(nlohmann::ordered_json::parse(protoJson(*m), nullptr, false), "", &fields);
    for (const auto& f : fields) {
      if (std::find(header.begin(), header.end(), f.first) == header.end()) {
        header.push_back(f.first);
      }
    }
    flat.push_back(std::move(fields));
  }
  std::vector<std::vector<std::string>> t{header};
  for (const auto& fields : flat) {
    std::vector<std::string> row(header.size());
    for (const auto& f : fields) {
      row[static_cast<size_t>(std::find(header.begin(), header.end(), f.first) - header.begin())] =
          f.second;
    }
    t.push_back(std::move(row));
  }
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

namespace {

std::string statusName(v1::TestStatus s) {
  return s == v1::TEST_STATUS_UNSPECIFIED ? "-" : toString(convert::fromProto(s));
}

}  // namespace

std::string compareSummary(const v1::CompareSweepsResponse& c) {
  return "compare " + c.a() + " -> " + c.b() + " (tolerance " + fmt(c.tolerance_pct(), 1) +
         "%): " + std::to_string(c.worse()) + " worse, " + std::to_string(c.better()) +
         " better, " + std::to_string(c.unchanged()) + " unchanged, " + std::to_string(c.added()) +
         " new, " + std::to_string(c.missing()) + " missing\n";
}

std::string compareTable(const v1::CompareSweepsResponse& c) {
  std::string out;
  if (c.rows_size() == 0) {
    out = "neither sweep has results\n";
  } else {
    std::vector<std::vector<std::string>> t{{"CHANGE", "SRC", "DST", "OP", "MODE", "SIZE", "A", "B",
                                             "CHANGE %", "STATUS A -> B", "REASON"}};
    for (const auto& r : c.rows()) {
      const std::string unit = r.unit().empty() ? "" : " " + r.unit();
      t.push_back(
          {r.change(), r.src(), r.dst(), toString(convert::fromProto(r.op())),
           toString(convert::fromProto(r.mode())), formatSize(r.message_size()),
           r.has_a() ? fmt(r.a(), 2) + unit : "-", r.has_b() ? fmt(r.b(), 2) + unit : "-",
           r.has_change_pct() ? (r.change_pct() >= 0 ? "+" : "") + fmt(r.change_pct(), 1) : "-",
           statusName(r.a_status()) + " -> " + statusName(r.b_status()),
           r.reason().empty() ? "-" : r.reason()});
    }
    out = renderTable(t);
  }
  return out + compareSummary(c);
}

std::string compareCsv(const v1::CompareSweepsResponse& c) {
  std::vector<std::vector<std::string>> t{
      {"change", "src", "dst", "op", "mode", "message_size_bytes", "a", "b", "unit", "change_pct",
       "a_status", "b_status", "a_test_id", "b_test_id", "reason"}};
  for (const auto& r : c.rows()) {
    t.push_back({r.change(), r.src(), r.dst(), toString(convert::fromProto(r.op())),
                 toString(convert::fromProto(r.mode())), std::to_string(r.message_size()),
                 r.has_a() ? num(r.a()) : "", r.has_b() ? num(r.b()) : "", r.unit(),
                 r.has_change_pct() ? num(r.change_pct()) : "",
                 r.a_status() == v1::TEST_STATUS_UNSPECIFIED ? "" : statusName(r.a_status()),
                 r.b_status() == v1::TEST_STATUS_UNSPECIFIED ? "" : statusName(r.b_status()),
                 r.a_test_id(), r.b_test_id(), r.reason()});
  }
  return csvRows(t);
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
