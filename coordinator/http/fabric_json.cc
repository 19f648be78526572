// GET /api/sweeps/ID/fabric (declared in status_http_server.h): the sweep's links' verdicts, a
// summary per switch, its link suspects, and the hosts under each switch (fabric_hosts.h), as
// JSON. A pure rendering of domain types.
#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/fabric/counters.h"
#include "common/fabric/fabric.h"
#include "common/fabric/lldp.h"
#include "coordinator/encoding/sweep_json.h"
#include "coordinator/http/status_http_server.h"

namespace gdrmesh {
namespace {

using nlohmann::json;

// Whether a row on switch `name` is shown: every row without a filter.
bool shown(const std::string& only, const std::string& name) {
  return only.empty() || only == name;
}

json linkEndJson(const std::string& name, uint64_t guid, int port) {
  return {{"name", name}, {"guid", fabric::guidHex(guid)}, {"port", port}};
}

struct NodeCounts {
  size_t links = 0, not_ok = 0, not_covered = 0, ok = 0;
  int worst = 0;
  std::string worst_verdict = fabric::kLinkOk;
};

// links[] worst first (then by name), nodes[] (each end's switch or host) worst first, and the
// counts over every link, into `out`.
void linksJson(const std::vector<LinkVerdictRecord>& all, const std::string& only, json& out) {
  std::vector<const LinkVerdictRecord*> ranked;
  ranked.reserve(all.size());
  for (const auto& l : all) ranked.push_back(&l);
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto* a, const auto* b) {
    const int sa = fabric::linkVerdictSeverity(a->verdict);
    const int sb = fabric::linkVerdictSeverity(b->verdict);
    return sa != sb ? sa > sb : a->link < b->link;
  });
  std::map<std::string, NodeCounts> nodes;
  json counts{{"not_ok", 0}, {"not_covered", 0}, {"ok", 0}};
  json links = json::array();
  for (const LinkVerdictRecord* l : ranked) {
    const int severity = fabric::linkVerdictSeverity(l->verdict);
    const bool fails = fabric::linkVerdictFails(l->verdict);
    const bool uncovered = l->verdict == fabric::kLinkNotCovered;
    const char* key = fails ? "not_ok" : uncovered ? "not_covered" : "ok";
    counts[key] = counts[key].get<size_t>() + 1;
    for (const std::string* name : {&l->switch_name, &l->remote_name}) {
      NodeCounts& n = nodes[*name];
      ++n.links;
      n.not_ok += fails ? 1 : 0;
      n.not_covered += uncovered ? 1 : 0;
      n.ok += !fails && !uncovered ? 1 : 0;
      if (severity > n.worst) {
        n.worst = severity;
        n.worst_verdict = l->verdict;
      }
    }
    if (!only.empty() && l->switch_name != only && l->remote_name != only) continue;
    links.push_back({{"link", l->link},
                     {"verdict", l->verdict},
                     {"severity", severity},
                     {"fails", fails},
                     {"a", linkEndJson(l->switch_name, l->switch_guid, l->port)},
                     {"b", linkEndJson(l->remote_name, l->remote_guid, l->remote_port)},
                     {"evidence", l->evidence}});
  }
  std::vector<std::pair<std::string, NodeCounts>> by_node(nodes.begin(), nodes.end());
  std::stable_sort(by_node.begin(), by_node.end(), [](const auto& a, const auto& b) {
    if (a.second.worst != b.second.worst) return a.second.worst > b.second.worst;
    return a.second.not_ok > b.second.not_ok;
  });
  json node_json = json::array();
  for (const auto& [name, n] : by_node) {
    if (!shown(only, name)) continue;
    node_json.push_back({{"name", name},
                         {"links", n.links},
                         {"not_ok", n.not_ok},
                         {"not_covered", n.not_covered},
                         {"ok", n.ok},
                         {"worst", n.worst_verdict}});
  }
  out["counts"] = std::move(counts);
  out["links"] = std::move(links);
  out["nodes"] = std::move(node_json);
}

json suspectOrNull(const std::optional<Suspect>& s) {
  return s ? json(toJson(*s)) : json(nullptr);
}

json unplacedJson(const std::vector<UnplacedEnd>& ends, bool lldp) {
  json out = json::array();
  for (const UnplacedEnd& u : ends) {
    json row{{"end", u.end}};
    if (lldp) {
      row["tests"] = u.verdicts.tests();
      row["failed"] = u.verdicts.fail;
    } else {
      row["pass"] = u.verdicts.pass;
      row["fail"] = u.verdicts.fail;
      row["skip"] = u.verdicts.skip;
    }
    row["why"] = u.why;
    if (lldp) row["estimate"] = fabric::kLldpEstimate;
    out.push_back(std::move(row));
  }
  return out;
}

json switchHostsJson(const SwitchHostTable& t, const std::string& only) {
  json switches = json::array();
  for (const SwitchHosts& s : t.switches) {
    if (!shown(only, s.name)) continue;
    json rows = json::array();
    for (const SwitchHostRow& r : s.rows) {
      rows.push_back({{"host", r.host},
                      {"hca", r.hca},
                      {"hca_port", r.hca_port},
                      {"switch_port", r.switch_port},
                      {"pass", r.verdicts.pass},
                      {"fail", r.verdicts.fail},
                      {"skip", r.verdicts.skip},
                      {"suspect", suspectOrNull(r.suspect)}});
    }
    switches.push_back({{"name", s.name},
                        {"guid", fabric::guidHex(s.guid)},
                        {"hosts", s.rows.size()},
                        {"hosts_failing", s.hosts_failing},
                        {"suspects", s.suspects},
                        {"pass", s.verdicts.pass},
                        {"fail", s.verdicts.fail},
                        {"skip", s.verdicts.skip},
                        {"rows", std::move(rows)}});
  }
  return {
      {"switches", std::move(switches)},
      {"unplaced", unplacedJson(only.empty() ? t.unplaced : std::vector<UnplacedEnd>{}, false)}};
}

json lldpJson(const LldpPortTable& t, const std::string& only) {
  json ports = json::array();
  for (const LldpPortRow& p : t.ports) {
    if (!only.empty() && p.switch_name != only && p.chassis_id != only) continue;
    ports.push_back({{"switch", p.switch_name},
                     {"chassis_id", p.chassis_id},
                     {"port", p.switch_port},
                     {"switch_port", p.switchPortName()},
                     {"nic", p.nicName()},
                     {"host", p.host},
                     {"device", p.device},
                     {"nic_port", p.nic_port},
                     {"netdev", p.netdev},
                     {"tests", p.tests},
                     {"failed", p.failed},
                     {"suspect", suspectOrNull(p.suspect)},
                     {"estimate", fabric::kLldpEstimate}});
  }
  return {{"estimate", fabric::kLldpEstimate},
          {"ports", std::move(ports)},
          {"unplaced", unplacedJson(only.empty() ? t.unplaced : std::vector<UnplacedEnd>{}, true)}};
}

}  // namespace

json sweepFabricJson(const SweepReportData& report, const FabricHostTables& hosts,
                     const std::string& only_switch) {
  const SweepProgress& p = report.progress;
  json j{{"sweep", p.id},
         {"state", toString(p.state)},
         {"verdict", p.verdict.empty() ? json(nullptr) : json(p.verdict)},
         {"reason", p.reason}};
  linksJson(report.links, only_switch, j);
  json suspects = json::array();
  for (const auto& s : report.suspects) {
    if (s.kind != "link") continue;
    suspects.push_back(json(toJson(s)));
  }
  j["suspects"] = std::move(suspects);
  j["fabric"] = hosts.source.empty() ? json(nullptr) : json(hosts.source);
  j["switch"] = only_switch.empty() ? json(nullptr) : json(only_switch);
  j["switch_hosts"] =
      hosts.infiniband ? switchHostsJson(*hosts.infiniband, only_switch) : json(nullptr);
  j["lldp"] = hosts.lldp ? lldpJson(*hosts.lldp, only_switch) : json(nullptr);
  return j;
}

bool fabricViewShows(const nlohmann::json& view) {
  auto any = [&](const char* key, const char* list) {
    return view[key].is_object() && !view[key][list].empty();
  };
  return !view["links"].empty() || !view["nodes"].empty() || any("switch_hosts", "switches") ||
         any("lldp", "ports");
}

}  // namespace gdrmesh
