// Fabric commands (docs/fabric.md): `gdrmesh fabric discover` walks the InfiniBand subnet from a
// local port (worker/fabric/, libibnetdisc + libibmad) and prints or saves the snapshot, or with
// `--worker NAME` asks that worker through the coordinator, which stores it with its findings;
// `fabric history` lists the stored snapshots; `fabric show`, `fabric diff` read saved files or
// stored snapshots (@ID, latest, previous) and `fabric path FILE SRC DST` saved files
// (common/fabric/fabric.h); none of these needs an InfiniBand device.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli.h"
#include "cli/control.h"
#include "cli/fabric_cli.h"
#include "cli/fabric_lldp.h"
#include "cli/fabric_stored.h"
#include "cli/output.h"
#include "common/fabric/discovery.h"
#include "common/fabric/fabric.h"
#ifdef GDRMESH_HAVE_FABRIC_DISCOVERY
#include "worker/fabric/ib_discovery.h"
#endif

namespace gdrmesh::cli {

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
  std::string worker;            // discover --worker NAME: through the coordinator
  bool all_workers = false;      // discover --lldp --all-workers: every online worker at once
  uint32_t max_concurrency = 0;  // with --all-workers: workers asked at once; 0 = all
  double deadline_seconds = 120;
  uint32_t limit = 20;  // history
  // discover --lldp (RoCE, cli/fabric_lldp.h)
  bool lldp = false;
  std::string lldp_json, lldp_socket, host;
  std::string sysfs_root = "/";
};

// A snapshot argument that names a stored snapshot rather than a file.
bool isStoredSnapshotRef(const std::string& spec) {
  return spec == "latest" || spec == "previous" || (!spec.empty() && spec[0] == '@');
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

// ------------------------------------------------------------------ stored snapshots

// One snapshot argument: a FILE, or a stored snapshot (@ID, latest, previous) fetched from the
// coordinator. On failure the error is printed and `rc` holds the exit code.
struct LoadedSnapshot {
  std::optional<Fabric> fabric;
  std::optional<fabric::EthFabric> eth;  // an LLDP (RoCE) snapshot instead of `fabric`
  std::optional<pb::FabricSnapshot> stored;
  int rc = kExitOk;
};

LoadedSnapshot loadSnapshot(const char* cmd, const std::string& spec, const ClientOptions& o) {
  LoadedSnapshot out;
  if (!isStoredSnapshotRef(spec)) {
    auto eth = loadLldpSnapshotFile(spec);
    if (!eth.ok()) {
      out.rc = fabricFail(cmd, eth.status());
      return out;
    }
    if (eth->has_value()) {
      out.eth = std::move(**eth);
      return out;
    }
    auto f = fabric::loadFabricFile(spec);
    if (!f.ok()) {
      out.rc = fabricFail(cmd, f.status());
    } else {
      out.fabric = std::move(f).value();
    }
    return out;
  }
  auto stub = connectControl(o);
  grpc::ClientContext ctx;
  setDeadline(&ctx, 60);
  pb::GetFabricSnapshotRequest req;
  req.set_ref(spec);
  pb::FabricSnapshot resp;
  auto st = stub->GetFabricSnapshot(&ctx, req, &resp);
  if (!st.ok()) {
    out.rc = reportRpcError(o, "GetFabricSnapshot", st);
    return out;
  }
  const std::string name = spec + (spec[0] == '@' ? "" : " (@" + std::to_string(resp.id()) + ")");
  if (resp.outcome() != "ok") {
    out.rc = fabricFail(
        cmd, failedPrecondition("snapshot " + name + " holds no fabric: " + resp.detail(),
                                "`gdrmesh fabric history` lists the ok ones"));
    return out;
  }
  if (resp.snapshot_json().empty()) {
    out.rc = fabricFail(cmd, notFound("snapshot " + name +
                                          ": its document was dropped by retention (its row and "
                                          "findings are kept)",
                                      "compare newer snapshots (`gdrmesh fabric history`)"));
    return out;
  }
  auto eth = lldpSnapshotFromText(resp.snapshot_json(), "snapshot " + name);
  if (!eth.ok()) {
    out.rc = fabricFail(cmd, eth.status());
    return out;
  }
  if (eth->has_value()) {
    out.eth = std::move(**eth);
    out.stored = std::move(resp);
    return out;
  }
  auto f = fabric::fabricFromJsonText(resp.snapshot_json(), "snapshot " + name);
  if (!f.ok()) {
    out.rc = fabricFail(cmd, f.status());
    return out;
  }
  out.fabric = std::move(f).value();
  out.stored = std::move(resp);
  return out;
}

// `fabric discover --worker NAME`: the worker discovers, the coordinator stores and diffs.
int runFabricDiscoverOn(const FabricArgs& a, const ClientOptions& o) {
  auto stub = connectControl(o);
  grpc::ClientContext ctx;
  setDeadline(&ctx, a.deadline_seconds + 10);
  pb::FabricDiscoverRequest req;
  req.set_worker(a.worker);
  req.set_ca(a.ca);
  req.set_ca_port(static_cast<uint32_t>(a.ca_port));
  req.set_timeout_ms(static_cast<uint32_t>(a.timeout_ms));
  req.set_no_lfts(a.no_lfts);
  req.set_deadline_seconds(a.deadline_seconds);
  req.set_lldp(a.lldp);
  pb::FabricSnapshot resp;
  auto st = stub->DiscoverFabric(&ctx, req, &resp);
  if (!st.ok()) return reportRpcError(o, "DiscoverFabric", st, {a.worker});
  if (!a.save.empty() && !resp.snapshot_json().empty()) {
    std::ofstream out(a.save);
    out << nlohmann::json::parse(resp.snapshot_json(), nullptr, false).dump(1) << "\n";
    if (!out) {
      return fabricFail("discover",
                        invalidArgument("--save " + a.save + ": cannot write the file"));
    }
  }
  if (a.output == "json") {
    std::cout << storedJson(resp).dump(1) << "\n";
  } else {
    std::cout << storedHeader(resp);
    if (resp.outcome() == "ok") {
      auto eth = lldpSnapshotFromText(resp.snapshot_json(), "the stored snapshot");
      if (eth.ok() && eth->has_value()) {
        std::cout << lldpFabricTable(**eth);
      } else {
        auto f = fabric::fabricFromJsonText(resp.snapshot_json(), "the stored snapshot");
        if (f.ok()) std::cout << fabricTable(*f);
      }
    }
    if (resp.findings_size() > 0) std::cout << "\n" << findingsTable(resp.findings());
  }
  if (resp.outcome() == "skipped") return kExitSkipped;
  if (resp.outcome() != "ok") return kExitFailed;
  return resp.findings_size() == 0 ? kExitOk : kExitFailed;
}

int runFabricHistory(const FabricArgs& a, const ClientOptions& o) {
  auto stub = connectControl(o);
  grpc::ClientContext ctx;
  setDeadline(&ctx, 60);
  pb::ListFabricSnapshotsRequest req;
  req.set_limit(a.limit);
  req.set_worker(a.worker);
  pb::ListFabricSnapshotsResponse resp;
  auto st = stub->ListFabricSnapshots(&ctx, req, &resp);
  if (!st.ok()) return reportRpcError(o, "ListFabricSnapshots", st);
  if (a.output == "json") {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& s : resp.snapshots()) j.push_back(storedJson(s));
    std::cout << j.dump(1) << "\n";
    return kExitOk;
  }
  if (resp.snapshots().empty()) {
    std::cout
        << "no fabric snapshots stored (`gdrmesh fabric discover --worker NAME` stores one)\n";
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows{
      {"ID", "TAKEN", "WORKER", "OUTCOME", "SWITCHES", "HOSTS", "LINKS", "SOURCE/DETAIL"}};
  for (const auto& s : resp.snapshots()) {
    rows.push_back({"@" + std::to_string(s.id()), formatLocalTime(s.taken_ms()), s.worker(),
                    s.outcome(), std::to_string(s.switches()), std::to_string(s.hosts()),
                    std::to_string(s.links()), s.outcome() == "ok" ? s.source() : s.detail()});
  }
  std::cout << renderTable(rows);
  return kExitOk;
}

// `fabric discover --lldp --all-workers` (fabric_lldp_all.cc), its flags checked.
int runFabricDiscoverAll(const FabricArgs& a, const ClientOptions& conn) {
  if (!a.worker.empty()) {
    return fabricFail("discover",
                      invalidArgument("--worker " + a.worker +
                                          " and --all-workers: one asks one worker, the "
                                          "other every online worker",
                                      "give one of them"));
  }
  if (!a.lldp) {
    return fabricFail(
        "discover",
        invalidArgument("--all-workers asks each worker's lldpd (RoCE) and needs --lldp",
                        "add --lldp; an InfiniBand subnet is walked from one port: --worker NAME"));
  }
  if (!a.lldp_json.empty() || !a.lldp_socket.empty() || !a.host.empty() || a.sysfs_root != "/") {
    return fabricFail(
        "discover",
        invalidArgument("--lldp-json, --lldp-socket, --host and --sysfs-root are this host's: "
                        "--all-workers asks each worker's own lldpd",
                        "drop them (a worker's are its own `gdrmesh worker` options)"));
  }
  LldpAllArgs l;
  l.ca = a.ca;
  l.deadline_seconds = a.deadline_seconds;
  l.max_concurrency = a.max_concurrency;
  l.save = a.save;
  l.output = a.output;
  return runLldpDiscoverAll(l, conn);
}

int runFabricDiscover(const FabricArgs& a, const ClientOptions& conn) {
  if (a.all_workers) return runFabricDiscoverAll(a, conn);
  if (a.max_concurrency != 0) {
    return fabricFail("discover", invalidArgument("--max-concurrency bounds --all-workers",
                                                  "add --lldp --all-workers, or drop it"));
  }
  if (!a.worker.empty()) return runFabricDiscoverOn(a, conn);
  if (a.lldp) {
    LldpDiscoverArgs l;
    l.json_file = a.lldp_json;
    l.socket = a.lldp_socket;
    l.device = a.ca;
    l.host = a.host;
    l.sysfs_root = a.sysfs_root;
    l.save = a.save;
    l.output = a.output;
    return runLldpDiscover(l);
  }
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

// `fabric show` of an LLDP (RoCE) snapshot, a file or stored.
int showLldpSnapshot(const FabricArgs& a, const LoadedSnapshot& loaded) {
  const fabric::EthFabric& f = *loaded.eth;
  if (!a.switch_name.empty()) {
    auto t = lldpSwitchTable(f, a.switch_name);
    if (!t.ok()) return fabricFail("show", t.status());
    if (a.output == "json") {
      nlohmann::json j = toJson(f);
      nlohmann::json links = nlohmann::json::array();
      for (const auto& l : j["links"]) {
        if (l["switch"]["name"] == a.switch_name || l["switch"]["chassis_id"] == a.switch_name) {
          links.push_back(l);
        }
      }
      j["links"] = std::move(links);
      std::cout << j.dump(1) << "\n";
    } else {
      std::cout << *t;
    }
    return kExitOk;
  }
  if (a.output == "json") {
    std::cout << (loaded.stored ? storedJson(*loaded.stored) : toJson(f)).dump(1) << "\n";
    return kExitOk;
  }
  if (loaded.stored) std::cout << storedHeader(*loaded.stored);
  std::cout << lldpFabricTable(f);
  if (loaded.stored && loaded.stored->findings_size() > 0) {
    std::cout << "\n" << findingsTable(loaded.stored->findings());
  }
  return kExitOk;
}

int runFabricShow(const FabricArgs& a, const ClientOptions& o) {
  LoadedSnapshot loaded = loadSnapshot("show", a.file, o);
  if (loaded.eth) return showLldpSnapshot(a, loaded);
  if (!loaded.fabric) return loaded.rc;
  const Fabric* f = &*loaded.fabric;
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
    if (loaded.stored) {
      std::cout << storedJson(*loaded.stored).dump(1) << "\n";
    } else {
      std::cout << toJson(*f).dump(1) << "\n";
    }
  } else {
    if (loaded.stored) std::cout << storedHeader(*loaded.stored);
    std::cout << fabricTable(*f);
    if (loaded.stored && loaded.stored->findings_size() > 0) {
      std::cout << "\n" << findingsTable(loaded.stored->findings());
    }
  }
  return kExitOk;
}

int runFabricDiff(const FabricArgs& a, const ClientOptions& o) {
  LoadedSnapshot old_snap = loadSnapshot("diff", a.old_file, o);
  if (!old_snap.fabric && !old_snap.eth) return old_snap.rc;
  LoadedSnapshot new_snap = loadSnapshot("diff", a.new_file, o);
  if (old_snap.eth && new_snap.eth) return printLldpDiff(*old_snap.eth, *new_snap.eth, a.output);
  if (!new_snap.fabric && !new_snap.eth) return new_snap.rc;
  if (old_snap.eth || new_snap.eth) {
    return fabricFail("diff", invalidArgument("OLD and NEW must both be InfiniBand snapshots or "
                                              "both LLDP (RoCE) snapshots",
                                              "compare snapshots of one kind"));
  }
  if (!new_snap.fabric) return new_snap.rc;
  const Fabric* before = &*old_snap.fabric;
  const Fabric* after = &*new_snap.fabric;
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
  if (auto eth = loadLldpSnapshotFile(a.file); eth.ok() && eth->has_value()) {
    return fabricFail("path", invalidArgument(a.file + " is an LLDP (RoCE) snapshot: it has no "
                                                       "forwarding tables, and ECMP hides the path",
                                              "paths need an InfiniBand snapshot; `fabric show " +
                                                  a.file + "` gives each NIC's switch port"));
  }
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

void addFabricOutput(CLI::App* cmd, FabricArgs* a) {
  cmd->add_option("-o,--output", a->output, "table or json")
      ->check(CLI::IsMember({"table", "json"}));
}

// `fabric discover`: here, on a worker through the coordinator (--worker), or from LLDP (--lldp),
// on every online worker at once (--lldp --all-workers).
void registerFabricDiscover(CLI::App* fab, const std::shared_ptr<FabricArgs>& a, Action* action) {
  // Its connection options are needed only when it talks to the coordinator (--worker).
  auto conn = std::make_shared<ClientOptions>();
  auto* cmd = fab->add_subcommand(
      "discover",
      "Walk the subnet from a local InfiniBand port (needs umad access, root), or on a worker "
      "through the coordinator (--worker); RoCE: --lldp, on every worker: --lldp --all-workers");
  cmd->add_option("--ca", a->ca, "local HCA to start from (default: the first)");
  cmd->add_option("--port", a->ca_port, "its port (default: the first active)");
  cmd->add_option("--timeout-ms", a->timeout_ms, "per management datagram (default 500)")
      ->check(CLI::Range(1, 60000));
  cmd->add_flag("--no-lfts", a->no_lfts, "skip the switches' forwarding tables");
  cmd->add_option("--save", a->save, "also write the JSON snapshot to this file");
  cmd->add_option("--worker", a->worker,
                  "discover on this worker through the coordinator, which stores the snapshot "
                  "and its findings (admin)");
  cmd->add_flag("--all-workers", a->all_workers,
                "with --lldp: ask every online worker through the coordinator at once, which "
                "stores their answers as one snapshot (admin)");
  cmd->add_option("--max-concurrency", a->max_concurrency,
                  "with --all-workers: workers asked at once (default 0: all)");
  cmd->add_option("--deadline", a->deadline_seconds,
                  "with --worker or --all-workers: seconds the whole discovery may take "
                  "(default 120)")
      ->check(CLI::Range(1.0, 3600.0));
  cmd->add_flag("--lldp", a->lldp,
                "RoCE: map each RoCE NIC to its switch port from lldpd (an estimate: no "
                "forwarding tables); --ca names one RDMA device");
  cmd->add_option("--lldp-json", a->lldp_json,
                  "with --lldp: read `lldpcli -f json show neighbors details` output from this "
                  "file instead of running lldpcli");
  cmd->add_option("--lldp-socket", a->lldp_socket,
                  "with --lldp: lldpd's control socket (lldpcli -u; default: lldpd's own)");
  cmd->add_option("--host", a->host, "with --lldp: the host name to report (default: this one)");
  cmd->add_option("--sysfs-root", a->sysfs_root,
                  "with --lldp: read the RDMA devices under this root (recorded trees)");
  addFabricOutput(cmd, a.get());
  addConnectionOptions(cmd, conn.get(), [a] { return !a->worker.empty() || a->all_workers; });
  cmd->callback(
      [action, a, conn] { *action = [a, conn] { return runFabricDiscover(*a, *conn); }; });
}

// `fabric show` and `fabric diff`: files, or stored snapshots through the coordinator.
void registerFabricShowDiff(CLI::App* fab, const std::shared_ptr<FabricArgs>& a, Action* action) {
  // Each has its own connection options, needed only for a stored snapshot.
  auto show_conn = std::make_shared<ClientOptions>();
  auto diff_conn = std::make_shared<ClientOptions>();
  auto* show = fab->add_subcommand(
      "show", "Print a fabric snapshot (a FILE or a stored @ID, latest, previous), or one switch");
  show->add_option("SNAPSHOT", a->file,
                   "a file (fabric discover -o json) or a stored snapshot: @ID, latest, previous")
      ->required();
  show->add_option("--switch", a->switch_name, "one switch: its ports and its LFT");
  addFabricOutput(show, a.get());
  addConnectionOptions(show, show_conn.get(), [a] { return isStoredSnapshotRef(a->file); });
  show->callback([action, a, show_conn] {
    *action = [a, show_conn] { return runFabricShow(*a, *show_conn); };
  });
  auto* diff =
      fab->add_subcommand("diff", "What changed between two snapshots (exit 1 when something did)");
  diff->add_option("OLD", a->old_file, "earlier snapshot: a file, or @ID, latest, previous")
      ->required();
  diff->add_option("NEW", a->new_file, "later snapshot: a file, or @ID, latest, previous")
      ->required();
  addFabricOutput(diff, a.get());
  addConnectionOptions(diff, diff_conn.get(), [a] {
    return isStoredSnapshotRef(a->old_file) || isStoredSnapshotRef(a->new_file);
  });
  diff->callback([action, a, diff_conn] {
    *action = [a, diff_conn] { return runFabricDiff(*a, *diff_conn); };
  });
}

// `fabric history` (always through the coordinator) and `fabric path` (a file).
void registerFabricHistoryPath(CLI::App* fab, const std::shared_ptr<FabricArgs>& a,
                               Action* action) {
  auto history_conn = std::make_shared<ClientOptions>();
  auto* history = fab->add_subcommand(
      "history", "List the snapshots the coordinator stored (fabric discover --worker)");
  history->add_option("--limit", a->limit, "newest first (default 20)")
      ->check(CLI::Range(1, 100000));
  history->add_option("--worker", a->worker, "only this worker's");
  addFabricOutput(history, a.get());
  addConnectionOptions(history, history_conn.get());
  history->callback([action, a, history_conn] {
    *action = [a, history_conn] { return runFabricHistory(*a, *history_conn); };
  });
  auto* path = fab->add_subcommand(
      "path", "Hop-by-hop path between two HCA ports, both ways, from the snapshot's LFTs");
  path->add_option("FILE", a->file, "snapshot (fabric discover -o json)")->required();
  path->add_option("SRC", a->src, "host: node description or GUID, optionally /PORT")->required();
  path->add_option("DST", a->dst, "host: node description or GUID, optionally /PORT")->required();
  addFabricOutput(path, a.get());
  path->callback([action, a] { *action = [a] { return runFabricPath(*a); }; });
}

}  // namespace

void registerFabricCommands(CLI::App& app, Action* action) {
  auto a = std::make_shared<FabricArgs>();
  auto* fab = app.add_subcommand(
      "fabric",
      "InfiniBand fabric: discover switches, links and LFTs; show, diff, paths (RoCE: --lldp)");
  fab->require_subcommand(1);
  registerFabricDiscover(fab, a, action);
  registerFabricShowDiff(fab, a, action);
  registerFabricHistoryPath(fab, a, action);
  // `gdrmesh sweep plan`: beside `sweep run` (cli/cmd_sweep.cc registers `sweep` first).
  auto sweeps = app.get_subcommands([](CLI::App* c) { return c->get_name() == "sweep"; });
  if (!sweeps.empty()) registerSweepPlan(sweeps.front(), action);
}

}  // namespace gdrmesh::cli
