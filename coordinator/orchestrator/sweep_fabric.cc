#include "coordinator/orchestrator/sweep_fabric.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <unordered_map>
#include <utility>

#include "common/fabric/bisection.h"
#include "common/fabric/cover.h"

namespace gdrmesh {

std::vector<DirectedLink> interSwitchLinks(const std::vector<fabric::Hop>& hops) {
  std::vector<DirectedLink> out;
  if (hops.size() < 2) return out;
  out.reserve(hops.size() - 1);
  // Every hop but the last leaves its switch towards the next switch of the path.
  for (size_t i = 0; i + 1 < hops.size(); ++i) {
    out.push_back({hops[i].switch_guid, hops[i].out_port});
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<DirectedLink> dataLinks(const JudgeRow& row, const RowPaths& paths, size_t i) {
  if (!paths.known[i]) return {};
  return row.op == Op::kRead ? paths.reverse_links[i] : paths.forward_links[i];
}

SweepFabric::SweepFabric(fabric::Fabric fabric, std::map<std::string, std::string> hosts,
                         std::string source)
    : fabric_(std::move(fabric)), hosts_(std::move(hosts)), source_(std::move(source)) {
  for (const fabric::Node& s : fabric_.switches) {
    for (const fabric::Port& p : s.ports) {
      const fabric::Node* r = p.remote_guid != 0 ? index_.node(p.remote_guid) : nullptr;
      if (r != nullptr && r->kind == fabric::NodeKind::kSwitch) {
        inter_switch_.push_back({s.guid, p.number});
      }
    }
  }
  std::sort(inter_switch_.begin(), inter_switch_.end());
}

fabric::HostMatch SweepFabric::match(const std::vector<WorkerStatus>& workers) const {
  std::vector<fabric::WorkerHost> hosts;
  hosts.reserve(workers.size());
  for (const WorkerStatus& w : workers) hosts.push_back({w.name, w.inventory.hostname});
  std::sort(
      hosts.begin(), hosts.end(),
      [](const fabric::WorkerHost& a, const fabric::WorkerHost& b) { return a.name < b.name; });
  return fabric::matchHosts(fabric_, hosts, hosts_);
}

fabric::Endpoint hcaTestEndpoint(const fabric::Node* hca) {
  if (hca == nullptr) return {};
  for (const fabric::Port& p : hca->ports) {
    if (p.state == "Active") return {hca, &p};
  }
  return {hca, hca->ports.size() == 1 ? hca->ports.data() : nullptr};
}

namespace {

// Rows of the same (initiator worker, nic, target worker, nic) share their paths: each row's
// first row of its pair (sorted keys, stable: the first in row order); -1 for a row left out by
// `only` or whose workers are not both matched.
std::vector<int64_t> firstRowsOfPairs(const JudgeRows& rows, const fabric::HostMatch& match,
                                      const std::vector<bool>* only) {
  // Whether a worker (by string id) is matched, looked up once each.
  std::vector<signed char> matched(rows.strings().size(), -1);
  auto is_matched = [&](uint32_t worker) {
    signed char& m = matched[worker];
    if (m < 0) m = match.matched(rows.str(worker)) ? 1 : 0;
    return m == 1;
  };
  struct PairKey {
    uint64_t initiator, target;  // (worker id << 32) | nic id
    uint32_t row;
  };
  std::vector<PairKey> keys;
  keys.reserve(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const JudgeRow& r = rows[i];
    if (only != nullptr && !(*only)[i]) continue;
    if (!is_matched(r.initiator.worker) || !is_matched(r.target.worker)) continue;
    keys.push_back({(static_cast<uint64_t>(r.initiator.worker) << 32) | r.initiator.nic,
                    (static_cast<uint64_t>(r.target.worker) << 32) | r.target.nic,
                    static_cast<uint32_t>(i)});
  }
  std::stable_sort(keys.begin(), keys.end(), [](const PairKey& x, const PairKey& y) {
    return x.initiator != y.initiator ? x.initiator < y.initiator : x.target < y.target;
  });
  std::vector<int64_t> first_of(rows.size(), -1);
  for (size_t k = 0; k < keys.size(); ++k) {
    const bool same =
        k > 0 && keys[k].initiator == keys[k - 1].initiator && keys[k].target == keys[k - 1].target;
    first_of[keys[k].row] = same ? first_of[keys[k - 1].row] : keys[k].row;
  }
  return first_of;
}

// The HCA port a test on (worker, nic) (string ids of the rows) is traced from, looked up once
// each.
class PathEndpointCache {
 public:
  PathEndpointCache(const fabric::FabricIndex& index, const fabric::HostMatch& match,
                    const JudgeRows& rows)
      : index_(index), match_(match), rows_(rows) {}

  fabric::Endpoint of(uint32_t worker, uint32_t nic) {
    const uint64_t key = (static_cast<uint64_t>(worker) << 32) | nic;
    auto it = endpoints_.find(key);
    if (it == endpoints_.end()) {
      const fabric::Node* hca = match_.hcaFor(index_, rows_.str(worker), rows_.str(nic));
      it = endpoints_.emplace(key, hcaTestEndpoint(hca)).first;
    }
    return it->second;
  }

 private:
  const fabric::FabricIndex& index_;
  const fabric::HostMatch& match_;
  const JudgeRows& rows_;
  std::unordered_map<uint64_t, fabric::Endpoint> endpoints_;
};

// Traces row `i`'s paths, both directions, into `out`; false when either fails (the first such
// failure is out->first_error).
bool traceRowPaths(const fabric::FabricIndex& index, const JudgeRows& rows, size_t i,
                   PathEndpointCache& endpoints, RowPaths* out) {
  const JudgeRow& r = rows[i];
  const fabric::Endpoint a = endpoints.of(r.initiator.worker, r.initiator.nic);
  const fabric::Endpoint b = endpoints.of(r.target.worker, r.target.nic);
  auto fwd = fabric::tracePath(index, a, b);
  auto rev = fwd.ok() ? fabric::tracePath(index, b, a) : fwd;
  if (!fwd.ok() || !rev.ok()) {
    if (out->first_error.empty()) {
      out->first_error = rows.str(r.initiator.worker) + " -> " + rows.str(r.target.worker) + ": " +
                         (fwd.ok() ? rev.status() : fwd.status()).message();
    }
    return false;
  }
  out->forward[i] = std::move(*fwd);
  out->reverse[i] = std::move(*rev);
  out->forward_links[i] = interSwitchLinks(out->forward[i]);
  out->reverse_links[i] = interSwitchLinks(out->reverse[i]);
  return true;
}

}  // namespace

RowPaths SweepFabric::paths(const JudgeRows& rows, const fabric::HostMatch& match,
                            const std::vector<bool>* only) const {
  RowPaths out;
  out.known.assign(rows.size(), false);
  out.forward.resize(rows.size());
  out.reverse.resize(rows.size());
  out.forward_links.resize(rows.size());
  out.reverse_links.resize(rows.size());
  const std::vector<int64_t> first_of = firstRowsOfPairs(rows, match, only);
  PathEndpointCache endpoints(index_, match, rows);
  std::vector<char> traced(rows.size(), 0);  // by first row: both directions traced
  for (size_t i = 0; i < rows.size(); ++i) {
    if (first_of[i] < 0) continue;
    const auto first = static_cast<size_t>(first_of[i]);
    if (first == i) {
      traced[i] = traceRowPaths(index_, rows, i, endpoints, &out) ? 1 : 0;
    } else if (traced[first] != 0) {  // the paths of its pair's first row
      out.forward[i] = out.forward[first];
      out.reverse[i] = out.reverse[first];
      out.forward_links[i] = out.forward_links[first];
      out.reverse_links[i] = out.reverse_links[first];
    }
    if (traced[first] == 0) {
      ++out.untraced;
      continue;
    }
    out.known[i] = true;
  }
  return out;
}

std::vector<PathHopRecord> SweepFabric::hopRecords(const JudgeRows& rows, const RowPaths& paths,
                                                   const std::string& sweep_id) const {
  std::vector<PathHopRecord> out;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!paths.known[i]) continue;
    const std::string test_id(rows.testId(rows[i]));
    for (const auto& [dir, hops] : {std::make_pair("forward", &paths.forward[i]),
                                    std::make_pair("reverse", &paths.reverse[i])}) {
      for (size_t h = 0; h < hops->size(); ++h) {
        const fabric::Hop& hop = (*hops)[h];
        PathHopRecord rec;
        rec.test_id = test_id;
        rec.sweep_id = sweep_id;
        rec.direction = dir;
        rec.hop = static_cast<int>(h);
        rec.switch_name = hop.switch_name;
        rec.switch_guid = hop.switch_guid;
        rec.in_port = hop.in_port;
        rec.out_port = hop.out_port;
        rec.fabric = source_;
        out.push_back(std::move(rec));
      }
    }
  }
  return out;
}

FabricCoverage SweepFabric::coverage(const JudgeRows& rows, const RowPaths& paths) const {
  FabricCoverage c;
  c.directed_links = inter_switch_.size();
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!paths.known[i] || rows[i].retest) continue;
    ++c.tests_traced;
    std::set<DirectedLink> crossed(paths.forward_links[i].begin(), paths.forward_links[i].end());
    crossed.insert(paths.reverse_links[i].begin(), paths.reverse_links[i].end());
    for (const DirectedLink& l : crossed) ++c.tests_on[l];
  }
  for (const DirectedLink& l : inter_switch_) {
    if (c.tests_on.count(l) == 0) c.never.push_back(l);
  }
  return c;
}

std::vector<std::string> SweepFabric::coverageNotes(const FabricCoverage& c,
                                                    size_t max_listed) const {
  std::vector<std::string> out;
  const size_t used = c.directed_links - c.never.size();
  std::string line =
      "fabric coverage: " + std::to_string(used) + " of " + std::to_string(c.directed_links) +
      " directed inter-switch links carried tests (" + std::to_string(c.tests_traced) +
      " tests traced through the LFTs of " + source_ + ")";
  if (!c.tests_on.empty()) {
    auto [lo, hi] =
        std::minmax_element(c.tests_on.begin(), c.tests_on.end(),
                            [](const auto& a, const auto& b) { return a.second < b.second; });
    line += "; busiest " + linkName(hi->first) + " (" + std::to_string(hi->second) +
            " tests), least used " + linkName(lo->first) + " (" + std::to_string(lo->second) + ")";
  }
  out.push_back(std::move(line));
  if (!c.never.empty()) {
    std::string never = "fabric coverage: never exercised: ";
    for (size_t i = 0; i < c.never.size() && i < max_listed; ++i) {
      never += (i ? ", " : "") + linkName(c.never[i]);
    }
    if (c.never.size() > max_listed) {
      never += " and " + std::to_string(c.never.size() - max_listed) + " more";
    }
    out.push_back(std::move(never));
  }
  return out;
}

namespace {

// Plan rounds of HCA pairs -> spec->cover_rounds as the workers matched to the HCAs and their
// NICs; returns the pairs left out (an HCA without an online worker).
size_t fabricRoundsAsWorkers(const std::vector<std::vector<fabric::CoverPair>>& plan_rounds,
                             const fabric::HostMatch& m, SweepSpec* spec) {
  std::map<std::string, std::string> worker_of;  // HCA -> worker
  for (const auto& [w, hcas] : m.hcas_of) {
    for (const auto& h : hcas) worker_of[h] = w;
  }
  spec->cover_rounds.clear();
  size_t missing = 0;
  for (const auto& round : plan_rounds) {
    std::vector<std::pair<EndpointSelector, EndpointSelector>> pairs;
    for (const fabric::CoverPair& p : round) {
      auto a = worker_of.find(p.a);
      auto b = worker_of.find(p.b);
      if (a == worker_of.end() || b == worker_of.end()) {
        ++missing;
        continue;
      }
      EndpointSelector ea, eb;
      ea.worker = a->second;
      ea.device = fabric::deviceOfNodeDescription(p.a);
      eb.worker = b->second;
      eb.device = fabric::deviceOfNodeDescription(p.b);
      pairs.emplace_back(std::move(ea), std::move(eb));
    }
    spec->cover_rounds.push_back(std::move(pairs));
  }
  return missing;
}

std::vector<WorkerStatus> fabricOnlineWorkers(const std::vector<WorkerStatus>& workers) {
  std::vector<WorkerStatus> online;
  for (const WorkerStatus& w : workers) {
    if (w.state == "online") online.push_back(w);
  }
  return online;
}

}  // namespace

Status SweepFabric::coverRounds(const std::vector<WorkerStatus>& workers, SweepSpec* spec,
                                std::vector<std::string>* notes,
                                const std::vector<uint16_t>& ca_order,
                                const std::string& ca_order_file) const {
  fabric::CoverOptions o;
  o.ca_order = ca_order;
  auto plan = fabric::planCover(fabric_, o);
  if (!plan.ok()) return plan.status().withContext("pattern cover: " + source_);
  const std::vector<WorkerStatus> online = fabricOnlineWorkers(workers);
  const fabric::HostMatch m = match(online);
  const size_t missing = fabricRoundsAsWorkers(plan->rounds, m, spec);
  notes->push_back(
      "cover: " + std::to_string(plan->rounds.size()) + " rounds (lower bound " +
      std::to_string(plan->lower_bound) + ") load " + std::to_string(plan->covered) + " of " +
      std::to_string(plan->routable) + " routable directed inter-switch links of " + source_ +
      " (" + std::to_string(plan->directed_links) + " in all)" +
      (ca_order.empty()
           ? std::string()
           : ", the first round seeded with OpenSM's compute-node order " + ca_order_file));
  if (missing > 0) {
    notes->push_back("cover: " + std::to_string(missing) +
                     " planned pairs left out: an HCA of theirs has no online worker (" +
                     fabric::describeMatch(m, online.size()) + ")");
  }
  return Status();
}

Status SweepFabric::bisectionRounds(const std::vector<WorkerStatus>& workers, SweepSpec* spec,
                                    std::vector<std::string>* notes, double* bound_gbps) const {
  auto plan = fabric::planBisection(fabric_);
  if (!plan.ok()) return plan.status().withContext("pattern bisection: " + source_);
  const std::vector<WorkerStatus> online = fabricOnlineWorkers(workers);
  const fabric::HostMatch m = match(online);
  const size_t missing = fabricRoundsAsWorkers({plan->pairs}, m, spec);
  *bound_gbps = plan->bound_gbps;
  char line[512];
  std::snprintf(line, sizeof line,
                "bisection: %zu pairs across the top level of %s (%zu top switches, %d levels): "
                "%zu hosts in %zu pods to %zu hosts in %zu; bisection bandwidth %.1f Gb/s per "
                "direction (the top-level links' signalling rates: %zu links %.1f Gb/s, %zu "
                "links %.1f Gb/s)",
                plan->pairs.size(), source_.c_str(), plan->top.size(), plan->levels,
                plan->half_a.size(), plan->pods_a, plan->half_b.size(), plan->pods - plan->pods_a,
                plan->bound_gbps, plan->top_links_a, plan->top_gbps_a, plan->top_links_b,
                plan->top_gbps_b);
  notes->push_back(line);
  if (!plan->sitting_out.empty()) {
    notes->push_back("bisection: " + std::to_string(plan->sitting_out.size()) +
                     " hosts of the larger half have no partner and sit out (first: " +
                     plan->sitting_out.front() + ")");
  }
  if (missing > 0) {
    notes->push_back("bisection: " + std::to_string(missing) +
                     " planned pairs left out: an HCA of theirs has no online worker (" +
                     fabric::describeMatch(m, online.size()) + ")");
  }
  return Status();
}

std::string SweepFabric::bisectionNote(int round, size_t tests, double measured_gbps,
                                       double bound_gbps, bool bidirectional) {
  const double bound = bidirectional ? 2 * bound_gbps : bound_gbps;
  char line[300];
  std::snprintf(line, sizeof line,
                "bisection: round %d: %zu tests across the cut measured %.1f Gb/s in all, %.1f %% "
                "of the fabric's bisection bandwidth %.1f Gb/s%s",
                round + 1, tests, measured_gbps, bound > 0 ? 100.0 * measured_gbps / bound : 0.0,
                bound, bidirectional ? " (both directions)" : " (one direction)");
  return line;
}

std::string SweepFabric::linkName(const DirectedLink& l) const {
  return fabric::directedLinkName(fabric_, l.guid, l.port);
}

bool SweepFabric::interSwitch(const DirectedLink& l) const {
  return std::binary_search(inter_switch_.begin(), inter_switch_.end(), l);
}

}  // namespace gdrmesh
