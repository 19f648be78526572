#include "common/fabric/cover.h"

#include <algorithm>
#include <array>
#include <unordered_map>

namespace gdrmesh::fabric {
namespace {

// Longest path the walk follows before calling it a loop (a fat tree of 3 levels: 4 links).
constexpr int kMaxLinks = 32;

// The fabric as arrays: switch index, port -> next switch, and a directed-link id per
// inter-switch port.
struct CoverGraph {
  std::vector<const Node*> sw;
  std::unordered_map<uint64_t, int> sw_index;
  std::vector<std::vector<int>> next_sw;   // [switch][port] -> switch index, -1: not a switch
  std::vector<std::vector<int>> link_id;   // [switch][port] -> directed link id, -1: none
  std::vector<std::pair<int, int>> links;  // id -> (switch index, port)
  struct Ep {
    const Node* node;
    const Port* port;
    int leaf;  // switch index the port is cabled to
  };
  std::vector<Ep> eps;
};

CoverGraph buildGraph(const Fabric& f) {
  CoverGraph g;
  for (const auto& s : f.switches) {
    g.sw_index[s.guid] = static_cast<int>(g.sw.size());
    g.sw.push_back(&s);
  }
  g.next_sw.resize(g.sw.size());
  g.link_id.resize(g.sw.size());
  for (size_t i = 0; i < g.sw.size(); ++i) {
    const Node& s = *g.sw[i];
    int max_port = s.num_ports;
    for (const auto& p : s.ports) max_port = std::max(max_port, p.number);
    g.next_sw[i].assign(static_cast<size_t>(max_port) + 1, -1);
    g.link_id[i].assign(static_cast<size_t>(max_port) + 1, -1);
    for (const auto& p : s.ports) {
      if (p.remote_guid == 0 || p.state != "Active") continue;
      auto it = g.sw_index.find(p.remote_guid);
      if (it == g.sw_index.end()) continue;
      g.next_sw[i][static_cast<size_t>(p.number)] = it->second;
      g.link_id[i][static_cast<size_t>(p.number)] = static_cast<int>(g.links.size());
      g.links.emplace_back(static_cast<int>(i), p.number);
    }
  }
  for (const auto& h : f.hosts) {
    for (const auto& p : h.ports) {
      if (p.lid == 0 || p.state != "Active" || p.remote_guid == 0) continue;
      auto it = g.sw_index.find(p.remote_guid);
      if (it == g.sw_index.end()) continue;
      g.eps.push_back({&h, &p, it->second});
    }
  }
  // Leaf by leaf, so the greedy meets the hosts of one leaf together.
  std::stable_sort(
      g.eps.begin(), g.eps.end(),
      [](const CoverGraph::Ep& x, const CoverGraph::Ep& y) { return x.leaf < y.leaf; });
  return g;
}

// The directed inter-switch links from endpoint s to endpoint d, read from the LFTs. Returns
// the count, or -1 when the tables do not lead to d.
int walkLinks(const CoverGraph& g, size_t s, size_t d, std::array<int, kMaxLinks>* out) {
  const uint16_t dlid = g.eps[d].port->lid;
  int cur = g.eps[s].leaf;
  int n = 0;
  for (int step = 0; step < kMaxLinks; ++step) {
    const uint8_t port = g.sw[static_cast<size_t>(cur)]->route(dlid);
    if (port == kNoRoute || port == 0 || port >= g.link_id[static_cast<size_t>(cur)].size()) {
      return -1;
    }
    const int id = g.link_id[static_cast<size_t>(cur)][port];
    if (id < 0) {
      // Out of a port to a host: the destination's, if the tables are right.
      return cur == g.eps[d].leaf ? n : -1;
    }
    (*out)[static_cast<size_t>(n++)] = id;
    cur = g.next_sw[static_cast<size_t>(cur)][port];
  }
  return -1;
}

// Which directed links any host-to-host path crosses: per destination, follow the LFT from
// every switch a host is cabled to; the rest of a path from a switch is the same whoever sent
// the packet, so each switch is walked once per destination.
std::vector<char> routableLinks(const CoverGraph& g) {
  std::vector<char> routable(g.links.size(), 0);
  std::vector<char> leaf(g.sw.size(), 0);
  for (const auto& e : g.eps) leaf[static_cast<size_t>(e.leaf)] = 1;
  std::vector<int> seen(g.sw.size(), -1);
  for (size_t d = 0; d < g.eps.size(); ++d) {
    const uint16_t dlid = g.eps[d].port->lid;
    for (size_t start = 0; start < g.sw.size(); ++start) {
      if (leaf[start] == 0) continue;
      int cur = static_cast<int>(start);
      for (int step = 0; step < kMaxLinks; ++step) {
        if (seen[static_cast<size_t>(cur)] == static_cast<int>(d)) break;
        seen[static_cast<size_t>(cur)] = static_cast<int>(d);
        const uint8_t port = g.sw[static_cast<size_t>(cur)]->route(dlid);
        if (port == kNoRoute || port == 0 || port >= g.link_id[static_cast<size_t>(cur)].size()) {
          break;
        }
        const int id = g.link_id[static_cast<size_t>(cur)][port];
        if (id < 0) break;
        routable[static_cast<size_t>(id)] = 1;
        cur = g.next_sw[static_cast<size_t>(cur)][port];
      }
    }
  }
  return routable;
}

// CoverPlan::tables_bound: per destination, the links only its traffic crosses, each with the
// source leaves whose path to it crosses the link; greedily, smallest source sets first, the
// links whose source sets are pairwise disjoint each need a partner of their own.
int coverTablesBound(const CoverGraph& g) {
  std::vector<int> leaves;
  {
    std::vector<char> is_leaf(g.sw.size(), 0);
    for (const auto& e : g.eps) {
      if (is_leaf[static_cast<size_t>(e.leaf)] == 0) leaves.push_back(e.leaf);
      is_leaf[static_cast<size_t>(e.leaf)] = 1;
    }
  }
  constexpr int kNone = -1, kShared = -2;
  std::vector<int> only(g.links.size(), kNone);  // the one destination, or kShared
  std::vector<std::vector<int>> sources(g.links.size());
  for (size_t d = 0; d < g.eps.size(); ++d) {
    const uint16_t dlid = g.eps[d].port->lid;
    for (int start : leaves) {
      if (start == g.eps[d].leaf) continue;  // its own leaf: no inter-switch link
      int cur = start;
      for (int step = 0; step < kMaxLinks; ++step) {
        const uint8_t port = g.sw[static_cast<size_t>(cur)]->route(dlid);
        if (port == kNoRoute || port == 0 || port >= g.link_id[static_cast<size_t>(cur)].size()) {
          break;
        }
        const int id = g.link_id[static_cast<size_t>(cur)][port];
        if (id < 0) break;
        int& o = only[static_cast<size_t>(id)];
        if (o == kNone) o = static_cast<int>(d);
        if (o != static_cast<int>(d) && o != kShared) {
          o = kShared;
          std::vector<int>().swap(sources[static_cast<size_t>(id)]);
        }
        if (o == static_cast<int>(d)) sources[static_cast<size_t>(id)].push_back(start);
        cur = g.next_sw[static_cast<size_t>(cur)][port];
      }
    }
  }
  std::vector<std::vector<int>> links_of(g.eps.size());
  for (size_t id = 0; id < g.links.size(); ++id) {
    if (only[id] >= 0) links_of[static_cast<size_t>(only[id])].push_back(static_cast<int>(id));
  }
  int bound = 0;
  std::vector<char> taken(g.sw.size(), 0);
  for (auto& ids : links_of) {
    if (ids.empty()) continue;
    std::sort(ids.begin(), ids.end(), [&](int x, int y) {
      return sources[static_cast<size_t>(x)].size() < sources[static_cast<size_t>(y)].size();
    });
    int disjoint = 0;
    std::vector<int> marked;
    for (int id : ids) {
      const auto& src = sources[static_cast<size_t>(id)];
      if (std::any_of(src.begin(), src.end(),
                      [&](int leaf) { return taken[static_cast<size_t>(leaf)] != 0; })) {
        continue;
      }
      ++disjoint;
      for (int leaf : src) {
        taken[static_cast<size_t>(leaf)] = 1;
        marked.push_back(leaf);
      }
    }
    for (int leaf : marked) taken[static_cast<size_t>(leaf)] = 0;
    bound = std::max(bound, disjoint);
  }
  return bound;
}

}  // namespace

std::string directedLinkName(const Fabric& f, uint64_t from_guid, int from_port) {
  const Node* s = f.nodeByGuid(from_guid);
  if (s == nullptr) return guidHex(from_guid) + "[" + std::to_string(from_port) + "]";
  const Port* p = s->port(from_port);
  std::string out = s->name + "[" + std::to_string(from_port) + "] -> ";
  const Node* r = p != nullptr ? f.nodeByGuid(p->remote_guid) : nullptr;
  if (r == nullptr) return out + "?";
  return out + r->name + "[" + std::to_string(p->remote_port) + "]";
}

Result<CoverPlan> planCover(const Fabric& f, const CoverOptions& opts) {
  const CoverGraph g = buildGraph(f);
  CoverPlan plan;
  plan.hosts = g.eps.size();
  plan.directed_links = g.links.size();
  if (g.eps.size() < 2) {
    return failedPrecondition("the fabric has " + std::to_string(g.eps.size()) +
                              " active host ports with a LID: a cover plan needs two or more");
  }
  if (f.routedLftEntries() == 0) {
    return failedPrecondition("the snapshot has no LFTs",
                              "discover without --no-lfts (paths come from the LFTs)");
  }
  // The lower bound: per leaf, up-links over live hosts.
  std::vector<int> hosts_on(g.sw.size(), 0);
  for (const auto& e : g.eps) ++hosts_on[static_cast<size_t>(e.leaf)];
  for (size_t i = 0; i < g.sw.size(); ++i) {
    if (hosts_on[i] == 0) continue;
    int up = 0;
    for (int id : g.link_id[i]) up += id >= 0 ? 1 : 0;
    plan.leaf_bound = std::max(plan.leaf_bound, (up + hosts_on[i] - 1) / hosts_on[i]);
  }
  plan.tables_bound = coverTablesBound(g);
  plan.lower_bound = std::max(plan.leaf_bound, plan.tables_bound);

  const std::vector<char> routable = routableLinks(g);
  // Unroutable links count as done: no pair can load them; they are listed apart.
  std::vector<char> covered(g.links.size(), 0);
  size_t left = 0;
  for (size_t id = 0; id < g.links.size(); ++id) {
    plan.routable += routable[id] != 0 ? 1 : 0;
    if (routable[id] == 0) covered[id] = 1;
  }
  left = plan.routable;
  std::array<int, kMaxLinks> there{};
  std::array<int, kMaxLinks> back{};
  // New links a pair would cover: both directions, a link on both paths counted once.
  auto gain = [&](size_t a, size_t b) {
    const int n1 = walkLinks(g, a, b, &there);
    const int n2 = walkLinks(g, b, a, &back);
    int gained = 0;
    for (int i = 0; i < n1; ++i) gained += covered[static_cast<size_t>(there[i])] == 0 ? 1 : 0;
    for (int i = 0; i < n2; ++i) {
      const int id = back[static_cast<size_t>(i)];
      if (covered[static_cast<size_t>(id)] != 0) continue;
      if (std::find(there.begin(), there.begin() + std::max(n1, 0), id) !=
          there.begin() + std::max(n1, 0)) {
        continue;
      }
      ++gained;
    }
    return std::make_pair(gained, std::max(n1, 0) + std::max(n2, 0));
  };
  int longest = 0;  // the most links a pair's two paths have had: a pair reaching it is taken
  while (left > 0 && static_cast<int>(plan.rounds.size()) < opts.max_rounds) {
    std::vector<char> busy(g.eps.size(), 0);
    std::vector<CoverPair> round;
    for (size_t a = 0; a < g.eps.size() && left > 0; ++a) {
      if (busy[a] != 0) continue;
      size_t best = a;
      int best_gain = 0;
      for (size_t b = 0; b < g.eps.size(); ++b) {
        if (b == a || busy[b] != 0) continue;
        auto [gained, length] = gain(a, b);
        longest = std::max(longest, length);
        if (gained > best_gain) {
          best_gain = gained;
          best = b;
          if (gained == longest) break;  // all of the longest path pair is new: cannot do better
        }
      }
      if (best_gain == 0) continue;
      busy[a] = busy[best] = 1;
      // Mark both paths covered.
      const int n1 = walkLinks(g, a, best, &there);
      const int n2 = walkLinks(g, best, a, &back);
      for (int i = 0; i < n1; ++i) {
        auto& c = covered[static_cast<size_t>(there[static_cast<size_t>(i)])];
        left -= c == 0 ? 1 : 0;
        c = 1;
      }
      for (int i = 0; i < n2; ++i) {
        auto& c = covered[static_cast<size_t>(back[static_cast<size_t>(i)])];
        left -= c == 0 ? 1 : 0;
        c = 1;
      }
      const auto& ea = g.eps[a];
      const auto& eb = g.eps[best];
      round.push_back({ea.node->name, eb.node->name, ea.port->number, eb.port->number, ea.port->lid,
                       eb.port->lid, best_gain});
    }
    if (round.empty()) break;  // nothing more can be covered
    plan.rounds.push_back(std::move(round));
  }
  plan.covered = plan.routable - left;
  for (size_t id = 0; id < g.links.size(); ++id) {
    const auto& [s, port] = g.links[id];
    if (routable[id] == 0) {
      plan.unroutable.push_back(directedLinkName(f, g.sw[static_cast<size_t>(s)]->guid, port));
    } else if (covered[id] == 0) {
      plan.uncovered.push_back(directedLinkName(f, g.sw[static_cast<size_t>(s)]->guid, port));
    }
  }
  return plan;
}

}  // namespace gdrmesh::fabric
