#include "common/fabric/bisection.h"

#include <algorithm>
#include <deque>
#include <unordered_map>

namespace gdrmesh::fabric {
namespace {

struct BisectHost {
  const Node* node;
  const Port* port;
  size_t leaf;  // switch index
};

// The fabric as the plan needs it: active switch-to-switch cables (neighbours by switch index)
// and the host ports that can take part, each with its leaf.
struct BisectGraph {
  std::vector<std::vector<std::pair<size_t, const Port*>>> next;
  std::vector<BisectHost> hosts;
};

// The levels: rank[s] per switch (-1: no host below it reaches it), and the top rank.
struct BisectRanks {
  std::vector<int> rank;
  int top = 0;
};

double linkGbps(const Port& p) {
  return static_cast<double>(p.width) * laneGbps(p.speed);
}

BisectGraph buildBisectGraph(const Fabric& f) {
  const size_t n_sw = f.switches.size();
  std::unordered_map<uint64_t, size_t> sw_index;
  for (size_t i = 0; i < n_sw; ++i) sw_index.emplace(f.switches[i].guid, i);
  BisectGraph g;
  g.next.resize(n_sw);
  for (size_t i = 0; i < n_sw; ++i) {
    for (const Port& p : f.switches[i].ports) {
      if (p.remote_guid == 0 || p.state != "Active") continue;
      auto it = sw_index.find(p.remote_guid);
      if (it != sw_index.end()) g.next[i].emplace_back(it->second, &p);
    }
  }
  for (const Node& h : f.hosts) {
    for (const Port& p : h.ports) {
      if (p.lid == 0 || p.state != "Active" || p.remote_guid == 0) continue;
      auto it = sw_index.find(p.remote_guid);
      if (it != sw_index.end()) g.hosts.push_back({&h, &p, it->second});
    }
  }
  return g;
}

// Ranks: breadth first from every leaf at once.
BisectRanks rankBisectSwitches(const BisectGraph& g) {
  BisectRanks r;
  r.rank.assign(g.next.size(), -1);
  std::deque<size_t> queue;
  for (const BisectHost& h : g.hosts) {
    if (r.rank[h.leaf] < 0) {
      r.rank[h.leaf] = 0;
      queue.push_back(h.leaf);
    }
  }
  while (!queue.empty()) {
    const size_t s = queue.front();
    queue.pop_front();
    r.top = std::max(r.top, r.rank[s]);
    for (const auto& [t, port] : g.next[s]) {
      if (r.rank[t] < 0) {
        r.rank[t] = r.rank[s] + 1;
        queue.push_back(t);
      }
    }
  }
  return r;
}

// Pods: connected groups of the switches below the top level, numbered in leaf order of the
// hosts (the first leaf's pod is pod 0). pod[s] per switch, -1 for the top level and switches
// no host reaches.
std::vector<int> findBisectPods(const BisectGraph& g, const BisectRanks& r, int* pods) {
  std::vector<int> pod(g.next.size(), -1);
  std::deque<size_t> queue;
  *pods = 0;
  for (const BisectHost& h : g.hosts) {
    if (pod[h.leaf] >= 0) continue;
    pod[h.leaf] = *pods;
    queue.assign(1, h.leaf);
    while (!queue.empty()) {
      const size_t s = queue.front();
      queue.pop_front();
      for (const auto& [t, port] : g.next[s]) {
        if (r.rank[t] == r.top || r.rank[t] < 0 || pod[t] >= 0) continue;
        pod[t] = *pods;
        queue.push_back(t);
      }
    }
    ++*pods;
  }
  return pod;
}

// The halves: hosts by pod, stably (their order in the snapshot within a pod); half A the first
// pods, as many as make the smaller half largest (the first such count). Fills the plan's
// halves, pairs and hosts sitting out; sets plan->pods_a.
void splitBisectHalves(std::vector<BisectHost> hosts, const std::vector<int>& pod, int pods,
                       BisectionPlan* plan) {
  std::stable_sort(hosts.begin(), hosts.end(), [&](const BisectHost& x, const BisectHost& y) {
    return pod[x.leaf] < pod[y.leaf];
  });
  std::vector<size_t> per_pod(static_cast<size_t>(pods), 0);
  for (const BisectHost& h : hosts) ++per_pod[static_cast<size_t>(pod[h.leaf])];
  size_t in_a = 0;
  int pods_a = 0;
  size_t sum = 0;
  size_t best = 0;
  for (int k = 1; k < pods; ++k) {
    sum += per_pod[static_cast<size_t>(k - 1)];
    const size_t smaller = std::min(sum, hosts.size() - sum);
    if (smaller > best) {
      best = smaller;
      pods_a = k;
      in_a = sum;
    }
  }
  plan->pods_a = static_cast<size_t>(pods_a);
  const std::vector<BisectHost> a(hosts.begin(), hosts.begin() + static_cast<std::ptrdiff_t>(in_a));
  const std::vector<BisectHost> b(hosts.begin() + static_cast<std::ptrdiff_t>(in_a), hosts.end());
  for (const BisectHost& h : a) plan->half_a.push_back(h.node->name);
  for (const BisectHost& h : b) plan->half_b.push_back(h.node->name);
  const size_t n_pairs = std::min(a.size(), b.size());
  for (size_t i = 0; i < n_pairs; ++i) {
    plan->pairs.push_back({a[i].node->name, b[i].node->name, a[i].port->number, b[i].port->number,
                           a[i].port->lid, b[i].port->lid, 0});
  }
  const std::vector<BisectHost>& larger = a.size() > b.size() ? a : b;
  for (size_t i = n_pairs; i < larger.size(); ++i) {
    plan->sitting_out.push_back(larger[i].node->name);
  }
}

// The cut: cables between a pod and the top level, by the pod's half; and the bound they give.
void measureBisectCut(const BisectGraph& g, const BisectRanks& r, const std::vector<int>& pod,
                      BisectionPlan* plan) {
  const int pods_a = static_cast<int>(plan->pods_a);
  for (size_t s = 0; s < g.next.size(); ++s) {
    if (r.rank[s] == r.top || pod[s] < 0) continue;
    for (const auto& [t, port] : g.next[s]) {
      if (r.rank[t] != r.top) continue;
      if (pod[s] < pods_a) {
        ++plan->top_links_a;
        plan->top_gbps_a += linkGbps(*port);
      } else {
        ++plan->top_links_b;
        plan->top_gbps_b += linkGbps(*port);
      }
    }
  }
  plan->bound_gbps = std::min(plan->top_gbps_a, plan->top_gbps_b);
}

}  // namespace

Result<BisectionPlan> planBisection(const Fabric& f) {
  const BisectGraph g = buildBisectGraph(f);
  BisectionPlan plan;
  plan.hosts = g.hosts.size();
  if (g.hosts.size() < 2) {
    return failedPrecondition("the fabric has " + std::to_string(g.hosts.size()) +
                              " active host ports with a LID: a bisection needs two or more");
  }
  const BisectRanks r = rankBisectSwitches(g);
  plan.levels = r.top + 1;
  if (r.top == 0) {
    return failedPrecondition(
        "the fabric has one switch level: no pair's traffic crosses a higher level",
        "bisection needs a tree of two or more levels; use --pattern all-pairs");
  }
  for (size_t i = 0; i < f.switches.size(); ++i) {
    if (r.rank[i] == r.top) plan.top.push_back(f.switches[i].name);
  }
  int pods = 0;
  const std::vector<int> pod = findBisectPods(g, r, &pods);
  plan.pods = static_cast<size_t>(pods);
  if (pods < 2) {
    return failedPrecondition("every host is below one group of switches under the top level",
                              "bisection needs hosts in two or more pods (leaves of a two-level "
                              "tree); use --pattern all-pairs");
  }
  splitBisectHalves(g.hosts, pod, pods, &plan);
  measureBisectCut(g, r, pod, &plan);
  return plan;
}

}  // namespace gdrmesh::fabric
