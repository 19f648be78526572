#include "common/fabric/host_match.h"

#include <algorithm>
#include <set>

namespace gdrmesh::fabric {

std::string hostOfNodeDescription(const std::string& description) {
  const size_t begin = description.find_first_not_of(' ');
  if (begin == std::string::npos) return "";
  const size_t end = description.find(' ', begin);
  return description.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

std::string deviceOfNodeDescription(const std::string& description) {
  const size_t begin = description.find_first_not_of(' ');
  if (begin == std::string::npos) return "";
  const size_t space = description.find(' ', begin);
  if (space == std::string::npos) return "";
  const size_t dev = description.find_first_not_of(' ', space);
  if (dev == std::string::npos) return "";
  const size_t end = description.find(' ', dev);
  return description.substr(dev, end == std::string::npos ? std::string::npos : end - dev);
}

const std::string* HostMatch::hcaNameFor(const std::string& worker, const std::string& nic) const {
  auto it = hcas_of.find(worker);
  if (it == hcas_of.end() || it->second.empty()) return nullptr;
  const std::string* pick = &it->second.front();
  for (const auto& d : it->second) {
    if (!nic.empty() && deviceOfNodeDescription(d) == nic) {
      pick = &d;
      break;
    }
  }
  return pick;
}

const Node* HostMatch::hcaFor(const Fabric& f, const std::string& worker,
                              const std::string& nic) const {
  const std::string* name = hcaNameFor(worker, nic);
  return name != nullptr ? f.nodeByName(*name) : nullptr;
}

const Node* HostMatch::hcaFor(const FabricIndex& ix, const std::string& worker,
                              const std::string& nic) const {
  const std::string* name = hcaNameFor(worker, nic);
  return name != nullptr ? ix.nodeNamed(*name) : nullptr;
}

namespace {

std::string shortHostName(const std::string& hostname) {
  return hostname.substr(0, hostname.find('.'));
}

std::string joinCut(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < 10; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > 10) out += " and " + std::to_string(names.size() - 10) + " more";
  return out;
}

}  // namespace

HostMatch matchHosts(const Fabric& f, const std::vector<WorkerHost>& workers,
                     const std::map<std::string, std::string>& mapping) {
  HostMatch m;
  // Host name -> its HCAs (node descriptions), every HCA once.
  std::map<std::string, std::vector<std::string>> by_host;
  std::set<std::string> descriptions;
  for (const Node& h : f.hosts) {
    if (h.kind != NodeKind::kHca) continue;
    if (!descriptions.insert(h.name).second) continue;
    by_host[hostOfNodeDescription(h.name)].push_back(h.name);
  }
  std::set<std::string> used;
  std::set<std::string> known;
  for (const WorkerHost& w : workers) known.insert(w.name);
  for (const auto& [worker, target] : mapping) {
    if (known.count(worker) == 0) {
      m.problems.push_back("fabric_hosts." + worker + ": no worker of that name is registered");
    }
  }
  for (const WorkerHost& w : workers) {
    std::vector<std::string> hcas;
    auto mapped = mapping.find(w.name);
    if (mapped != mapping.end()) {
      if (descriptions.count(mapped->second) != 0) {
        hcas.push_back(mapped->second);
      } else if (auto it = by_host.find(mapped->second); it != by_host.end()) {
        hcas = it->second;
      } else {
        m.problems.push_back("fabric_hosts." + w.name + ": no HCA '" + mapped->second +
                             "' in the fabric (give a node description or host name that "
                             "`gdrmesh fabric show FILE` lists)");
      }
    } else {
      for (const std::string& key : {w.name, w.hostname, shortHostName(w.hostname)}) {
        if (key.empty()) continue;
        if (auto it = by_host.find(key); it != by_host.end()) {
          hcas = it->second;
          break;
        }
      }
    }
    // An HCA belongs to one worker: the first to claim it (workers come in the caller's order).
    hcas.erase(std::remove_if(hcas.begin(), hcas.end(),
                              [&](const std::string& d) { return used.count(d) != 0; }),
               hcas.end());
    if (hcas.empty()) {
      m.workers_without_hca.push_back(w.name);
      continue;
    }
    std::sort(hcas.begin(), hcas.end());
    used.insert(hcas.begin(), hcas.end());
    m.hcas_of[w.name] = std::move(hcas);
  }
  for (const std::string& d : descriptions) {
    if (used.count(d) == 0) m.hcas_without_worker.push_back(d);
  }
  std::sort(m.workers_without_hca.begin(), m.workers_without_hca.end());
  return m;
}

std::string describeMatch(const HostMatch& m, size_t workers) {
  std::string out = "fabric: " + std::to_string(m.hcas_of.size()) + " of " +
                    std::to_string(workers) + " workers matched to HCAs";
  if (!m.workers_without_hca.empty()) {
    out += "; workers without an HCA: " + joinCut(m.workers_without_hca);
  }
  if (!m.hcas_without_worker.empty()) {
    out += "; HCAs without a worker: " + joinCut(m.hcas_without_worker);
  }
  for (const auto& p : m.problems) out += "; " + p;
  return out;
}

}  // namespace gdrmesh::fabric
