// FabricRecorder's RoCE side (fabric_history.h): a worker's LLDP answer becomes part of the
// cluster's Ethernet snapshot (common/fabric/lldp.h), stored with what changed for its hosts.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "common/fabric/lldp.h"
#include "coordinator/orchestrator/fabric_history.h"

namespace gdrmesh {
namespace {

// The snapshot of `prev` with `answer`'s host replaced by its answer (the others as last heard).
fabric::EthFabric mergeLldpAnswer(const fabric::EthFabric& prev, const fabric::LldpHost& answer,
                                  int64_t now_ms) {
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
    if (name != answer.host) host_of(name);
  }
  for (const auto& l : prev.links) {
    if (l.host == answer.host) continue;
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
    if (u.host == answer.host) continue;
    fabric::LldpNic n;
    n.device = u.device;
    n.port = u.port;
    n.netdev = u.netdev;
    n.link_layer = "Ethernet";
    n.reason = u.reason;
    n.fix = u.fix;
    host_of(u.host).nics.push_back(std::move(n));
  }
  hosts.push_back(answer);
  return fabric::buildEthFabric(hosts, now_ms);
}

}  // namespace

Result<FabricRecord> FabricRecorder::recordLldp(const std::string& worker,
                                                const fabric::LldpHost& answer) {
  FabricRecord rec;
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
  const fabric::EthFabric now = mergeLldpAnswer(prev, answer, clock_.unixMs());
  if (have_prev) {
    for (const auto& x : fabric::diffEthFabrics(prev, now, /*all_hosts=*/false)) {
      rec.findings.push_back(FabricFindingRecord{x.kind, x.switch_name, x.port, x.message});
    }
  }
  // A NIC of the answering host without a neighbour is a finding of its own (with the fix),
  // unless the diff already says its neighbour went.
  std::set<std::string> gone;
  for (const auto& x : rec.findings) {
    if (x.kind == "neighbour_gone") gone.insert(x.message.substr(0, x.message.find(':')));
  }
  for (const auto& u : now.unknown) {
    if (u.host != answer.host) continue;
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
