#include "common/fabric/fabric.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <tuple>

namespace gdrmesh::fabric {

const char* nodeKindName(NodeKind kind) {
  switch (kind) {
    case NodeKind::kSwitch:
      return "switch";
    case NodeKind::kHca:
      return "hca";
    case NodeKind::kRouter:
      return "router";
  }
  return "?";
}

const Port* Node::port(int number) const {
  for (const auto& p : ports) {
    if (p.number == number) return &p;
  }
  return nullptr;
}

const Node* Fabric::nodeByGuid(uint64_t guid) const {
  for (const auto* list : {&switches, &hosts}) {
    for (const auto& n : *list) {
      if (n.guid == guid) return &n;
    }
  }
  return nullptr;
}

const Node* Fabric::nodeByName(const std::string& name) const {
  for (const auto* list : {&switches, &hosts}) {
    for (const auto& n : *list) {
      if (n.name == name) return &n;
    }
  }
  return nullptr;
}

void Fabric::rebuildLinks() {
  links.clear();
  for (const auto* list : {&switches, &hosts}) {
    for (const auto& n : *list) {
      for (const auto& p : n.ports) {
        if (p.remote_guid == 0) continue;
        const Node* peer = nodeByGuid(p.remote_guid);
        if (peer == nullptr) continue;
        // Each cable once: from its smaller end.
        if (std::make_pair(n.guid, p.number) > std::make_pair(p.remote_guid, p.remote_port)) {
          continue;
        }
        Link l;
        l.a = {n.name, n.guid, p.number};
        l.b = {peer->name, peer->guid, p.remote_port};
        l.width = p.width;
        l.speed = p.speed;
        l.state = p.state;
        links.push_back(std::move(l));
      }
    }
  }
  std::sort(links.begin(), links.end(), [](const Link& x, const Link& y) {
    return std::tie(x.a.guid, x.a.port) < std::tie(y.a.guid, y.a.port);
  });
}

size_t Fabric::routedLftEntries() const {
  size_t n = 0;
  for (const auto& s : switches) {
    n += static_cast<size_t>(
        std::count_if(s.lft.begin(), s.lft.end(), [](uint8_t e) { return e != kNoRoute; }));
  }
  return n;
}

double laneGbps(const std::string& speed) {
  static const std::map<std::string, double> kRates = {
      {"SDR", 2.5},      {"DDR", 5.0},    {"QDR", 10.0},   {"FDR10", 10.3125}, {"FDR", 14.0625},
      {"EDR", 25.78125}, {"HDR", 53.125}, {"NDR", 106.25}, {"XDR", 212.5}};
  auto it = kRates.find(speed);
  return it == kRates.end() ? 0.0 : it->second;
}

std::string widthName(int width) {
  return width > 0 ? std::to_string(width) + "x" : std::string("?");
}

std::string guidHex(uint64_t guid) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016" PRIx64, guid);
  return buf;
}

// ------------------------------------------------------------------ JSON

namespace {

constexpr const char* kFormat = "gdrmesh-fabric/1";

nlohmann::json endJson(const LinkEnd& e) {
  return {{"node", e.node}, {"guid", guidHex(e.guid)}, {"port", e.port}};
}

nlohmann::json portJson(const Node& n, const Port& p, const Fabric& f) {
  nlohmann::json j = {{"port", p.number},
                      {"state", p.state},
                      {"phys_state", p.phys_state},
                      {"width", widthName(p.width)},
                      {"speed", p.speed}};
  if (n.kind != NodeKind::kSwitch) {
    j["guid"] = guidHex(p.guid);
    j["lid"] = p.lid;
  }
  if (p.remote_guid != 0) {
    const Node* peer = f.nodeByGuid(p.remote_guid);
    j["remote"] = endJson({peer != nullptr ? peer->name : "", p.remote_guid, p.remote_port});
  }
  return j;
}

nlohmann::json nodeJson(const Node& n, const Fabric& f) {
  nlohmann::json j = {{"name", n.name},
                      {"guid", guidHex(n.guid)},
                      {"kind", nodeKindName(n.kind)},
                      {"num_ports", n.num_ports}};
  if (n.kind == NodeKind::kSwitch) {
    j["lid"] = n.lid;
    j["lft_top"] = n.lft_top;
    j["lft"] = n.lft;
  }
  nlohmann::json ports = nlohmann::json::array();
  for (const auto& p : n.ports) ports.push_back(portJson(n, p, f));
  j["ports"] = std::move(ports);
  return j;
}

Result<uint64_t> parseGuid(const nlohmann::json& j, const std::string& where) {
  if (!j.is_string()) return invalidArgument(where + ": guid must be a \"0x...\" string");
  const std::string s = j.get<std::string>();
  char* end = nullptr;
  uint64_t v = std::strtoull(s.c_str(), &end, 16);
  if (s.empty() || end == nullptr || *end != '\0') {
    return invalidArgument(where + ": guid '" + s + "' is not hexadecimal");
  }
  return v;
}

int parseWidth(const std::string& w) {
  if (w.size() < 2 || w.back() != 'x') return 0;
  return std::atoi(w.c_str());
}

Result<Node> nodeFromJson(const nlohmann::json& j, NodeKind default_kind,
                          const std::string& where) {
  if (!j.is_object()) return invalidArgument(where + ": not an object");
  Node n;
  n.kind = default_kind;
  n.name = j.value("name", "");
  GDR_ASSIGN_OR_RETURN(n.guid, parseGuid(j.value("guid", nlohmann::json()), where));
  const std::string kind = j.value("kind", "");
  if (kind == "router") n.kind = NodeKind::kRouter;
  n.num_ports = j.value("num_ports", 0);
  n.lid = j.value("lid", uint16_t{0});
  n.lft_top = j.value("lft_top", uint16_t{0});
  if (j.contains("lft")) {
    for (const auto& e : j.at("lft")) {
      if (!e.is_number_unsigned() || e.get<unsigned>() > 255) {
        return invalidArgument(where + ": lft entries must be port numbers 0-255");
      }
      n.lft.push_back(static_cast<uint8_t>(e.get<unsigned>()));
    }
  }
  for (const auto& pj : j.value("ports", nlohmann::json::array())) {
    Port p;
    const std::string pwhere = where + " port " + std::to_string(pj.value("port", 0));
    p.number = pj.value("port", 0);
    if (pj.contains("guid")) {
      GDR_ASSIGN_OR_RETURN(p.guid, parseGuid(pj.at("guid"), pwhere));
    } else {
      p.guid = n.guid;
    }
    p.lid = pj.value("lid", uint16_t{0});
    p.state = pj.value("state", "");
    p.phys_state = pj.value("phys_state", "");
    p.width = parseWidth(pj.value("width", ""));
    p.speed = pj.value("speed", "");
    if (pj.contains("remote")) {
      const auto& r = pj.at("remote");
      GDR_ASSIGN_OR_RETURN(p.remote_guid,
                           parseGuid(r.value("guid", nlohmann::json()), pwhere + " remote"));
      p.remote_port = r.value("port", 0);
    }
    n.ports.push_back(std::move(p));
  }
  return n;
}

}  // namespace

nlohmann::json toJson(const Fabric& f) {
  nlohmann::json j;
  j["format"] = kFormat;
  j["source"] = f.source;
  j["discovered_ms"] = f.discovered_ms;
  nlohmann::json sw = nlohmann::json::array();
  for (const auto& n : f.switches) sw.push_back(nodeJson(n, f));
  nlohmann::json hosts = nlohmann::json::array();
  for (const auto& n : f.hosts) hosts.push_back(nodeJson(n, f));
  nlohmann::json links = nlohmann::json::array();
  for (const auto& l : f.links) {
    links.push_back({{"a", endJson(l.a)},
                     {"b", endJson(l.b)},
                     {"width", widthName(l.width)},
                     {"speed", l.speed},
                     {"state", l.state}});
  }
  j["switches"] = std::move(sw);
  j["hosts"] = std::move(hosts);
  j["links"] = std::move(links);
  return j;
}

Result<Fabric> fabricFromJson(const nlohmann::json& j) {
  if (!j.is_object() || j.value("format", "") != kFormat) {
    return invalidArgument(
        "not a gdrmesh fabric snapshot (\"format\" is not \"" + std::string(kFormat) + "\")",
        "write one with `gdrmesh fabric discover -o json > FILE`");
  }
  Fabric f;
  f.source = j.value("source", "");
  f.discovered_ms = j.value("discovered_ms", int64_t{0});
  for (const char* key : {"switches", "hosts"}) {
    if (!j.contains(key) || !j.at(key).is_array()) {
      return invalidArgument(std::string("fabric snapshot: \"") + key + "\" must be an array");
    }
  }
  size_t i = 0;
  for (const auto& n : j.at("switches")) {
    GDR_ASSIGN_OR_RETURN(
        Node node, nodeFromJson(n, NodeKind::kSwitch, "switches[" + std::to_string(i++) + "]"));
    f.switches.push_back(std::move(node));
  }
  i = 0;
  for (const auto& n : j.at("hosts")) {
    GDR_ASSIGN_OR_RETURN(Node node,
                         nodeFromJson(n, NodeKind::kHca, "hosts[" + std::to_string(i++) + "]"));
    f.hosts.push_back(std::move(node));
  }
  // Links are derived from the ports (they carry the same facts); rebuilding them keeps one
  // source of truth for a file edited by hand.
  f.rebuildLinks();
  return f;
}

Result<Fabric> loadFabricFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return notFound("fabric file '" + path + "' cannot be read",
                    "give a file written by `gdrmesh fabric discover -o json`");
  }
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return invalidArgument("fabric file '" + path + "' is not valid JSON");
  auto f = fabricFromJson(j);
  if (!f.ok()) return f.status().withContext(path);
  return f;
}

// ------------------------------------------------------------------ diff

namespace {

std::string endName(const LinkEnd& e) {
  return e.node + "[" + std::to_string(e.port) + "]";
}

std::string linkName(const Link& l) {
  return endName(l.a) + " <-> " + endName(l.b);
}

// The end a finding names: a switch end (the switch port an operator can look at), `a` when
// both are switches.
std::pair<std::string, int> switchEnd(const Fabric& f, const Link& l) {
  for (const LinkEnd* e : {&l.a, &l.b}) {
    const Node* n = f.nodeByGuid(e->guid);
    if (n != nullptr && n->kind == NodeKind::kSwitch) return {e->node, e->port};
  }
  return {"", 0};
}

using LinkKey = std::tuple<uint64_t, int, uint64_t, int>;
LinkKey linkKey(const Link& l) {
  return {l.a.guid, l.a.port, l.b.guid, l.b.port};
}

}  // namespace

std::vector<Finding> diffFabrics(const Fabric& before, const Fabric& after) {
  std::vector<Finding> out;
  std::map<LinkKey, const Link*> old_links, new_links;
  for (const auto& l : before.links) old_links[linkKey(l)] = &l;
  for (const auto& l : after.links) new_links[linkKey(l)] = &l;

  auto add = [&](const char* kind, const Fabric& f, const Link& l, const std::string& what) {
    auto [sw, port] = switchEnd(f, l);
    out.push_back({kind, sw, port, linkName(l) + ": " + what});
  };
  for (const auto& [key, l] : old_links) {
    auto it = new_links.find(key);
    if (it == new_links.end()) {
      add("link_gone", before, *l, "gone (was " + widthName(l->width) + " " + l->speed + ")");
      continue;
    }
    const Link& n = *it->second;
    if (n.width < l->width) {
      add("link_narrower", after, n, "width " + widthName(l->width) + " -> " + widthName(n.width));
    }
    if (laneGbps(n.speed) < laneGbps(l->speed)) {
      add("link_slower", after, n, "speed " + l->speed + " -> " + n.speed);
    }
    if (n.state != l->state && n.state != "Active") {
      add("link_down", after, n, "state " + l->state + " -> " + n.state);
    }
  }
  for (const auto& [key, l] : new_links) {
    if (old_links.count(key) == 0) {
      add("link_new", after, *l, "new (" + widthName(l->width) + " " + l->speed + ")");
    }
  }
  auto nodes = [](const Fabric& f) {
    std::map<uint64_t, const Node*> m;
    for (const auto* list : {&f.switches, &f.hosts}) {
      for (const auto& n : *list) m[n.guid] = &n;
    }
    return m;
  };
  auto old_nodes = nodes(before), new_nodes = nodes(after);
  for (const auto& [guid, n] : old_nodes) {
    if (new_nodes.count(guid) == 0) {
      out.push_back(
          {"node_gone", n->kind == NodeKind::kSwitch ? n->name : "", 0,
           std::string(nodeKindName(n->kind)) + " " + n->name + " (" + guidHex(guid) + ") gone"});
    }
  }
  for (const auto& [guid, n] : new_nodes) {
    if (old_nodes.count(guid) == 0) {
      out.push_back(
          {"node_new", n->kind == NodeKind::kSwitch ? n->name : "", 0,
           std::string(nodeKindName(n->kind)) + " " + n->name + " (" + guidHex(guid) + ") new"});
    }
  }
  return out;
}

// ------------------------------------------------------------------ paths

Result<Endpoint> findEndpoint(const Fabric& f, const std::string& spec) {
  std::string name = spec;
  int port = 0;
  auto slash = spec.rfind('/');
  if (slash != std::string::npos && slash + 1 < spec.size() &&
      spec.find_first_not_of("0123456789", slash + 1) == std::string::npos) {
    name = spec.substr(0, slash);
    port = std::atoi(spec.c_str() + slash + 1);
  }
  const Node* node = nullptr;
  for (const auto& h : f.hosts) {
    if (h.name == name || guidHex(h.guid) == name) node = &h;
  }
  if (node == nullptr && name.rfind("0x", 0) == 0) {
    // A port GUID names the host and the port at once.
    uint64_t g = std::strtoull(name.c_str(), nullptr, 16);
    for (const auto& h : f.hosts) {
      for (const auto& p : h.ports) {
        if (p.guid == g) return Endpoint{&h, &p};
      }
    }
  }
  if (node == nullptr) {
    return notFound("no host '" + name + "' in the fabric",
                    "name an HCA by its node description or GUID (`gdrmesh fabric show`)");
  }
  const Port* p = nullptr;
  if (port != 0) {
    p = node->port(port);
  } else {
    for (const auto& candidate : node->ports) {
      if (candidate.state == "Active") {
        p = &candidate;
        break;
      }
    }
    if (p == nullptr && node->ports.size() == 1) p = node->ports.data();
  }
  if (p == nullptr) {
    return notFound("host '" + name + "' has no " +
                        (port != 0 ? "port " + std::to_string(port) : std::string("active port")),
                    "name a port that is linked: NAME/PORT");
  }
  return Endpoint{node, p};
}

FabricIndex::FabricIndex(const Fabric& f) : fabric_(&f) {
  entries_.reserve(f.switches.size() + f.hosts.size());
  by_guid_.reserve(f.switches.size() + f.hosts.size());
  by_name_.reserve(f.switches.size() + f.hosts.size());
  for (const auto* list : {&f.switches, &f.hosts}) {
    for (const Node& n : *list) {
      Entry e;
      e.node = &n;
      int top = n.num_ports;
      for (const Port& p : n.ports) top = std::max(top, p.number);
      e.ports.assign(static_cast<size_t>(std::max(top, 0)) + 1, nullptr);
      for (const Port& p : n.ports) {
        if (p.number >= 0 && e.ports[static_cast<size_t>(p.number)] == nullptr) {
          e.ports[static_cast<size_t>(p.number)] = &p;
        }
      }
      if (by_guid_.emplace(n.guid, entries_.size()).second) entries_.push_back(std::move(e));
      by_name_.emplace(n.name, &n);
    }
  }
}

const FabricIndex::Entry* FabricIndex::entry(uint64_t guid) const {
  auto it = by_guid_.find(guid);
  return it == by_guid_.end() ? nullptr : &entries_[it->second];
}

const Node* FabricIndex::nodeNamed(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

Result<std::vector<Hop>> tracePath(const Fabric& f, const Endpoint& src, const Endpoint& dst) {
  const FabricIndex ix(f);
  return tracePath(ix, src, dst);
}

Result<std::vector<Hop>> tracePath(const FabricIndex& ix, const Endpoint& src,
                                   const Endpoint& dst) {
  const Fabric& f = ix.fabric();
  if (src.node == nullptr || src.port == nullptr || dst.node == nullptr || dst.port == nullptr) {
    return invalidArgument("path: both ends must be resolved host ports");
  }
  const uint16_t dlid = dst.port->lid;
  // Only errors name it: built when one is returned, not for every path traced.
  auto dst_name = [&dst] { return dst.node->name + "/" + std::to_string(dst.port->number); };
  if (dlid == 0) {
    return failedPrecondition(dst_name() + " has no LID",
                              "a subnet manager must have brought the port up; rediscover");
  }
  std::vector<Hop> hops;
  hops.reserve(8);  // a three-level fat tree's longest path has 5 switches: one allocation
  if (src.node == dst.node && src.port == dst.port) return hops;
  uint64_t guid = src.port->remote_guid;
  int in_port = src.port->remote_port;
  if (guid == 0) {
    return failedPrecondition(src.node->name + "/" + std::to_string(src.port->number) +
                              " is not linked (state " + src.port->state + ")");
  }
  // A fabric cannot have a path longer than its switch count without a loop.
  for (size_t step = 0; step <= f.switches.size(); ++step) {
    const FabricIndex::Entry* e = ix.entry(guid);
    if (e == nullptr) {
      return failedPrecondition("path to " + dst_name() + " reaches node " + guidHex(guid) +
                                ", which the snapshot does not list");
    }
    const Node* n = e->node;
    if (n->kind != NodeKind::kSwitch) {
      if (n == dst.node && in_port == dst.port->number) {
        hops.shrink_to_fit();  // 1M paths of a 1,024-host sweep are kept: no slack
        return hops;
      }
      return failedPrecondition("the LFTs send LID " + std::to_string(dlid) + " (" + dst_name() +
                                ") to " + n->name + "/" + std::to_string(in_port) +
                                (hops.empty() ? std::string()
                                              : " from " + hops.back().switch_name + "[" +
                                                    std::to_string(hops.back().out_port) + "]"));
    }
    const uint8_t out = n->route(dlid);
    if (out == kNoRoute || out == 0) {
      return failedPrecondition("switch " + n->name + " has no LFT route for LID " +
                                    std::to_string(dlid) + " (" + dst_name() + ")",
                                "the subnet manager has not routed it: check OpenSM's log");
    }
    hops.push_back({n->name, n->guid, in_port, out});
    const Port* p = e->port(out);
    if (p == nullptr || p->remote_guid == 0) {
      return failedPrecondition("switch " + n->name + " routes LID " + std::to_string(dlid) +
                                " out of port " + std::to_string(out) + ", which is not linked");
    }
    guid = p->remote_guid;
    in_port = p->remote_port;
  }
  return failedPrecondition("the LFTs loop on the way to LID " + std::to_string(dlid) + " (" +
                            dst_name() + ")");
}

}  // namespace gdrmesh::fabric
