// FabricRecorder's RoCE side (fabric_history.h): a worker's LLDP answer becomes part of the
// cluster's Ethernet snapshot (common/fabric/lldp.h), stored with what changed for its hosts.
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "common/fabric/lldp.h"
#include "coordinator/orchestrator/fabric_history.h"

namespace gdrmesh {
namespace {

// The snapshot of `prev` with the answering hosts replaced by their answers (the others as last
// heard).
fabric::EthFabric mergeLldpAnswers(const fabric::EthFabric& prev,
                                   const std::vector<fabric::LldpHost>& answers,
                                   const std::set<std::string>& answered, int64_t now_ms) {
  std::vector<fabric::LldpHost> hosts;
  std::map<std::string, size_t> index;
  auto host_of = [&](const std::string& name) -> fabric::LldpHost& {
    auto [it, added] = index.emplace(name, hosts.size());
    if (added) {
      hosts.emplace_back();
      hosts.back().host = name;
    }
    return hosts[it->second];
  };
  for (const auto& name : prev.hosts) {
    if (answered.count(name) == 0) host_of(name);
  }
  for (const auto& l : prev.links) {
    if (answered.count(l.host) > 0) continue;
    fabric::LldpNic n;
    n.device = l.device;
    n.port = l.port;
    n.netdev = l.netdev;
    n.link_layer = "Ethernet";
    fabric::LldpNeighbour nb;
    nb.interface = l.netdev;
    nb.chassis_id = l.chassis_id;
    const fabric::EthSwitch* s = prev.switchById(l.chassis_id);
    nb.chassis_id_type = s != nullptr ? s->chassis_id_type : "";
    nb.chassis_name = l.switch_name == l.chassis_id ? "" : l.switch_name;
    nb.port_id = l.switch_port;
    nb.port_descr = l.switch_port_descr;
    nb.mfs = l.mfs;
    nb.pvid = l.pvid;
    nb.vlans = l.vlans;
    n.neighbour = std::move(nb);
    host_of(l.host).nics.push_back(std::move(n));
  }
  for (const auto& u : prev.unknown) {
    if (answered.count(u.host) > 0) continue;
    fabric::LldpNic n;
    n.device = u.device;
    n.port = u.port;
    n.netdev = u.netdev;
    n.link_layer = "Ethernet";
    n.reason = u.reason;
    n.fix = u.fix;
    host_of(u.host).nics.push_back(std::move(n));
  }
  hosts.insert(hosts.end(), answers.begin(), answers.end());
  return fabric::buildEthFabric(hosts, now_ms);
}

// One worker's line of an all-workers call, and its LLDP answer when it gave one. A worker
// without an answer gets its finding in `finding` (kind "" when it answered).
struct WorkerPart {
  LldpWorkerLine line;
  std::optional<fabric::LldpHost> answer;
  FabricFindingRecord finding;
};

WorkerPart workerPart(const LldpWorkerReply& r) {
  WorkerPart p;
  p.line.worker = r.worker;
  if (!r.online) {
    p.line.outcome = "offline";
    p.line.detail = r.worker +
                    " is offline: not asked (fix: start `gdrmesh worker` on it, or "
                    "`gdrmesh worker remove " +
                    r.worker + "`)";
  } else if (!r.call.ok()) {
    p.line.outcome = r.call.code() == Code::kDeadlineExceeded ? "timed_out"
                     : r.call.code() == Code::kUnavailable    ? "lost"
                                                              : "failed";
    p.line.detail = "no LLDP answer from " + r.worker + ": " + r.call.message() +
                    (r.call.fix().empty() ? "" : " (fix: " + r.call.fix() + ")");
  } else if (!r.outcome.status.ok() || !r.outcome.lldp) {
    fabric::DiscoverOutcome o = r.outcome;
    o.asked_lldp = true;
    if (o.status.ok()) o.status = internalError("the worker answered no LLDP answer");
    FabricRecord none = noFabricRecord(r.worker, o);
    p.line.outcome = none.snapshot.outcome;
    p.line.detail = none.snapshot.detail;
    p.finding = none.findings.front();
    return p;
  } else {
    // An answer. When lldpd could not be asked on a host with RoCE NICs, they are in it, each
    // with why (merged as the single call stores them), and the worker's line says skipped.
    const Status& asked = r.outcome.lldp->status;
    p.line.outcome = asked.ok() ? "answered" : "skipped";
    if (!asked.ok()) {
      p.line.detail = "no LLDP answer from " + r.worker + ": " + asked.message() +
                      (asked.fix().empty() ? "" : " (fix: " + asked.fix() + ")");
    }
    for (const auto& n : r.outcome.lldp->nics) {
      ++p.line.nics;
      p.line.with_neighbour += n.neighbour ? 1 : 0;
    }
    p.answer = *r.outcome.lldp;
    p.answer->host = r.worker;  // named after the worker, as the single call's answer
    return p;
  }
  p.finding = FabricFindingRecord{"no_answer", "", 0, p.line.detail};
  return p;
}

// The row's detail: "3 of 4 workers answered (1 skipped)".
std::string surveyDetail(const std::vector<LldpWorkerLine>& lines) {
  std::map<std::string, size_t> by;
  for (const auto& l : lines) ++by[l.outcome];
  std::string rest;
  for (const auto& [outcome, n] : by) {
    if (outcome == "answered") continue;
    rest += (rest.empty() ? "" : ", ") + std::to_string(n) + " " + outcome;
  }
  return std::to_string(by["answered"]) + " of " + std::to_string(lines.size()) +
         " workers answered" + (rest.empty() ? "" : " (" + rest + ")");
}

}  // namespace

Result<LldpAllRecord> FabricRecorder::recordLldpAll(const std::vector<LldpWorkerReply>& replies) {
  MutexLock lock(record_mu_);
  LldpAllRecord out;
  std::vector<fabric::LldpHost> answers;
  std::vector<std::pair<std::string, FabricFindingRecord>> missing;
  bool asked = false, only_skipped = true;
  for (const auto& r : replies) {
    WorkerPart p = workerPart(r);
    asked = asked || r.online;
    if (p.answer) answers.push_back(std::move(*p.answer));
    if (!p.finding.kind.empty()) {
      only_skipped = only_skipped && (p.line.outcome == "skipped" || !r.online);
      missing.emplace_back(r.worker, std::move(p.finding));
    }
    out.workers.push_back(std::move(p.line));
  }
  std::sort(out.workers.begin(), out.workers.end(),
            [](const auto& a, const auto& b) { return a.worker < b.worker; });
  FabricRecord& rec = out.record;
  if (!asked) {
    // Nothing to ask: nothing stored (record.snapshot.id stays 0).
    rec.snapshot.worker = kAllWorkers;
    rec.snapshot.outcome = "skipped";
    rec.snapshot.detail = replies.empty() ? "no worker is registered" : "no worker is online";
    return out;
  }
  std::vector<std::string> hosts;
  if (!answers.empty()) {
    GDR_ASSIGN_OR_RETURN(rec, mergeLldp(kAllWorkers, answers, &hosts));
  } else {
    rec.snapshot.worker = kAllWorkers;
    rec.snapshot.source = fabric::kLldpSource;
    rec.snapshot.outcome = only_skipped ? "skipped" : "failed";
  }
  rec.snapshot.detail = "LLDP from all workers: " + surveyDetail(out.workers);
  for (auto& [worker, f] : missing) {
    // What the stored snapshot holds of a worker that gave no answer.
    if (f.kind == "no_answer" && !answers.empty()) {
      const bool kept = std::binary_search(hosts.begin(), hosts.end(), worker);
      f.message += kept ? "; its NICs stay as last heard" : "; not in the snapshot";
    }
    rec.findings.push_back(std::move(f));
  }
  GDR_RETURN_IF_ERROR(store(kAllWorkers, rec));
  return out;
}

Result<FabricRecord> FabricRecorder::mergeLldp(const std::string& worker,
                                               const std::vector<fabric::LldpHost>& answers,
                                               std::vector<std::string>* hosts) {
  FabricRecord rec;
  std::set<std::string> answered;
  for (const auto& a : answers) answered.insert(a.host);
  fabric::EthFabric prev;
  GDR_ASSIGN_OR_RETURN(auto before, previousOk(0, /*lldp=*/true));
  bool have_prev = false;
  if (before && !before->snapshot_json.empty()) {
    const auto j = nlohmann::json::parse(before->snapshot_json, nullptr, false);
    auto f = j.is_discarded() ? Result<fabric::EthFabric>(invalidArgument("not JSON"))
                              : fabric::ethFabricFromJson(j);
    if (f.ok()) {
      prev = std::move(f).value();
      have_prev = true;
      rec.previous_id = before->id;
    }
  }
  const fabric::EthFabric now = mergeLldpAnswers(prev, answers, answered, clock_.unixMs());
  if (have_prev) {
    for (const auto& x : fabric::diffEthFabrics(prev, now, /*all_hosts=*/false)) {
      rec.findings.push_back(FabricFindingRecord{x.kind, x.switch_name, x.port, x.message});
    }
  }
  // A NIC of an answering host without a neighbour is a finding of its own (with the fix),
  // unless the diff already says its neighbour went.
  std::set<std::string> gone;
  for (const auto& x : rec.findings) {
    if (x.kind == "neighbour_gone") gone.insert(x.message.substr(0, x.message.find(':')));
  }
  for (const auto& u : now.unknown) {
    if (answered.count(u.host) == 0) continue;
    const std::string nic = u.host + " " + u.device + "/" + std::to_string(u.port);
    if (gone.count(nic) > 0) continue;
    rec.findings.push_back(FabricFindingRecord{
        "no_neighbour", "", 0,
        nic + ": " + u.reason + (u.fix.empty() ? "" : " (fix: " + u.fix + ")")});
  }
  rec.snapshot.worker = worker;
  rec.snapshot.outcome = "ok";
  rec.snapshot.source = fabric::kLldpSource;
  rec.snapshot.switches = static_cast<uint32_t>(now.switches.size());
  rec.snapshot.hosts = static_cast<uint32_t>(now.links.size() + now.unknown.size());
  rec.snapshot.links = static_cast<uint32_t>(now.links.size());
  rec.snapshot.snapshot_json = fabric::toJson(now).dump();
  if (hosts != nullptr) *hosts = now.hosts;
  return rec;
}

Result<std::optional<FabricSnapshotRecord>> FabricRecorder::previousOk(int64_t before_id,
                                                                       bool lldp) {
  FabricSnapshotQuery q;
  q.limit = 64;
  q.outcome = "ok";
  q.before_id = before_id;
  GDR_ASSIGN_OR_RETURN(auto rows, store_.listFabricSnapshots(q));
  for (const auto& r : rows) {
    if ((r.source == fabric::kLldpSource) != lldp) continue;
    GDR_ASSIGN_OR_RETURN(auto full, store_.getFabricSnapshot(r.id));
    return full;
  }
  return std::optional<FabricSnapshotRecord>();
}

}  // namespace gdrmesh
