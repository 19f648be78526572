#include "cli/fabric_lldp.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "cli/cli.h"
#include "cli/output.h"
#include "worker/fabric/lldp_reader.h"

namespace gdrmesh::cli {
namespace {

using fabric::EthFabric;

int lldpFail(const char* cmd, const Status& st) {
  std::fprintf(stderr, "gdrmesh %s: %s\n", cmd, st.message().c_str());
  if (!st.fix().empty()) std::fprintf(stderr, "  fix: %s\n", st.fix().c_str());
  switch (st.code()) {
    case Code::kInvalidArgument:
      return kExitUsage;
    case Code::kNotFound:
    case Code::kFailedPrecondition:
    case Code::kPermissionDenied:
    case Code::kUnimplemented:
      return kExitSkipped;  // lldpd not here: the check cannot run, nothing failed
    default:
      return kExitFailed;
  }
}

std::string vlansText(const fabric::EthLink& l) {
  std::string s;
  for (int v : l.vlans) s += (s.empty() ? "" : ",") + std::to_string(v) + (v == l.pvid ? "*" : "");
  if (s.empty() && l.pvid != 0) s = std::to_string(l.pvid) + "*";
  return s.empty() ? "-" : s;
}

std::string estimateLine() {
  return std::string(
             "source lldp: host NIC <-> switch port from LLDP; inter-switch links and "
             "routes unknown (") +
         fabric::kLldpEstimate + ")\n";
}

}  // namespace

Result<std::optional<EthFabric>> lldpSnapshotFromText(const std::string& text,
                                                      const std::string& what) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !fabric::isLldpSnapshot(j)) return std::optional<EthFabric>();
  auto f = fabric::ethFabricFromJson(j);
  if (!f.ok()) return f.status().withContext(what);
  return std::optional<EthFabric>(std::move(f).value());
}

Result<std::optional<EthFabric>> loadLldpSnapshotFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return notFound("fabric file '" + path + "' cannot be read",
                    "give a snapshot saved by `gdrmesh fabric discover --save FILE`");
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return lldpSnapshotFromText(ss.str(), "fabric file '" + path + "'");
}

std::string lldpFabricTable(const EthFabric& f) {
  std::string out = "fabric from lldp: " + fabric::ethSummary(f) + "\n" + estimateLine() + "\n";
  std::vector<std::vector<std::string>> sw{{"SWITCH", "CHASSIS_ID", "HOST_PORTS"}};
  for (const auto& s : f.switches) {
    sw.push_back({s.name, s.chassis_id, std::to_string(s.ports.size())});
  }
  std::vector<std::vector<std::string>> links{
      {"NIC", "NETDEV", "SWITCH_PORT", "PORT_DESCR", "VLANS", "MFS"}};
  for (const auto& l : f.links) {
    links.push_back({l.nicName() + "/" + std::to_string(l.port), l.netdev, l.switchPortName(),
                     l.switch_port_descr, vlansText(l), l.mfs != 0 ? std::to_string(l.mfs) : "-"});
  }
  out += renderTable(sw) + "\n" + renderTable(links);
  if (!f.unknown.empty()) {
    std::vector<std::vector<std::string>> rows{{"NIC WITHOUT NEIGHBOUR", "NETDEV", "WHY", "FIX"}};
    for (const auto& u : f.unknown) {
      rows.push_back({u.nicName() + "/" + std::to_string(u.port), u.netdev.empty() ? "-" : u.netdev,
                      u.reason, u.fix});
    }
    out += "\n" + renderTable(rows);
  }
  return out;
}

Result<std::string> lldpSwitchTable(const EthFabric& f, const std::string& name) {
  const fabric::EthSwitch* s = nullptr;
  for (const auto& x : f.switches) {
    if (x.name == name || x.chassis_id == name) s = &x;
  }
  if (s == nullptr) {
    return notFound("--switch " + name + ": no such switch in this LLDP snapshot",
                    "`gdrmesh fabric show FILE` lists them");
  }
  std::string out = "switch " + s->name + " chassis " + s->chassis_id + ": " +
                    std::to_string(s->ports.size()) +
                    " ports with a host NIC (the ports LLDP tells of; its other ports, and where "
                    "its up-links go, are unknown)\n" +
                    estimateLine() + "\n";
  std::vector<std::vector<std::string>> rows{{"PORT", "DESCR", "NIC", "NETDEV", "VLANS", "MFS"}};
  for (const auto& l : f.links) {
    if (l.chassis_id != s->chassis_id) continue;
    rows.push_back({l.switch_port, l.switch_port_descr, l.nicName() + "/" + std::to_string(l.port),
                    l.netdev, vlansText(l), l.mfs != 0 ? std::to_string(l.mfs) : "-"});
  }
  return out + renderTable(rows);
}

int printLldpDiff(const EthFabric& before, const EthFabric& after, const std::string& output) {
  const auto findings = fabric::diffEthFabrics(before, after);
  if (output == "json") {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& x : findings) {
      j.push_back({{"kind", x.kind},
                   {"switch", x.switch_name},
                   {"port", x.port},
                   {"message", x.message},
                   {"source", "lldp"}});
    }
    std::cout << j.dump(1) << "\n";
  } else if (findings.empty()) {
    std::cout << "no change: " << after.links.size() << " host NIC ports on "
              << after.switches.size() << " switches (source lldp: only the hosts' own switch "
              << "ports are compared)\n";
  } else {
    std::vector<std::vector<std::string>> rows{{"FINDING", "SWITCH", "DETAIL"}};
    for (const auto& x : findings) rows.push_back({x.kind, x.switch_name, x.message});
    std::cout << renderTable(rows)
              << "(source lldp: only the hosts' own switch ports are compared)\n";
  }
  return findings.empty() ? kExitOk : kExitFailed;
}

int runLldpDiscover(const LldpDiscoverArgs& a) {
  fabric::LldpReadOptions o;
  o.host = a.host;
  o.sysfs_root = a.sysfs_root;
  o.json_file = a.json_file;
  o.socket = a.socket;
  o.device = a.device;
  const auto t0 = std::chrono::steady_clock::now();
  const fabric::LldpHost h = fabric::readLldpHost(o);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!h.status.ok() && h.nics.empty()) return lldpFail("fabric discover --lldp", h.status);
  const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  const EthFabric f = fabric::buildEthFabric({h}, now_ms);
  const std::string json = toJson(f).dump(1);
  if (!a.save.empty()) {
    std::ofstream out(a.save);
    out << json << "\n";
    if (!out) {
      return lldpFail("fabric discover --lldp",
                      invalidArgument("--save " + a.save + ": cannot write the file"));
    }
  }
  if (a.output == "json") {
    std::cout << json << "\n";
  } else {
    std::cout << lldpFabricTable(f);
    std::fprintf(stderr, "asked lldpd in %.2f s\n", secs);
  }
  if (!h.status.ok()) {
    // lldpd could not be asked: every NIC says why; nothing was measured.
    std::fprintf(stderr, "gdrmesh fabric discover --lldp: %s\n  fix: %s\n",
                 h.status.message().c_str(), h.status.fix().c_str());
    return kExitSkipped;
  }
  return f.unknown.empty() ? kExitOk : kExitFailed;
}

namespace {

using LldpPair = std::pair<const fabric::EthLink*, const fabric::EthLink*>;

// The estimated cover of an LLDP snapshot: one NIC per host (its first linked one); goals: every
// host's switch port in a test, and a test between every two switches (and within each switch
// with two hosts or more). Greedy, round by round.
struct LldpCoverRounds {
  std::vector<const fabric::EthLink*> ends;
  std::set<std::string> pair_goals, pairs_done, hosts_done;
  std::vector<std::vector<LldpPair>> rounds;
  bool complete() const {
    return pairs_done.size() == pair_goals.size() && hosts_done.size() == ends.size();
  }
};

std::string lldpSwitchPair(const fabric::EthLink* a, const fabric::EthLink* b) {
  return a->chassis_id < b->chassis_id ? a->chassis_id + "|" + b->chassis_id
                                       : b->chassis_id + "|" + a->chassis_id;
}

// One round: each free host in turn takes the free partner that adds the most (a new switch
// pair 2, each end's switch port not yet in a test 1).
std::vector<LldpPair> planLldpCoverRound(LldpCoverRounds& c) {
  const auto& ends = c.ends;
  std::vector<bool> busy(ends.size(), false);
  std::vector<LldpPair> round;
  for (size_t i = 0; i < ends.size(); ++i) {
    if (busy[i]) continue;
    size_t best = ends.size();
    int best_gain = 0;
    for (size_t j = i + 1; j < ends.size(); ++j) {
      if (busy[j]) continue;
      const int gain = (c.pairs_done.count(lldpSwitchPair(ends[i], ends[j])) == 0 ? 2 : 0) +
                       (c.hosts_done.count(ends[i]->host) == 0 ? 1 : 0) +
                       (c.hosts_done.count(ends[j]->host) == 0 ? 1 : 0);
      if (gain > best_gain) {
        best_gain = gain;
        best = j;
      }
    }
    if (best == ends.size()) continue;
    busy[i] = busy[best] = true;
    c.pairs_done.insert(lldpSwitchPair(ends[i], ends[best]));
    c.hosts_done.insert(ends[i]->host);
    c.hosts_done.insert(ends[best]->host);
    round.emplace_back(ends[i], ends[best]);
  }
  return round;
}

LldpCoverRounds planLldpCover(const EthFabric& f, int max_rounds) {
  LldpCoverRounds c;
  std::set<std::string> seen_hosts;
  for (const auto& l : f.links) {
    if (seen_hosts.insert(l.host).second) c.ends.push_back(&l);
  }
  for (size_t i = 0; i < c.ends.size(); ++i) {
    for (size_t j = i + 1; j < c.ends.size(); ++j) {
      c.pair_goals.insert(lldpSwitchPair(c.ends[i], c.ends[j]));
    }
  }
  while (static_cast<int>(c.rounds.size()) < max_rounds && !c.complete()) {
    std::vector<LldpPair> round = planLldpCoverRound(c);
    if (round.empty()) break;
    c.rounds.push_back(std::move(round));
  }
  return c;
}

nlohmann::json lldpCoverJson(const EthFabric& f, const LldpCoverRounds& c,
                             size_t all_pairs_rounds) {
  nlohmann::json jr = nlohmann::json::array();
  for (const auto& r : c.rounds) {
    nlohmann::json pairs = nlohmann::json::array();
    for (const auto& [a, b] : r) {
      pairs.push_back({{"a", a->nicName()},
                       {"a_switch_port", a->switchPortName()},
                       {"b", b->nicName()},
                       {"b_switch_port", b->switchPortName()},
                       {"within_switch", a->chassis_id == b->chassis_id}});
    }
    jr.push_back(std::move(pairs));
  }
  return {{"pattern", "cover"},
          {"source", "lldp"},
          {"estimate", fabric::kLldpEstimate},
          {"inter_switch_links", "unknown"},
          {"hosts", c.ends.size()},
          {"hosts_covered", c.hosts_done.size()},
          {"switch_pairs", c.pair_goals.size()},
          {"switch_pairs_covered", c.pairs_done.size()},
          {"without_neighbour", f.unknown.size()},
          {"all_pairs_rounds", all_pairs_rounds},
          {"rounds", std::move(jr)}};
}

void printLldpCover(const EthFabric& f, const LldpCoverRounds& c, size_t all_pairs_rounds) {
  for (size_t i = 0; i < c.rounds.size(); ++i) {
    std::vector<std::vector<std::string>> rows{{"A", "A_SWITCH_PORT", "B", "B_SWITCH_PORT"}};
    for (const auto& [a, b] : c.rounds[i]) {
      rows.push_back({a->nicName(), a->switchPortName(), b->nicName(), b->switchPortName()});
    }
    std::cout << "round " << i + 1 << ": " << c.rounds[i].size() << " pairs\n"
              << renderTable(rows) << "\n";
  }
  std::cout << "cover (" << fabric::kLldpEstimate << "): " << c.rounds.size()
            << " rounds (all-pairs " << all_pairs_rounds << ") put " << c.hosts_done.size()
            << " of " << c.ends.size() << " host switch ports in a test and cross "
            << c.pairs_done.size() << " of " << c.pair_goals.size()
            << " switch pairs (within a switch counted as its own pair); which inter-switch "
               "links carry them is unknown"
            << (f.unknown.empty() ? std::string()
                                  : "; " + std::to_string(f.unknown.size()) +
                                        " NIC ports without an LLDP neighbour are left out")
            << "\n";
}

}  // namespace

int runLldpPlan(const EthFabric& f, const std::string& pattern, int max_rounds,
                const std::string& output) {
  if (pattern != "cover") {
    return lldpFail(
        "sweep plan",
        invalidArgument("--pattern " + pattern +
                            " needs forwarding tables: an LLDP snapshot "
                            "(RoCE) has none, and ECMP hides the path",
                        "plan --pattern cover on it (host switch ports and switch pairs, an "
                        "estimate), or all-pairs with `sweep run`"));
  }
  const LldpCoverRounds c = planLldpCover(f, max_rounds);
  const size_t all_pairs_rounds = c.ends.size() % 2 == 0 ? c.ends.size() - 1 : c.ends.size();
  if (output == "json") {
    std::cout << lldpCoverJson(f, c, all_pairs_rounds).dump(1) << "\n";
  } else {
    printLldpCover(f, c, all_pairs_rounds);
  }
  return c.complete() ? kExitOk : kExitFailed;
}

}  // namespace gdrmesh::cli
