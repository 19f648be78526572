#include "common/fabric/lldp.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

namespace gdrmesh::fabric {
namespace {

using nlohmann::json;

// lldpd's JSON writer: one element is an object, repeated ones an array of objects. Calls `fn`
// with (path, key, value) for every keyed entry of either shape.
template <typename Fn>
Status forEachKeyed(const json& j, const std::string& path, Fn&& fn) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      if (auto st = fn(path + "." + k, k, v); !st.ok()) return st;
    }
    return Status();
  }
  if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) {
      const std::string at = path + "[" + std::to_string(i) + "]";
      if (!j[i].is_object()) return invalidArgument(at + ": must be an object");
      for (const auto& [k, v] : j[i].items()) {
        if (auto st = fn(at + "." + k, k, v); !st.ok()) return st;
      }
    }
    return Status();
  }
  return invalidArgument(path + ": must be an object or an array");
}

// An optional string field ("" when absent); another type is an error naming it.
Result<std::string> lldpString(const json& obj, const std::string& key, const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::string();
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number_integer()) return std::to_string(it->get<int64_t>());
  return invalidArgument(path + "." + key + ": must be a string");
}

// An optional integer given as a number or a decimal string; 0 when absent.
Result<int> lldpInt(const json& obj, const std::string& key, const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return 0;
  if (it->is_number_integer()) return it->get<int>();
  if (it->is_string()) {
    const std::string s = it->get<std::string>();
    char* end = nullptr;
    const long v = std::strtol(s.c_str(), &end, 10);
    if (!s.empty() && end != nullptr && *end == '\0' && v >= 0 && v <= 1 << 24) {
      return static_cast<int>(v);
    }
  }
  return invalidArgument(path + "." + key + ": must be a number");
}

// {"type": "mac", "value": "..."}: the value must be there.
Status readLldpId(const json& parent, const std::string& path, std::string& value,
                  std::string& type) {
  auto it = parent.find("id");
  if (it == parent.end()) return invalidArgument(path + ".id: missing");
  if (!it->is_object()) return invalidArgument(path + ".id: must be an object");
  GDR_ASSIGN_OR_RETURN(value, lldpString(*it, "value", path + ".id"));
  GDR_ASSIGN_OR_RETURN(type, lldpString(*it, "type", path + ".id"));
  if (value.empty()) return invalidArgument(path + ".id.value: missing");
  return Status();
}

Status readLldpChassis(const json& c, const std::string& path, LldpNeighbour& n) {
  if (!c.is_object()) return invalidArgument(path + ": must be an object");
  // Without a SysName the chassis is not keyed: {"id": {...}, "descr": ...}.
  if (c.contains("id") && c["id"].is_object() && c["id"].contains("value")) {
    return readLldpId(c, path, n.chassis_id, n.chassis_id_type);
  }
  if (c.size() != 1) return invalidArgument(path + ": must hold one chassis");
  const auto first = c.begin();
  const std::string& name = first.key();
  const json& body = first.value();
  if (!body.is_object()) return invalidArgument(path + "." + name + ": must be an object");
  n.chassis_name = name;
  return readLldpId(body, path + "." + name, n.chassis_id, n.chassis_id_type);
}

Status readLldpVlans(const json& v, const std::string& path, LldpNeighbour& n) {
  auto one = [&n](const json& e, const std::string& at) -> Status {
    if (!e.is_object()) return invalidArgument(at + ": must be an object");
    GDR_ASSIGN_OR_RETURN(const int id, lldpInt(e, "vlan-id", at));
    if (id == 0) return invalidArgument(at + ".vlan-id: missing");
    n.vlans.push_back(id);
    auto p = e.find("pvid");
    if (p != e.end() && ((p->is_boolean() && p->get<bool>()) ||
                         (p->is_string() && p->get<std::string>() == "yes"))) {
      n.pvid = id;
    }
    return Status();
  };
  if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) {
      if (auto st = one(v[i], path + "[" + std::to_string(i) + "]"); !st.ok()) return st;
    }
    return Status();
  }
  return one(v, path);
}

Status readLldpInterface(const std::string& path, const std::string& name, const json& body,
                         std::vector<LldpNeighbour>& out) {
  if (!body.is_object()) return invalidArgument(path + ": must be an object");
  LldpNeighbour n;
  n.interface = name;
  auto chassis = body.find("chassis");
  if (chassis == body.end()) return invalidArgument(path + ".chassis: missing");
  if (auto st = readLldpChassis(*chassis, path + ".chassis", n); !st.ok()) return st;
  auto port = body.find("port");
  if (port == body.end()) return invalidArgument(path + ".port: missing");
  if (!port->is_object()) return invalidArgument(path + ".port: must be an object");
  if (auto st = readLldpId(*port, path + ".port", n.port_id, n.port_id_type); !st.ok()) return st;
  GDR_ASSIGN_OR_RETURN(n.port_descr, lldpString(*port, "descr", path + ".port"));
  GDR_ASSIGN_OR_RETURN(n.mfs, lldpInt(*port, "mfs", path + ".port"));
  if (auto v = body.find("vlan"); v != body.end()) {
    if (auto st = readLldpVlans(*v, path + ".vlan", n); !st.ok()) return st;
  }
  out.push_back(std::move(n));
  return Status();
}

// ------------------------------------------------------------------ JSON helpers

json neighbourJson(const LldpNeighbour& n) {
  json j = {{"interface", n.interface},
            {"chassis_id", n.chassis_id},
            {"chassis_id_type", n.chassis_id_type},
            {"chassis_name", n.chassis_name},
            {"port_id", n.port_id},
            {"port_id_type", n.port_id_type},
            {"port_descr", n.port_descr}};
  if (n.mfs != 0) j["mfs"] = n.mfs;
  if (n.pvid != 0) j["pvid"] = n.pvid;
  if (!n.vlans.empty()) j["vlans"] = n.vlans;
  return j;
}

// Reads a field of an object with checks: `out` keeps its value when the field is absent.
template <typename T>
Status readField(const json& j, const char* key, const std::string& where, T& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status();
  try {
    out = it->get<T>();
  } catch (const json::exception&) {
    return invalidArgument(where + "." + key + ": wrong type");
  }
  return Status();
}

Result<LldpNeighbour> neighbourFromJson(const json& j, const std::string& where) {
  if (!j.is_object()) return invalidArgument(where + ": must be an object");
  LldpNeighbour n;
  for (auto [key, field] :
       {std::pair{"interface", &n.interface}, std::pair{"chassis_id", &n.chassis_id},
        std::pair{"chassis_id_type", &n.chassis_id_type},
        std::pair{"chassis_name", &n.chassis_name}, std::pair{"port_id", &n.port_id},
        std::pair{"port_id_type", &n.port_id_type}, std::pair{"port_descr", &n.port_descr}}) {
    if (auto st = readField(j, key, where, *field); !st.ok()) return st;
  }
  if (auto st = readField(j, "mfs", where, n.mfs); !st.ok()) return st;
  if (auto st = readField(j, "pvid", where, n.pvid); !st.ok()) return st;
  if (auto st = readField(j, "vlans", where, n.vlans); !st.ok()) return st;
  if (n.chassis_id.empty()) return invalidArgument(where + ".chassis_id: missing");
  if (n.port_id.empty()) return invalidArgument(where + ".port_id: missing");
  return n;
}

std::string vlanText(int pvid, const std::vector<int>& vlans) {
  std::string s;
  for (int v : vlans) s += (s.empty() ? "" : ",") + std::to_string(v);
  if (pvid != 0 && std::find(vlans.begin(), vlans.end(), pvid) == vlans.end()) {
    s += (s.empty() ? "" : ",") + std::to_string(pvid);
  }
  return s.empty() ? "-" : s + (pvid != 0 ? " (pvid " + std::to_string(pvid) + ")" : "");
}

auto nicKey(const std::string& host, const std::string& device, int port) {
  return std::make_tuple(host, device, port);
}

}  // namespace

Result<std::vector<LldpNeighbour>> parseLldpNeighbours(const json& j) {
  if (!j.is_object()) return invalidArgument("lldp JSON: must be an object {\"lldp\": ...}");
  auto lldp = j.find("lldp");
  if (lldp == j.end()) return invalidArgument("lldp: missing (not `lldpcli -f json` output)");
  if (lldp->is_array()) {
    return invalidArgument("lldp: an array (lldpcli's json0 format)",
                           "read neighbours with `lldpcli -f json show neighbors details`");
  }
  if (!lldp->is_object()) return invalidArgument("lldp: must be an object");
  std::vector<LldpNeighbour> out;
  auto ifaces = lldp->find("interface");
  if (ifaces == lldp->end()) return out;  // no neighbours: {"lldp": {}}
  auto st = forEachKeyed(*ifaces, "lldp.interface",
                         [&out](const std::string& path, const std::string& name, const json& v) {
                           return readLldpInterface(path, name, v, out);
                         });
  if (!st.ok()) return st;
  return out;
}

Result<std::vector<LldpNeighbour>> parseLldpNeighboursText(const std::string& text,
                                                           const std::string& what) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return invalidArgument(what + " is not JSON");
  auto r = parseLldpNeighbours(j);
  if (!r.ok()) return r.status().withContext(what);
  return r;
}

json toJson(const LldpHost& h) {
  json nics = json::array();
  for (const auto& n : h.nics) {
    json x = {
        {"device", n.device}, {"port", n.port}, {"netdev", n.netdev}, {"link_layer", n.link_layer}};
    if (n.neighbour) {
      x["neighbour"] = neighbourJson(*n.neighbour);
    } else {
      x["reason"] = n.reason;
      x["fix"] = n.fix;
    }
    nics.push_back(std::move(x));
  }
  json j = {{"host", h.host}, {"nics", std::move(nics)}};
  if (!h.status.ok()) {
    j["status"] = {{"code", codeName(h.status.code())},
                   {"message", h.status.message()},
                   {"fix", h.status.fix()}};
  }
  return j;
}

Result<LldpHost> lldpHostFromJson(const json& j) {
  if (!j.is_object()) return invalidArgument("lldp host: must be an object");
  LldpHost h;
  if (auto st = readField(j, "host", "lldp host", h.host); !st.ok()) return st;
  if (h.host.empty()) return invalidArgument("lldp host.host: missing");
  const std::string where = "lldp host " + h.host;
  if (auto s = j.find("status"); s != j.end() && s->is_object()) {
    std::string message, fix;
    if (auto st = readField(*s, "message", where + ".status", message); !st.ok()) return st;
    if (auto st = readField(*s, "fix", where + ".status", fix); !st.ok()) return st;
    h.status = Status(Code::kFailedPrecondition, message, fix);
  }
  auto nics = j.find("nics");
  if (nics == j.end() || !nics->is_array()) return invalidArgument(where + ".nics: missing");
  for (size_t i = 0; i < nics->size(); ++i) {
    const json& x = (*nics)[i];
    const std::string at = where + ".nics[" + std::to_string(i) + "]";
    if (!x.is_object()) return invalidArgument(at + ": must be an object");
    LldpNic n;
    for (auto [key, field] : {std::pair{"device", &n.device}, std::pair{"netdev", &n.netdev},
                              std::pair{"link_layer", &n.link_layer},
                              std::pair{"reason", &n.reason}, std::pair{"fix", &n.fix}}) {
      if (auto st = readField(x, key, at, *field); !st.ok()) return st;
    }
    if (auto st = readField(x, "port", at, n.port); !st.ok()) return st;
    if (n.device.empty()) return invalidArgument(at + ".device: missing");
    if (auto nb = x.find("neighbour"); nb != x.end() && !nb->is_null()) {
      GDR_ASSIGN_OR_RETURN(n.neighbour, neighbourFromJson(*nb, at + ".neighbour"));
    }
    h.nics.push_back(std::move(n));
  }
  return h;
}

// ------------------------------------------------------------------ the snapshot

const EthSwitch* EthFabric::switchById(const std::string& chassis_id) const {
  for (const auto& s : switches) {
    if (s.chassis_id == chassis_id) return &s;
  }
  return nullptr;
}

const EthLink* EthFabric::linkOf(const std::string& host, const std::string& device,
                                 int port) const {
  for (const auto& l : links) {
    if (l.host == host && (device.empty() || l.device == device) && (port == 0 || l.port == port)) {
      return &l;
    }
  }
  return nullptr;
}

EthFabric buildEthFabric(const std::vector<LldpHost>& hosts, int64_t discovered_ms) {
  EthFabric f;
  f.discovered_ms = discovered_ms;
  std::map<std::string, EthSwitch> switches;  // by chassis ID
  std::set<std::string> host_names;
  for (const auto& h : hosts) {
    host_names.insert(h.host);
    for (const auto& n : h.nics) {
      if (!n.neighbour) {
        f.unknown.push_back({h.host, n.device, n.port, n.netdev,
                             n.reason.empty() ? h.status.message() : n.reason,
                             n.fix.empty() ? h.status.fix() : n.fix});
        continue;
      }
      const LldpNeighbour& nb = *n.neighbour;
      EthSwitch& s = switches[nb.chassis_id];
      s.chassis_id = nb.chassis_id;
      s.chassis_id_type = nb.chassis_id_type;
      if (s.name.empty() || s.name == s.chassis_id) {
        s.name = nb.chassis_name.empty() ? nb.chassis_id : nb.chassis_name;
      }
      s.ports.push_back(nb.port_id);
      EthLink l;
      l.host = h.host;
      l.device = n.device;
      l.port = n.port;
      l.netdev = n.netdev;
      l.chassis_id = nb.chassis_id;
      l.switch_port = nb.port_id;
      l.switch_port_descr = nb.port_descr;
      l.mfs = nb.mfs;
      l.pvid = nb.pvid;
      l.vlans = nb.vlans;
      f.links.push_back(std::move(l));
    }
  }
  for (auto& [id, s] : switches) {
    std::sort(s.ports.begin(), s.ports.end());
    s.ports.erase(std::unique(s.ports.begin(), s.ports.end()), s.ports.end());
    f.switches.push_back(std::move(s));
  }
  std::sort(f.switches.begin(), f.switches.end(), [](const EthSwitch& a, const EthSwitch& b) {
    return std::tie(a.name, a.chassis_id) < std::tie(b.name, b.chassis_id);
  });
  // Each link names its switch as the snapshot does (one name per chassis).
  for (auto& l : f.links) {
    if (const EthSwitch* s = f.switchById(l.chassis_id)) l.switch_name = s->name;
  }
  std::sort(f.links.begin(), f.links.end(), [](const EthLink& a, const EthLink& b) {
    return nicKey(a.host, a.device, a.port) < nicKey(b.host, b.device, b.port);
  });
  std::sort(f.unknown.begin(), f.unknown.end(), [](const EthUnattached& a, const EthUnattached& b) {
    return nicKey(a.host, a.device, a.port) < nicKey(b.host, b.device, b.port);
  });
  f.hosts.assign(host_names.begin(), host_names.end());
  return f;
}

json toJson(const EthFabric& f) {
  json switches = json::array();
  for (const auto& s : f.switches) {
    switches.push_back({{"name", s.name},
                        {"chassis_id", s.chassis_id},
                        {"chassis_id_type", s.chassis_id_type},
                        {"kind", "switch"},
                        {"ports", s.ports}});
  }
  json hosts = json::array();
  json links = json::array();
  for (const auto& l : f.links) {
    hosts.push_back({{"name", l.nicName()},
                     {"host", l.host},
                     {"device", l.device},
                     {"port", l.port},
                     {"netdev", l.netdev},
                     {"kind", "nic"}});
    json link = {{"host", {{"name", l.nicName()}, {"port", l.port}, {"netdev", l.netdev}}},
                 {"switch",
                  {{"name", l.switch_name},
                   {"chassis_id", l.chassis_id},
                   {"port", l.switch_port},
                   {"port_descr", l.switch_port_descr}}}};
    if (l.mfs != 0) link["mfs"] = l.mfs;
    if (l.pvid != 0) link["pvid"] = l.pvid;
    if (!l.vlans.empty()) link["vlans"] = l.vlans;
    links.push_back(std::move(link));
  }
  json unknown = json::array();
  for (const auto& u : f.unknown) {
    hosts.push_back({{"name", u.nicName()},
                     {"host", u.host},
                     {"device", u.device},
                     {"port", u.port},
                     {"netdev", u.netdev},
                     {"kind", "nic"}});
    unknown.push_back({{"name", u.nicName()},
                       {"port", u.port},
                       {"netdev", u.netdev},
                       {"reason", u.reason},
                       {"fix", u.fix}});
  }
  std::sort(hosts.begin(), hosts.end(), [](const json& a, const json& b) {
    return std::make_pair(a["name"].get<std::string>(), a["port"].get<int>()) <
           std::make_pair(b["name"].get<std::string>(), b["port"].get<int>());
  });
  return {{"format", kLldpFormat},        {"source", kLldpSource},
          {"estimate", kLldpEstimate},    {"inter_switch_links", "unknown"},
          {"routes", "unknown"},          {"discovered_ms", f.discovered_ms},
          {"answered", f.hosts},          {"switches", std::move(switches)},
          {"hosts", std::move(hosts)},    {"links", std::move(links)},
          {"unknown", std::move(unknown)}};
}

bool isLldpSnapshot(const json& j) {
  if (!j.is_object()) return false;
  auto it = j.find("format");
  return it != j.end() && it->is_string() && it->get<std::string>() == kLldpFormat;
}

namespace {

// A snapshot's NICs by (name, port) -> (host, device), from its "hosts" list (a NIC's name is
// "HOST DEVICE"): links and NICs without a neighbour name their NIC by it.
using LldpNicIndex = std::map<std::pair<std::string, int>, std::pair<std::string, std::string>>;

Status readLldpSnapshotSwitches(const json& sj, EthFabric& f) {
  for (size_t i = 0; i < sj.size(); ++i) {
    const std::string at = "lldp snapshot.switches[" + std::to_string(i) + "]";
    if (!sj[i].is_object()) return invalidArgument(at + ": must be an object");
    EthSwitch s;
    if (auto st = readField(sj[i], "name", at, s.name); !st.ok()) return st;
    if (auto st = readField(sj[i], "chassis_id", at, s.chassis_id); !st.ok()) return st;
    if (auto st = readField(sj[i], "chassis_id_type", at, s.chassis_id_type); !st.ok()) return st;
    if (auto st = readField(sj[i], "ports", at, s.ports); !st.ok()) return st;
    if (s.chassis_id.empty()) return invalidArgument(at + ".chassis_id: missing");
    f.switches.push_back(std::move(s));
  }
  return Status();
}

Result<LldpNicIndex> readLldpSnapshotNics(const json& hj) {
  LldpNicIndex nics;
  for (size_t i = 0; i < hj.size(); ++i) {
    const std::string at = "lldp snapshot.hosts[" + std::to_string(i) + "]";
    if (!hj[i].is_object()) return invalidArgument(at + ": must be an object");
    std::string name, host, device;
    int port = 1;
    if (auto st = readField(hj[i], "name", at, name); !st.ok()) return st;
    if (auto st = readField(hj[i], "host", at, host); !st.ok()) return st;
    if (auto st = readField(hj[i], "device", at, device); !st.ok()) return st;
    if (auto st = readField(hj[i], "port", at, port); !st.ok()) return st;
    if (host.empty() || device.empty()) return invalidArgument(at + ": host and device missing");
    nics[{name, port}] = {host, device};
  }
  return nics;
}

Status lldpSnapshotNicOf(const LldpNicIndex& nics, const std::string& name, int port,
                         const std::string& at, std::string& host, std::string& device) {
  auto it = nics.find({name, port});
  if (it == nics.end()) {
    return invalidArgument(at + ": NIC '" + name + "' port " + std::to_string(port) +
                           " is not in \"hosts\"");
  }
  host = it->second.first;
  device = it->second.second;
  return Status();
}

// One of "links": its NIC end (known from "hosts"), its switch end (known from "switches").
Result<EthLink> readLldpSnapshotLink(const json& x, const std::string& at, const LldpNicIndex& nics,
                                     const EthFabric& f) {
  if (!x.is_object() || !x.contains("host") || !x.contains("switch") || !x["host"].is_object() ||
      !x["switch"].is_object()) {
    return invalidArgument(at + ": must be an object with \"host\" and \"switch\" objects");
  }
  const json& h = x["host"];
  const json& s = x["switch"];
  EthLink l;
  std::string name;
  if (auto st = readField(h, "name", at + ".host", name); !st.ok()) return st;
  if (auto st = readField(h, "port", at + ".host", l.port); !st.ok()) return st;
  if (auto st = readField(h, "netdev", at + ".host", l.netdev); !st.ok()) return st;
  if (auto st = lldpSnapshotNicOf(nics, name, l.port, at + ".host", l.host, l.device); !st.ok()) {
    return st;
  }
  if (auto st = readField(s, "name", at + ".switch", l.switch_name); !st.ok()) return st;
  if (auto st = readField(s, "chassis_id", at + ".switch", l.chassis_id); !st.ok()) return st;
  if (auto st = readField(s, "port", at + ".switch", l.switch_port); !st.ok()) return st;
  if (auto st = readField(s, "port_descr", at + ".switch", l.switch_port_descr); !st.ok()) {
    return st;
  }
  if (l.chassis_id.empty()) return invalidArgument(at + ".switch.chassis_id: missing");
  if (l.switch_port.empty()) return invalidArgument(at + ".switch.port: missing");
  if (f.switchById(l.chassis_id) == nullptr) {
    return invalidArgument(at + ".switch.chassis_id: '" + l.chassis_id +
                           "' is not in \"switches\"");
  }
  if (auto st = readField(x, "mfs", at, l.mfs); !st.ok()) return st;
  if (auto st = readField(x, "pvid", at, l.pvid); !st.ok()) return st;
  if (auto st = readField(x, "vlans", at, l.vlans); !st.ok()) return st;
  return l;
}

Status readLldpSnapshotUnknown(const json& uj, const LldpNicIndex& nics, EthFabric& f) {
  for (size_t i = 0; i < uj.size(); ++i) {
    const std::string at = "lldp snapshot.unknown[" + std::to_string(i) + "]";
    if (!uj[i].is_object()) return invalidArgument(at + ": must be an object");
    EthUnattached u;
    std::string name;
    if (auto st = readField(uj[i], "name", at, name); !st.ok()) return st;
    if (auto st = readField(uj[i], "port", at, u.port); !st.ok()) return st;
    if (auto st = readField(uj[i], "netdev", at, u.netdev); !st.ok()) return st;
    if (auto st = readField(uj[i], "reason", at, u.reason); !st.ok()) return st;
    if (auto st = readField(uj[i], "fix", at, u.fix); !st.ok()) return st;
    if (auto st = lldpSnapshotNicOf(nics, name, u.port, at, u.host, u.device); !st.ok()) return st;
    f.unknown.push_back(std::move(u));
  }
  return Status();
}

}  // namespace

Result<EthFabric> ethFabricFromJson(const json& j) {
  if (!isLldpSnapshot(j)) {
    return invalidArgument(std::string("lldp snapshot: \"format\" must be \"") + kLldpFormat + "\"",
                           "give a snapshot saved by `gdrmesh fabric discover --lldp`");
  }
  EthFabric f;
  if (auto st = readField(j, "discovered_ms", "lldp snapshot", f.discovered_ms); !st.ok())
    return st;
  if (auto st = readField(j, "answered", "lldp snapshot", f.hosts); !st.ok()) return st;
  for (const char* key : {"switches", "hosts", "links", "unknown"}) {
    if (!j.contains(key) || !j[key].is_array()) {
      return invalidArgument(std::string("lldp snapshot.") + key + ": must be an array");
    }
  }
  GDR_RETURN_IF_ERROR(readLldpSnapshotSwitches(j["switches"], f));
  GDR_ASSIGN_OR_RETURN(const LldpNicIndex nics, readLldpSnapshotNics(j["hosts"]));
  const json& lj = j["links"];
  for (size_t i = 0; i < lj.size(); ++i) {
    GDR_ASSIGN_OR_RETURN(
        EthLink l,
        readLldpSnapshotLink(lj[i], "lldp snapshot.links[" + std::to_string(i) + "]", nics, f));
    f.links.push_back(std::move(l));
  }
  GDR_RETURN_IF_ERROR(readLldpSnapshotUnknown(j["unknown"], nics, f));
  return f;
}

std::string ethSummary(const EthFabric& f) {
  return std::to_string(f.switches.size()) + " switch" + (f.switches.size() == 1 ? "" : "es") +
         ", " + std::to_string(f.links.size()) + " host NIC port" +
         (f.links.size() == 1 ? "" : "s") + " linked to switch ports, " +
         std::to_string(f.unknown.size()) + " without a neighbour, from " +
         std::to_string(f.hosts.size()) + " host" + (f.hosts.size() == 1 ? "" : "s") +
         " (source lldp: inter-switch links and routes unknown; " + kLldpEstimate + ")";
}

std::vector<Finding> diffEthFabrics(const EthFabric& before, const EthFabric& after,
                                    bool all_hosts) {
  const std::set<std::string> answered(after.hosts.begin(), after.hosts.end());
  const std::set<std::string> known(before.hosts.begin(), before.hosts.end());
  // Without all_hosts: only hosts in both (a host's first answer is no change).
  auto compared = [&](const std::string& host) {
    return all_hosts || (answered.count(host) > 0 && known.count(host) > 0);
  };
  std::map<std::tuple<std::string, std::string, int>, const EthLink*> now;
  for (const auto& l : after.links) now[nicKey(l.host, l.device, l.port)] = &l;
  std::map<std::tuple<std::string, std::string, int>, const EthUnattached*> now_unknown;
  for (const auto& u : after.unknown) now_unknown[nicKey(u.host, u.device, u.port)] = &u;
  std::set<std::tuple<std::string, std::string, int>> was_linked;

  std::vector<Finding> out;
  auto nic_text = [](const std::string& host, const std::string& device, int port) {
    return host + " " + device + "/" + std::to_string(port);
  };
  for (const auto& b : before.links) {
    const auto key = nicKey(b.host, b.device, b.port);
    was_linked.insert(key);
    if (!compared(b.host)) continue;
    const std::string nic = nic_text(b.host, b.device, b.port);
    auto it = now.find(key);
    if (it == now.end()) {
      auto u = now_unknown.find(key);
      const std::string why =
          u != now_unknown.end()
              ? u->second->reason
              : (answered.count(b.host) > 0 ? "the NIC port is gone" : "the host did not answer");
      out.push_back({"neighbour_gone", b.switch_name, 0,
                     nic + ": its neighbour " + b.switchPortName() + " is gone (" + why + ")"});
      continue;
    }
    const EthLink& a = *it->second;
    if (a.chassis_id != b.chassis_id || a.switch_port != b.switch_port) {
      out.push_back({"nic_moved", a.switch_name, 0,
                     nic + ": moved from " + b.switchPortName() + " to " + a.switchPortName()});
      continue;
    }
    std::string changes;
    if (a.mfs != b.mfs) {
      changes += "maximum frame size " + std::to_string(b.mfs) + " -> " + std::to_string(a.mfs);
    }
    if (a.vlans != b.vlans || a.pvid != b.pvid) {
      changes += std::string(changes.empty() ? "" : ", ") + "VLANs " + vlanText(b.pvid, b.vlans) +
                 " -> " + vlanText(a.pvid, a.vlans);
    }
    if (!changes.empty()) {
      out.push_back(
          {"port_changed", a.switch_name, 0, a.switchPortName() + " (" + nic + "): " + changes});
    }
  }
  for (const auto& a : after.links) {
    const auto key = nicKey(a.host, a.device, a.port);
    if (was_linked.count(key) > 0 || !compared(a.host)) continue;
    out.push_back({"neighbour_new", a.switch_name, 0,
                   nic_text(a.host, a.device, a.port) + ": now linked to " + a.switchPortName()});
  }
  return out;
}

// ------------------------------------------------------------------ coverage

const EthLink* ethLinkOfEnd(const EthFabric& f, const std::string& host, const std::string& nic) {
  const EthLink* l = f.linkOf(host, nic);
  return l != nullptr ? l : (nic.empty() ? nullptr : f.linkOf(host, ""));
}

EthCoverage estimateEthCoverage(const EthFabric& f, const std::vector<EthTestEnds>& tests) {
  EthCoverage c;
  std::set<std::string> all_ports;
  for (const auto& l : f.links) all_ports.insert(l.switchPortName());
  c.ports_known = all_ports.size();
  for (const auto& t : tests) {
    ++c.tests;
    const EthLink* a = ethLinkOfEnd(f, t.host_a, t.nic_a);
    const EthLink* b = ethLinkOfEnd(f, t.host_b, t.nic_b);
    for (const EthLink* e : {a, b}) {
      if (e == nullptr) continue;
      ++c.switch_ports[e->switchPortName()];
    }
    if (a != nullptr) ++c.switches[a->switch_name];
    if (b != nullptr && (a == nullptr || b->chassis_id != a->chassis_id)) {
      ++c.switches[b->switch_name];
    }
    if (a == nullptr || b == nullptr) {
      ++c.unknown;
    } else if (a->chassis_id == b->chassis_id) {
      ++c.within_switch;
    } else {
      ++c.across;
    }
  }
  for (const auto& p : all_ports) {
    if (c.switch_ports.count(p) == 0) c.ports_unused.push_back(p);
  }
  return c;
}

std::vector<std::string> ethCoverageNotes(const EthCoverage& c) {
  const std::string head = std::string("fabric coverage (") + kLldpEstimate + ", from LLDP): ";
  std::vector<std::string> out;
  out.push_back(head + std::to_string(c.switch_ports.size()) + " of " +
                std::to_string(c.ports_known) + " host switch ports carried tests, on " +
                std::to_string(c.switches.size()) + " switch" +
                (c.switches.size() == 1 ? "" : "es") + "; of " + std::to_string(c.tests) +
                " tests " + std::to_string(c.within_switch) + " stayed within one switch, " +
                std::to_string(c.across) + " crossed the fabric between switches (path unknown)" +
                (c.unknown > 0 ? ", " + std::to_string(c.unknown) +
                                     " had an end without an LLDP "
                                     "neighbour"
                               : ""));
  if (!c.ports_unused.empty()) {
    std::string list;
    for (const auto& p : c.ports_unused) list += (list.empty() ? "" : ", ") + p;
    out.push_back(head + "host switch ports no test touched: " + list);
  }
  return out;
}

std::vector<EthPortSuspect> ethPortSuspects(const EthFabric& f,
                                            const std::vector<EthTestEnds>& tests,
                                            const std::vector<bool>& failed) {
  struct Tally {
    const EthLink* link = nullptr;
    size_t tests = 0, failed = 0;
  };
  std::map<std::string, Tally> ports;
  size_t failed_total = 0;
  for (size_t i = 0; i < tests.size(); ++i) {
    const bool bad = i < failed.size() && failed[i];
    failed_total += bad ? 1 : 0;
    const EthLink* a = ethLinkOfEnd(f, tests[i].host_a, tests[i].nic_a);
    const EthLink* b = ethLinkOfEnd(f, tests[i].host_b, tests[i].nic_b);
    for (const EthLink* e : {a, b}) {
      if (e == nullptr) continue;
      Tally& t = ports[e->switchPortName()];
      t.link = e;
      ++t.tests;
      t.failed += bad ? 1 : 0;
    }
  }
  std::vector<EthPortSuspect> out;
  if (failed_total == 0) return out;
  for (const auto& [name, t] : ports) {
    if (t.failed < 2 || t.failed * 4 < t.tests * 3 || t.failed * 2 < failed_total) continue;
    EthPortSuspect s;
    s.switch_port = name;
    s.nic = t.link->nicName();
    s.failed = t.failed;
    s.tests = t.tests;
    s.failed_total = failed_total;
    s.evidence = std::to_string(t.failed) + " of " + std::to_string(failed_total) +
                 " slow or failed tests had an end on " + name + " (" + s.nic + ", " +
                 t.link->netdev + "); " + std::to_string(t.failed) + " of its " +
                 std::to_string(t.tests) + " tests failed (" + kLldpEstimate +
                 ": the host's own cable is all LLDP names)";
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(), [](const EthPortSuspect& a, const EthPortSuspect& b) {
    return std::make_tuple(b.failed, a.tests, a.switch_port) <
           std::make_tuple(a.failed, b.tests, b.switch_port);
  });
  return out;
}

}  // namespace gdrmesh::fabric
