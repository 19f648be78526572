#include "coordinator/orchestrator/fabric_hosts.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "common/fabric/host_match.h"

namespace gdrmesh {

std::pair<std::string, std::string> splitTestedEnd(const std::string& end) {
  const size_t slash = end.find('/');
  if (slash == std::string::npos) return {end, ""};
  return {end.substr(0, slash), end.substr(slash + 1)};
}

namespace {

// The verdicts of each tested end, the sweep's own tests only, by end.
std::map<std::string, EndVerdicts> verdictsByEnd(const std::vector<PairVerdict>& verdicts) {
  std::unordered_map<std::string, EndVerdicts> by;
  for (const PairVerdict& v : verdicts) {
    if (v.retest) continue;
    by[v.src].add(v.verdict);
    if (v.dst != v.src) by[v.dst].add(v.verdict);
  }
  return {by.begin(), by.end()};
}

// The sweep's suspects by (kind, name), the highest score of each.
class SuspectIndex {
 public:
  explicit SuspectIndex(const std::vector<Suspect>& suspects) {
    for (const Suspect& s : suspects) {
      const Suspect*& slot = best_[{s.kind, s.name}];
      if (slot == nullptr || s.score > slot->score) slot = &s;
    }
  }
  // `current` becomes the suspect (kind, name) when there is one with a higher score.
  void raise(std::optional<Suspect>& current, const std::string& kind,
             const std::string& name) const {
    auto it = best_.find({kind, name});
    if (it == best_.end()) return;
    if (!current || it->second->score > current->score) current = *it->second;
  }

 private:
  std::map<std::pair<std::string, std::string>, const Suspect*> best_;
};

// Why a tested end has no switch port in an InfiniBand snapshot, and what to do.
std::string whyNoSwitch(const SweepFabric& fabric, const fabric::HostMatch& match,
                        const std::string& worker, const fabric::Endpoint& ep) {
  if (!match.matched(worker)) {
    return "worker " + worker + " is matched to no HCA of " + fabric.source() +
           " (no node description starts with its name or hostname); name its HCA under "
           "fabric_hosts: in the cluster config";
  }
  if (ep.node == nullptr) {
    return "the HCA of worker " + worker + " is no longer in " + fabric.source() +
           "; rediscover the fabric";
  }
  if (ep.port == nullptr) {
    return "HCA " + ep.node->name + " has no Active port in " + fabric.source() +
           "; check its cable and the subnet manager";
  }
  return "HCA " + ep.node->name + " port " + std::to_string(ep.port->number) +
         " is cabled to no switch in " + fabric.source() + "; check its cable";
}

bool rowWorse(const SwitchHostRow& a, const SwitchHostRow& b) {
  const double sa = a.suspect ? a.suspect->score : -1;
  const double sb = b.suspect ? b.suspect->score : -1;
  return std::make_tuple(b.verdicts.fail, sb, a.host, a.hca, a.switch_port) <
         std::make_tuple(a.verdicts.fail, sa, b.host, b.hca, b.switch_port);
}

bool switchWorse(const SwitchHosts& a, const SwitchHosts& b) {
  return std::make_tuple(b.verdicts.fail, b.suspects, a.name, a.guid) <
         std::make_tuple(a.verdicts.fail, a.suspects, b.name, b.guid);
}

// The rows grouped by switch, each switch's rows and the switches worst first.
std::vector<SwitchHosts> groupBySwitch(const fabric::FabricIndex& index,
                                       std::map<std::pair<uint64_t, int>, SwitchHostRow>& rows) {
  std::map<uint64_t, SwitchHosts> by_switch;
  for (auto& [key, row] : rows) {
    SwitchHosts& s = by_switch[key.first];
    s.guid = key.first;
    s.name = index.node(key.first)->name;
    s.verdicts.add(row.verdicts);
    s.hosts_failing += row.verdicts.fail > 0 ? 1 : 0;
    s.suspects += row.suspect ? 1 : 0;
    s.rows.push_back(std::move(row));
  }
  std::vector<SwitchHosts> out;
  out.reserve(by_switch.size());
  for (auto& [guid, s] : by_switch) {
    std::sort(s.rows.begin(), s.rows.end(), rowWorse);
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(), switchWorse);
  return out;
}

// The registry's workers and the tested ones it lacks (matched by name alone), as a sweep
// matches them.
std::vector<WorkerStatus> workersToMatch(const std::vector<WorkerStatus>& workers,
                                         const std::map<std::string, EndVerdicts>& ends) {
  std::vector<WorkerStatus> all = workers;
  std::set<std::string> known;
  for (const WorkerStatus& w : workers) known.insert(w.name);
  for (const auto& [end, v] : ends) {
    std::string worker = splitTestedEnd(end).first;
    if (!known.insert(worker).second) continue;
    WorkerStatus w;
    w.name = std::move(worker);
    all.push_back(std::move(w));
  }
  return all;
}

}  // namespace

SwitchHostTable switchHostTable(const SweepFabric& fabric, const std::vector<WorkerStatus>& workers,
                                const std::vector<PairVerdict>& verdicts,
                                const std::vector<Suspect>& suspects) {
  const std::map<std::string, EndVerdicts> ends = verdictsByEnd(verdicts);
  const fabric::HostMatch match = fabric.match(workersToMatch(workers, ends));
  const fabric::FabricIndex index(fabric.fabric());
  const SuspectIndex suspect_of(suspects);
  std::map<std::pair<uint64_t, int>, SwitchHostRow> rows;  // by (switch GUID, switch port)
  SwitchHostTable t;
  for (const auto& [end, v] : ends) {
    const auto [worker, nic] = splitTestedEnd(end);
    const fabric::Endpoint ep = hcaTestEndpoint(match.hcaFor(index, worker, nic));
    const fabric::Node* sw = ep.port != nullptr && ep.port->remote_guid != 0
                                 ? index.node(ep.port->remote_guid)
                                 : nullptr;
    if (sw == nullptr || sw->kind != fabric::NodeKind::kSwitch) {
      t.unplaced.push_back({end, v, whyNoSwitch(fabric, match, worker, ep)});
      continue;
    }
    SwitchHostRow& r = rows[{sw->guid, ep.port->remote_port}];
    r.host = worker;
    r.hca = ep.node->name;
    r.hca_port = ep.port->number;
    r.switch_port = ep.port->remote_port;
    r.verdicts.add(v);
    suspect_of.raise(r.suspect, "host", worker);
    suspect_of.raise(r.suspect, "nic", end);
    const std::string device = fabric::deviceOfNodeDescription(ep.node->name);
    if (!device.empty()) suspect_of.raise(r.suspect, "nic", worker + "/" + device);
  }
  t.switches = groupBySwitch(index, rows);
  return t;
}

namespace {

// Why a tested end has no host switch port in an LLDP snapshot, and what to do.
std::string whyNoNeighbour(const fabric::EthFabric& f, const std::string& host,
                           const std::string& nic) {
  for (const fabric::EthUnattached& u : f.unknown) {
    if (u.host == host && (nic.empty() || u.device == nic)) {
      return u.nicName() + ": " + u.reason + (u.fix.empty() ? "" : "; " + u.fix);
    }
  }
  if (std::binary_search(f.hosts.begin(), f.hosts.end(), host)) {
    return "host " + host + " answered LLDP without a NIC" + (nic.empty() ? "" : " " + nic) +
           " linked to a switch port; check that the NIC is RoCE and its port is up";
  }
  return "host " + host +
         " is not in the LLDP snapshot; ask it: `gdrmesh fabric discover "
         "--worker " +
         host + " --lldp`";
}

bool portWorse(const LldpPortRow& a, const LldpPortRow& b) {
  const double sa = a.suspect ? a.suspect->score : -1;
  const double sb = b.suspect ? b.suspect->score : -1;
  return std::make_tuple(sb, b.failed, a.switch_name, a.switch_port, a.host, a.device) <
         std::make_tuple(sa, a.failed, b.switch_name, b.switch_port, b.host, b.device);
}

}  // namespace

LldpPortTable lldpPortTable(const fabric::EthFabric& f, const std::vector<PairVerdict>& verdicts,
                            const std::vector<Suspect>& suspects) {
  LldpPortTable t;
  std::map<const fabric::EthLink*, EndVerdicts> on;
  for (const auto& [end, v] : verdictsByEnd(verdicts)) {
    const auto [host, nic] = splitTestedEnd(end);
    const fabric::EthLink* l = fabric::ethLinkOfEnd(f, host, nic);
    if (l == nullptr) {
      t.unplaced.push_back({end, v, whyNoNeighbour(f, host, nic)});
      continue;
    }
    on[l].add(v);
  }
  const SuspectIndex suspect_of(suspects);
  t.ports.reserve(f.links.size());
  for (const fabric::EthLink& l : f.links) {
    LldpPortRow r;
    r.switch_name = l.switch_name;
    r.chassis_id = l.chassis_id;
    r.switch_port = l.switch_port;
    r.host = l.host;
    r.device = l.device;
    r.netdev = l.netdev;
    r.nic_port = l.port;
    auto it = on.find(&l);
    if (it != on.end()) {
      r.tests = it->second.tests();
      r.failed = it->second.fail;
    }
    suspect_of.raise(r.suspect, "switch_port", r.switchPortName());
    t.ports.push_back(std::move(r));
  }
  std::sort(t.ports.begin(), t.ports.end(), portWorse);
  return t;
}

FabricHostTables fabricHostTables(const FabricOfSweep& fabric,
                                  const std::vector<WorkerStatus>& workers,
                                  const std::vector<PairVerdict>& verdicts,
                                  const std::vector<Suspect>& suspects) {
  FabricHostTables t;
  if (fabric.infiniband) {
    t.source = fabric.infiniband->source();
    t.infiniband = switchHostTable(*fabric.infiniband, workers, verdicts, suspects);
  } else if (fabric.lldp) {
    t.source = fabric::kLldpSource;
    t.lldp = lldpPortTable(*fabric.lldp, verdicts, suspects);
  }
  return t;
}

}  // namespace gdrmesh
