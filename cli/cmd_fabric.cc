// Fabric commands (docs/fabric.md): `gdrmesh fabric discover` walks the InfiniBand subnet from a
// local port (worker/fabric/, libibnetdisc + libibmad) and prints or saves the snapshot;
// `fabric show FILE`, `fabric diff OLD NEW` and `fabric path FILE SRC DST` read saved snapshots
// (common/fabric/fabric.h) and need no InfiniBand device.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "cli/output.h"
#include "common/fabric/cover.h"
#include "common/fabric/fabric.h"
#ifdef GDRMESH_HAVE_FABRIC_DISCOVERY
#include "worker/fabric/ib_discovery.h"
#endif

namespace gdrmesh::cli {
namespace {

using fabric::Fabric;

struct FabricArgs {
  std::string output = "table";
  std::string ca;
  int ca_port = 0;
  int timeout_ms = 500;
  bool no_lfts = false;
  std::string save;  // --save FILE: also write the JSON snapshot there
  std::string file, old_file, new_file;
  std::string switch_name;
  std::string src, dst;
  std::string pattern;  // sweep plan
  int max_rounds = 64;
};

int fabricFail(const char* cmd, const Status& st) {
  std::fprintf(stderr, "gdrmesh fabric %s: %s\n", cmd, st.message().c_str());
  if (!st.fix().empty()) std::fprintf(stderr, "  fix: %s\n", st.fix().c_str());
  switch (st.code()) {
    case Code::kInvalidArgument:
    case Code::kNotFound:
      return kExitUsage;
    case Code::kFailedPrecondition:
    case Code::kUnimplemented:
      return kExitSkipped;  // no InfiniBand here: the check cannot run, nothing failed
    default:
      return kExitFailed;
  }
}

bool isInterSwitch(const Fabric& f, const fabric::Link& l) {
  const auto* a = f.nodeByGuid(l.a.guid);
  const auto* b = f.nodeByGuid(l.b.guid);
  return a != nullptr && b != nullptr && a->kind == fabric::NodeKind::kSwitch &&
         b->kind == fabric::NodeKind::kSwitch;
}

std::string fabricSummary(const Fabric& f) {
  size_t isl = 0;
  for (const auto& l : f.links) isl += isInterSwitch(f, l) ? 1 : 0;
  return "fabric from " + f.source + ": " + std::to_string(f.switches.size()) + " switches, " +
         std::to_string(f.hosts.size()) + " hosts, " + std::to_string(f.links.size()) + " links (" +
         std::to_string(isl) + " between switches), " + std::to_string(f.routedLftEntries()) +
         " routed LFT entries\n";
}

std::string fabricTable(const Fabric& f) {
  std::vector<std::vector<std::string>> sw{
      {"SWITCH", "GUID", "LID", "LINKED", "PORTS", "LFT_TOP", "ROUTED"}};
  for (const auto& s : f.switches) {
    size_t linked = 0;
    for (const auto& p : s.ports) linked += p.remote_guid != 0 ? 1 : 0;
    size_t routed = 0;
    for (uint8_t e : s.lft) routed += e != fabric::kNoRoute ? 1 : 0;
    sw.push_back({s.name, fabric::guidHex(s.guid), std::to_string(s.lid), std::to_string(linked),
                  std::to_string(s.num_ports), std::to_string(s.lft_top), std::to_string(routed)});
  }
  std::vector<std::vector<std::string>> links{{"A", "B", "WIDTH", "SPEED", "STATE"}};
  for (const auto& l : f.links) {
    links.push_back({l.a.node + "[" + std::to_string(l.a.port) + "]",
                     l.b.node + "[" + std::to_string(l.b.port) + "]", fabric::widthName(l.width),
                     l.speed, l.state});
  }
  return fabricSummary(f) + "\n" + renderTable(sw) + "\n" + renderTable(links);
}

// Which port (host or switch) holds `lid`: for the LFT listing.
std::map<uint16_t, std::string> lidOwners(const Fabric& f) {
  std::map<uint16_t, std::string> m;
  for (const auto& s : f.switches) {
    if (s.lid != 0) m[s.lid] = s.name;
  }
  for (const auto& h : f.hosts) {
    for (const auto& p : h.ports) {
      if (p.lid != 0) m[p.lid] = h.name + "/" + std::to_string(p.number);
    }
  }
  return m;
}

std::string switchTable(const Fabric& f, const fabric::Node& s) {
  std::string out = "switch " + s.name + " " + fabric::guidHex(s.guid) + " lid " +
                    std::to_string(s.lid) + ", " + std::to_string(s.num_ports) + " ports\n\n";
  std::vector<std::vector<std::string>> ports{{"PORT", "STATE", "PHYS", "WIDTH", "SPEED", "PEER"}};
  for (const auto& p : s.ports) {
    std::string peer;
    if (p.remote_guid != 0) {
      const auto* n = f.nodeByGuid(p.remote_guid);
      peer = (n != nullptr ? n->name : fabric::guidHex(p.remote_guid)) + "[" +
             std::to_string(p.remote_port) + "]";
    }
    ports.push_back({std::to_string(p.number), p.state, p.phys_state, fabric::widthName(p.width),
                     p.speed, peer});
  }
  out += renderTable(ports) + "\n";
  auto owners = lidOwners(f);
  std::vector<std::vector<std::string>> lft{{"LID", "OUT", "DESTINATION"}};
  for (size_t lid = 0; lid < s.lft.size(); ++lid) {
    if (s.lft[lid] == fabric::kNoRoute) continue;
    auto it = owners.find(static_cast<uint16_t>(lid));
    lft.push_back({std::to_string(lid), std::to_string(s.lft[lid]),
                   it == owners.end() ? std::string("?") : it->second});
  }
  return out + renderTable(lft);
}

int runFabricDiscover(const FabricArgs& a) {
#ifdef GDRMESH_HAVE_FABRIC_DISCOVERY
  fabric::DiscoverOptions o;
  o.ca = a.ca;
  o.ca_port = a.ca_port;
  o.timeout_ms = a.timeout_ms;
  o.read_lfts = !a.no_lfts;
  const auto t0 = std::chrono::steady_clock::now();
  auto f = fabric::discoverFabric(o);
  if (!f.ok()) return fabricFail("discover", f.status());
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string json = toJson(*f).dump(1);
  if (!a.save.empty()) {
    std::ofstream out(a.save);
    out << json << "\n";
    if (!out) {
      return fabricFail("discover",
                        invalidArgument("--save " + a.save + ": cannot write the file"));
    }
  }
  if (a.output == "json") {
    std::cout << json << "\n";
  } else {
    std::cout << fabricTable(*f);
    std::fprintf(stderr, "discovered in %.2f s\n", secs);
  }
  return kExitOk;
#else
  (void)a;
  return fabricFail("discover",
                    unimplemented("this gdrmesh was built without InfiniBand fabric discovery",
                                  "install libibnetdisc-dev libibmad-dev libibumad-dev and rebuild "
                                  "(GDRMESH_FABRIC=ON)"));
#endif
}

int runFabricShow(const FabricArgs& a) {
  auto f = fabric::loadFabricFile(a.file);
  if (!f.ok()) return fabricFail("show", f.status());
  if (!a.switch_name.empty()) {
    const auto* s = f->nodeByName(a.switch_name);
    if (s == nullptr || s->kind != fabric::NodeKind::kSwitch) {
      return fabricFail("show",
                        notFound("--switch " + a.switch_name + ": no such switch in " + a.file,
                                 "`gdrmesh fabric show " + a.file + "` lists them"));
    }
    if (a.output == "json") {
      Fabric one;
      one.source = f->source;
      one.discovered_ms = f->discovered_ms;
      one.switches.push_back(*s);
      std::cout << toJson(one)["switches"][0].dump(1) << "\n";
    } else {
      std::cout << switchTable(*f, *s);
    }
    return kExitOk;
  }
  if (a.output == "json") {
    std::cout << toJson(*f).dump(1) << "\n";
  } else {
    std::cout << fabricTable(*f);
  }
  return kExitOk;
}

int runFabricDiff(const FabricArgs& a) {
  auto before = fabric::loadFabricFile(a.old_file);
  if (!before.ok()) return fabricFail("diff", before.status());
  auto after = fabric::loadFabricFile(a.new_file);
  if (!after.ok()) return fabricFail("diff", after.status());
  const auto findings = fabric::diffFabrics(*before, *after);
  if (a.output == "json") {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& x : findings) {
      j.push_back(
          {{"kind", x.kind}, {"switch", x.switch_name}, {"port", x.port}, {"message", x.message}});
    }
    std::cout << j.dump(1) << "\n";
  } else if (findings.empty()) {
    std::cout << "no change: " << before->links.size() << " links, "
              << before->switches.size() + before->hosts.size() << " nodes\n";
  } else {
    std::vector<std::vector<std::string>> rows{{"FINDING", "SWITCH", "PORT", "DETAIL"}};
    for (const auto& x : findings) {
      rows.push_back({x.kind, x.switch_name, x.port != 0 ? std::to_string(x.port) : "", x.message});
    }
    std::cout << renderTable(rows);
  }
  // Like diff(1): 0 when nothing changed, 1 when something did.
  return findings.empty() ? kExitOk : kExitFailed;
}

int runFabricPath(const FabricArgs& a) {
  auto f = fabric::loadFabricFile(a.file);
  if (!f.ok()) return fabricFail("path", f.status());
  auto src = fabric::findEndpoint(*f, a.src);
  if (!src.ok()) return fabricFail("path", src.status().withContext("SRC"));
  auto dst = fabric::findEndpoint(*f, a.dst);
  if (!dst.ok()) return fabricFail("path", dst.status().withContext("DST"));
  nlohmann::json j = nlohmann::json::array();
  std::string text;
  int rc = kExitOk;
  for (const auto& [from, to] : {std::make_pair(*src, *dst), std::make_pair(*dst, *src)}) {
    const std::string label = from.node->name + "/" + std::to_string(from.port->number) + " -> " +
                              to.node->name + "/" + std::to_string(to.port->number) + " (LID " +
                              std::to_string(to.port->lid) + ")";
    auto hops = fabric::tracePath(*f, from, to);
    nlohmann::json dir = {{"from", from.node->name},
                          {"from_port", from.port->number},
                          {"to", to.node->name},
                          {"to_port", to.port->number},
                          {"dlid", to.port->lid}};
    if (!hops.ok()) {
      dir["error"] = hops.status().message();
      text += label + ": " + hops.status().message() + "\n";
      rc = kExitFailed;
    } else {
      nlohmann::json hj = nlohmann::json::array();
      text += label + ": " + std::to_string(hops->size()) + " switches\n";
      for (const auto& h : *hops) {
        hj.push_back({{"switch", h.switch_name},
                      {"guid", fabric::guidHex(h.switch_guid)},
                      {"in_port", h.in_port},
                      {"out_port", h.out_port}});
        text += "  [" + std::to_string(h.in_port) + "] " + h.switch_name + " [" +
                std::to_string(h.out_port) + "]\n";
      }
      dir["hops"] = std::move(hj);
    }
    j.push_back(std::move(dir));
  }
  if (a.output == "json") {
    std::cout << j.dump(1) << "\n";
  } else {
    std::cout << text;
  }
  return rc;
}

int runCoverPlan(const FabricArgs& a) {
  if (a.pattern != "cover") {
    return fabricFail(
        "plan", invalidArgument(
                    "--pattern " + a.pattern + ": `sweep plan` plans only --pattern cover so far",
                    "use --pattern cover --fabric FILE"));
  }
  auto f = fabric::loadFabricFile(a.file);
  if (!f.ok()) return fabricFail("plan", f.status());
  fabric::CoverOptions o;
  o.max_rounds = a.max_rounds;
  const auto t0 = std::chrono::steady_clock::now();
  auto plan = fabric::planCover(*f, o);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!plan.ok()) return fabricFail("plan", plan.status());
  const size_t all_pairs_rounds = plan->hosts % 2 == 0 ? plan->hosts - 1 : plan->hosts;
  if (a.output == "json") {
    nlohmann::json rounds = nlohmann::json::array();
    for (const auto& r : plan->rounds) {
      nlohmann::json pairs = nlohmann::json::array();
      for (const auto& p : r) {
        pairs.push_back({{"a", p.a},
                         {"a_port", p.a_port},
                         {"a_lid", p.a_lid},
                         {"b", p.b},
                         {"b_port", p.b_port},
                         {"b_lid", p.b_lid},
                         {"new_links", p.new_links}});
      }
      rounds.push_back(std::move(pairs));
    }
    nlohmann::json j = {{"pattern", "cover"},
                        {"hosts", plan->hosts},
                        {"directed_links", plan->directed_links},
                        {"routable", plan->routable},
                        {"covered", plan->covered},
                        {"uncovered", plan->uncovered},
                        {"unroutable", plan->unroutable},
                        {"lower_bound", plan->lower_bound},
                        {"all_pairs_rounds", all_pairs_rounds},
                        {"planning_ms", ms},
                        {"rounds", std::move(rounds)}};
    std::cout << j.dump(1) << "\n";
  } else {
    for (size_t i = 0; i < plan->rounds.size(); ++i) {
      std::vector<std::vector<std::string>> rows{{"A", "B", "NEW_LINKS"}};
      for (const auto& p : plan->rounds[i]) {
        rows.push_back({p.a + "/" + std::to_string(p.a_port), p.b + "/" + std::to_string(p.b_port),
                        std::to_string(p.new_links)});
      }
      std::cout << "round " << i + 1 << ": " << plan->rounds[i].size() << " pairs\n"
                << renderTable(rows) << "\n";
    }
    for (const auto& u : plan->uncovered) std::cout << "not covered: " << u << "\n";
    for (const auto& u : plan->unroutable) {
      std::cout << "no route crosses (no test can load it): " << u << "\n";
    }
    char line[256];
    std::snprintf(line, sizeof line,
                  "cover: %zu rounds (lower bound %d; all-pairs %zu) cover %zu of %zu routable "
                  "directed inter-switch links (%zu in all), %zu hosts, planned in %.1f ms\n",
                  plan->rounds.size(), plan->lower_bound, all_pairs_rounds, plan->covered,
                  plan->routable, plan->directed_links, plan->hosts, ms);
    std::cout << line;
  }
  return plan->uncovered.empty() ? kExitOk : kExitFailed;
}

void addFabricOutput(CLI::App* cmd, FabricArgs* a) {
  cmd->add_option("-o,--output", a->output, "table or json")
      ->check(CLI::IsMember({"table", "json"}));
}

}  // namespace

void registerFabricCommands(CLI::App& app, Action* action) {
  auto a = std::make_shared<FabricArgs>();
  auto* fab = app.add_subcommand(
      "fabric", "InfiniBand fabric: discover switches, links and LFTs; show, diff, paths");
  fab->require_subcommand(1);
  {
    auto* cmd = fab->add_subcommand(
        "discover", "Walk the subnet from a local InfiniBand port (needs umad access, root)");
    cmd->add_option("--ca", a->ca, "local HCA to start from (default: the first)");
    cmd->add_option("--port", a->ca_port, "its port (default: the first active)");
    cmd->add_option("--timeout-ms", a->timeout_ms, "per management datagram (default 500)")
        ->check(CLI::Range(1, 60000));
    cmd->add_flag("--no-lfts", a->no_lfts, "skip the switches' forwarding tables");
    cmd->add_option("--save", a->save, "also write the JSON snapshot to this file");
    addFabricOutput(cmd, a.get());
    cmd->callback([action, a] { *action = [a] { return runFabricDiscover(*a); }; });
  }
  {
    auto* cmd = fab->add_subcommand("show", "Print a saved fabric snapshot, or one switch");
    cmd->add_option("FILE", a->file, "snapshot (fabric discover -o json)")->required();
    cmd->add_option("--switch", a->switch_name, "one switch: its ports and its LFT");
    addFabricOutput(cmd, a.get());
    cmd->callback([action, a] { *action = [a] { return runFabricShow(*a); }; });
  }
  {
    auto* cmd = fab->add_subcommand(
        "diff", "What changed between two snapshots (exit 1 when something did)");
    cmd->add_option("OLD", a->old_file, "earlier snapshot")->required();
    cmd->add_option("NEW", a->new_file, "later snapshot")->required();
    addFabricOutput(cmd, a.get());
    cmd->callback([action, a] { *action = [a] { return runFabricDiff(*a); }; });
  }
  {
    auto* cmd = fab->add_subcommand(
        "path", "Hop-by-hop path between two HCA ports, both ways, from the snapshot's LFTs");
    cmd->add_option("FILE", a->file, "snapshot (fabric discover -o json)")->required();
    cmd->add_option("SRC", a->src, "host: node description or GUID, optionally /PORT")->required();
    cmd->add_option("DST", a->dst, "host: node description or GUID, optionally /PORT")->required();
    addFabricOutput(cmd, a.get());
    cmd->callback([action, a] { *action = [a] { return runFabricPath(*a); }; });
  }
  // `gdrmesh sweep plan`: beside `sweep run` (cli/cmd_sweep.cc registers `sweep` first).
  auto sweeps = app.get_subcommands([](CLI::App* c) { return c->get_name() == "sweep"; });
  if (!sweeps.empty()) {
    auto* sweep = sweeps.front();
    auto* cmd = sweep->add_subcommand(
        "plan", "Print a sweep's rounds and pairs without running it (--pattern cover)");
    cmd->add_option("--pattern", a->pattern, "cover: load every inter-switch link")->required();
    cmd->add_option("--fabric", a->file, "fabric snapshot (fabric discover -o json)")->required();
    cmd->add_option("--max-rounds", a->max_rounds, "stop after this many rounds (default 64)")
        ->check(CLI::Range(1, 100000));
    addFabricOutput(cmd, a.get());
    cmd->callback([action, a] { *action = [a] { return runCoverPlan(*a); }; });
  }
}

}  // namespace gdrmesh::cli
