#include "worker/simulate/sim_fabric.h"

#include <algorithm>
#include <cstdlib>
#include <set>

#include "common/fabric/host_match.h"
#include "common/sync/mutex.h"

namespace gdrmesh {

Result<SimBadPort> parseSimBadPort(const std::string& spec) {
  const std::string where = "--sim-fault 'port:" + spec + "'";
  const std::string usage =
      "port:SWITCH[PORT]:FACTOR, e.g. port:leaf01[17]:0.25 (the switch's node description as "
      "`gdrmesh fabric show FILE` lists it)";
  const size_t open = spec.rfind('[');
  const size_t close = spec.rfind(']');
  if (open == std::string::npos || close == std::string::npos || close < open + 2 || open == 0 ||
      close + 2 > spec.size() || spec[close + 1] != ':') {
    return invalidArgument(where + ": expected port:SWITCH[PORT]:FACTOR", usage);
  }
  SimBadPort b;
  b.text = "port:" + spec;
  b.switch_name = spec.substr(0, open);
  const std::string port = spec.substr(open + 1, close - open - 1);
  if (port.find_first_not_of("0123456789") != std::string::npos) {
    return invalidArgument(where + ": PORT '" + port + "' is not a port number", usage);
  }
  b.port = std::atoi(port.c_str());
  const std::string factor = spec.substr(close + 2);
  char* end = nullptr;
  b.factor = std::strtod(factor.c_str(), &end);
  if (factor.empty() || end == nullptr || *end != '\0' || !(b.factor > 0)) {
    return invalidArgument(where + ": FACTOR '" + factor + "' must be a number > 0",
                           "0.25 = a quarter of the bandwidth");
  }
  return b;
}

Result<std::shared_ptr<const SimFabric>> SimFabric::make(fabric::Fabric fabric,
                                                         std::vector<SimBadPort> bad) {
  for (const SimBadPort& b : bad) {
    const fabric::Node* sw = fabric.nodeByName(b.switch_name);
    if (sw == nullptr || sw->kind != fabric::NodeKind::kSwitch) {
      return invalidArgument("--sim-fault '" + b.text + "': no switch '" + b.switch_name +
                                 "' in the --sim-fabric snapshot",
                             "name a switch as `gdrmesh fabric show FILE` lists it");
    }
    const fabric::Port* p = sw->port(b.port);
    if (p == nullptr || p->remote_guid == 0) {
      return invalidArgument(
          "--sim-fault '" + b.text + "': " + b.switch_name + " port " + std::to_string(b.port) +
              " is not linked",
          "`gdrmesh fabric show FILE --switch " + b.switch_name + "` lists its ports");
    }
  }
  return std::shared_ptr<const SimFabric>(new SimFabric(std::move(fabric), std::move(bad)));
}

std::vector<std::string> SimFabric::hostNames() const {
  std::vector<std::string> descriptions;
  for (const fabric::Node& h : fabric_.hosts) {
    if (h.kind == fabric::NodeKind::kHca) descriptions.push_back(h.name);
  }
  std::sort(descriptions.begin(), descriptions.end());
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const std::string& d : descriptions) {
    std::string host = fabric::hostOfNodeDescription(d);
    if (!host.empty() && seen.insert(host).second) out.push_back(std::move(host));
  }
  return out;
}

const fabric::Node* SimFabric::hca(const std::string& worker, const std::string& nic) const {
  const fabric::Node* first = nullptr;
  for (const fabric::Node& h : fabric_.hosts) {
    if (fabric::hostOfNodeDescription(h.name) != worker) continue;
    if (fabric::deviceOfNodeDescription(h.name) == nic) return &h;
    if (first == nullptr || h.name < first->name) first = &h;
  }
  return first;
}

double SimFabric::pathFactor(const std::string& src, const std::string& src_nic,
                             const std::string& dst, const std::string& dst_nic) const {
  if (bad_.empty()) return 1;
  const std::string key = src + "/" + src_nic + ">" + dst + "/" + dst_nic;
  {
    MutexLock lock(mu_);
    auto it = traced_.find(key);
    if (it != traced_.end()) return it->second;
  }
  double f = 1;
  auto endpoint = [](const fabric::Node* n) -> fabric::Endpoint {
    if (n == nullptr) return {};
    for (const fabric::Port& p : n->ports) {
      if (p.state == "Active") return {n, &p};
    }
    return {n, n->ports.size() == 1 ? n->ports.data() : nullptr};
  };
  const fabric::Endpoint a = endpoint(hca(src, src_nic));
  const fabric::Endpoint b = endpoint(hca(dst, dst_nic));
  if (a.port != nullptr && b.port != nullptr) {
    auto hops = fabric::tracePath(index_, a, b);
    if (hops.ok()) {
      for (const fabric::Hop& h : *hops) {
        for (const SimBadPort& bad : bad_) {
          if (h.switch_name == bad.switch_name &&
              (h.in_port == bad.port || h.out_port == bad.port)) {
            f *= bad.factor;
          }
        }
      }
    }
  }
  MutexLock lock(mu_);
  traced_[key] = f;
  return f;
}

}  // namespace gdrmesh
