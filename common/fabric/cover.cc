#include "common/fabric/cover.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <numeric>
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

// Every path a pair can use, read once: a host's traffic enters the fabric at its leaf, so the
// path from host a to host d is the path from leaf(a) to d. For each leaf (a slot) and
// destination: its directed links, how many of them are not yet covered, and, per link, the
// (slot, destination) paths that cross it, so covering a link updates the counts it bounds.
struct CoverPaths {
  size_t n = 0;                  // endpoints
  std::vector<int> leaf_of;      // endpoint -> its leaf's switch index
  std::vector<int> slot_of;      // switch index -> leaf slot, -1 when no host is cabled to it
  std::vector<uint32_t> offset;  // path (slot * n + d) -> its links [offset[i], offset[i + 1])
  std::vector<int> links;
  std::vector<int> uncovered;      // per path: its links not yet covered
  std::vector<uint32_t> by_link;   // link -> the paths crossing it [by_link[id], by_link[id + 1])
  std::vector<uint32_t> crossing;  // path ids, grouped by link

  size_t path(size_t a, size_t d) const {
    return static_cast<size_t>(slot_of[static_cast<size_t>(leaf_of[a])]) * n + d;
  }
  int length(size_t p) const { return static_cast<int>(offset[p + 1] - offset[p]); }
};

CoverPaths readCoverPaths(const CoverGraph& g) {
  CoverPaths c;
  c.n = g.eps.size();
  c.slot_of.assign(g.sw.size(), -1);
  std::vector<int> slots;
  for (const auto& e : g.eps) {
    c.leaf_of.push_back(e.leaf);
    if (c.slot_of[static_cast<size_t>(e.leaf)] < 0) {
      c.slot_of[static_cast<size_t>(e.leaf)] = static_cast<int>(slots.size());
      slots.push_back(e.leaf);
    }
  }
  // The walk from a leaf: walkLinks from any endpoint on it (the first one found).
  std::vector<size_t> first_on(slots.size(), 0);
  for (size_t i = c.n; i-- > 0;) {
    first_on[static_cast<size_t>(c.slot_of[static_cast<size_t>(g.eps[i].leaf)])] = i;
  }
  c.offset.reserve(slots.size() * c.n + 1);
  c.offset.push_back(0);
  std::array<int, kMaxLinks> buf{};
  for (size_t slot = 0; slot < slots.size(); ++slot) {
    for (size_t d = 0; d < c.n; ++d) {
      const int k = walkLinks(g, first_on[slot], d, &buf);  // -1 (no route): no links
      for (int i = 0; i < k; ++i) c.links.push_back(buf[static_cast<size_t>(i)]);
      c.offset.push_back(static_cast<uint32_t>(c.links.size()));
    }
  }
  const size_t paths = slots.size() * c.n;
  c.uncovered.resize(paths);
  for (size_t p = 0; p < paths; ++p) c.uncovered[p] = c.length(p);
  c.by_link.assign(g.links.size() + 1, 0);
  for (int id : c.links) ++c.by_link[static_cast<size_t>(id) + 1];
  for (size_t id = 0; id < g.links.size(); ++id) c.by_link[id + 1] += c.by_link[id];
  c.crossing.resize(c.links.size());
  std::vector<uint32_t> fill(c.by_link.begin(), c.by_link.end() - 1);
  for (size_t p = 0; p < paths; ++p) {
    for (uint32_t i = c.offset[p]; i < c.offset[p + 1]; ++i) {
      c.crossing[fill[static_cast<size_t>(c.links[i])]++] = static_cast<uint32_t>(p);
    }
  }
  return c;
}

// CoverPlan::source_bound: links that only one leaf's traffic crosses, each to its own
// destinations; the leaf's h hosts send h paths a round, and links whose destination sets are
// pairwise disjoint need a path each: ceil(those links / h) rounds. Greedy as coverTablesBound.
// Sets *why to the leaf that needs the most.
int coverSourceBound(const CoverGraph& g, const CoverPaths& c, std::string* why) {
  if (c.n == 0) return 0;  // no endpoint: no path
  const size_t slots = c.uncovered.size() / c.n;
  std::vector<int> hosts_on(slots, 0);
  std::vector<int> leaf_of_slot(slots, -1);
  for (size_t a = 0; a < c.n; ++a) {
    const int slot = c.slot_of[static_cast<size_t>(c.leaf_of[a])];
    ++hosts_on[static_cast<size_t>(slot)];
    leaf_of_slot[static_cast<size_t>(slot)] = c.leaf_of[a];
  }
  // Per slot, the destination sets of the links only its traffic crosses.
  std::vector<std::vector<std::vector<size_t>>> sets(slots);
  for (size_t id = 0; id + 1 < c.by_link.size(); ++id) {
    const uint32_t b = c.by_link[id], e = c.by_link[id + 1];
    if (b == e) continue;
    const size_t slot = c.crossing[b] / c.n;
    bool one = true;
    std::vector<size_t> dests;
    for (uint32_t i = b; i < e && one; ++i) {
      one = c.crossing[i] / c.n == slot;
      dests.push_back(c.crossing[i] % c.n);
    }
    if (one) sets[slot].push_back(std::move(dests));
  }
  int bound = 0;
  std::vector<char> taken(c.n, 0);
  for (size_t slot = 0; slot < slots; ++slot) {
    auto& ls = sets[slot];
    if (ls.empty()) continue;
    std::sort(ls.begin(), ls.end(),
              [](const auto& x, const auto& y) { return x.size() < y.size(); });
    int disjoint = 0;
    std::vector<size_t> marked;
    for (const auto& ds : ls) {
      if (std::any_of(ds.begin(), ds.end(), [&](size_t d) { return taken[d] != 0; })) continue;
      ++disjoint;
      for (size_t d : ds) {
        taken[d] = 1;
        marked.push_back(d);
      }
    }
    for (size_t d : marked) taken[d] = 0;
    const int h = hosts_on[slot];
    const int need = (disjoint + h - 1) / h;
    if (need > bound) {
      bound = need;
      *why = g.sw[static_cast<size_t>(leaf_of_slot[slot])]->name + ": its " + std::to_string(h) +
             " host" + (h == 1 ? "" : "s") + " alone send over links of their own to " +
             std::to_string(disjoint) + " destination" + (disjoint == 1 ? "" : "s") +
             ", one path a host a round";
    }
  }
  return bound;
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

// CoverPlan::leaf_bound: per leaf, up-links over live hosts.
int coverLeafBound(const CoverGraph& g) {
  std::vector<int> hosts_on(g.sw.size(), 0);
  for (const auto& e : g.eps) ++hosts_on[static_cast<size_t>(e.leaf)];
  int bound = 0;
  for (size_t i = 0; i < g.sw.size(); ++i) {
    if (hosts_on[i] == 0) continue;
    int up = 0;
    for (int id : g.link_id[i]) up += id >= 0 ? 1 : 0;
    bound = std::max(bound, (up + hosts_on[i] - 1) / hosts_on[i]);
  }
  return bound;
}

// The hosts in OpenSM's order (CoverOptions::ca_order), each in its place (kCoverNoHost: a
// DUMMY place, a LID of no host here, or a host already placed). Empty without an order.
constexpr size_t kCoverNoHost = ~size_t{0};
const std::vector<size_t> kCoverNoSeed;

std::vector<size_t> coverSeededOrder(const CoverGraph& g, const std::vector<uint16_t>& ca_order) {
  std::vector<size_t> seeded;
  if (ca_order.empty()) return seeded;
  std::unordered_map<uint16_t, size_t> by_lid;
  for (size_t i = 0; i < g.eps.size(); ++i) by_lid.emplace(g.eps[i].port->lid, i);
  std::vector<char> listed(g.eps.size(), 0);
  for (uint16_t lid : ca_order) {
    auto it = by_lid.find(lid);
    const bool place = it != by_lid.end() && listed[it->second] == 0;
    if (place) listed[it->second] = 1;
    seeded.push_back(place ? it->second : kCoverNoHost);
  }
  return seeded;
}

// Per directed link, the one host whose traffic alone crosses it, or -1 (shared, or none).
std::vector<int> coverOnlyTo(const CoverGraph& g, const CoverPaths& paths) {
  std::vector<int> only_to(g.links.size(), -1);
  for (size_t id = 0; id < g.links.size(); ++id) {
    for (uint32_t i = paths.by_link[id]; i < paths.by_link[id + 1]; ++i) {
      const int d = static_cast<int>(paths.crossing[i] % paths.n);
      if (i == paths.by_link[id]) {
        only_to[id] = d;
      } else if (only_to[id] != d) {
        only_to[id] = -1;
        break;
      }
    }
  }
  return only_to;
}

// The greedy, round by round: which links are covered so far, and the counts that bound what a
// pair can still gain. Unroutable links count as covered from the start: no pair can load them.
class CoverGreedy {
 public:
  CoverGreedy(const CoverGraph& g, CoverPaths& paths, const std::vector<char>& routable)
      : g_(g),
        paths_(paths),
        covered_(g.links.size(), 0),
        only_to_(coverOnlyTo(g, paths)),
        from_slot_(paths.uncovered.size() / paths.n, 0),
        to_host_(paths.n, 0),
        order_(g.eps.size()),
        own_(g.eps.size()),
        busy_(g.eps.size(), 0) {
    for (size_t id = 0; id < g.links.size(); ++id) {
      if (routable[id] != 0) {
        ++left_;
      } else {
        covered_[id] = 1;
      }
    }
    for (size_t p = 0; p < paths.uncovered.size(); ++p) {
      from_slot_[p / paths.n] += paths.uncovered[p];
      to_host_[p % paths.n] += paths.uncovered[p];
    }
  }

  size_t left() const { return left_; }
  const std::vector<char>& covered() const { return covered_; }

  // The next round: the pairs of `seeded` first (OpenSM's order, the first round only), then
  // the greedy. Empty when no free pair adds a link.
  std::vector<CoverPair> nextRound(const std::vector<size_t>& seeded) {
    orderByOwnLinks();
    std::fill(busy_.begin(), busy_.end(), 0);
    round_.clear();
    takeSeededPairs(seeded);
    takeGreedyPairs();
    return std::move(round_);
  }

 private:
  // A link only traffic to one host crosses (after a fault minhop's tables have many) is loaded
  // only by a test with that host, which is in one test a round: each round, the hosts with the
  // most such links left choose their partners first, so no round spends them on other work.
  void orderByOwnLinks() {
    std::fill(own_.begin(), own_.end(), 0);
    for (size_t id = 0; id < g_.links.size(); ++id) {
      if (covered_[id] == 0 && only_to_[id] >= 0) ++own_[static_cast<size_t>(only_to_[id])];
    }
    std::iota(order_.begin(), order_.end(), size_t{0});
    std::stable_sort(order_.begin(), order_.end(),
                     [&](size_t x, size_t y) { return own_[x] > own_[y]; });
  }

  // OpenSM's compute-node order: host i with host i + m/2, a shift under which ftree's routes
  // do not share a link (Zahavi), so on a full tree this one round loads every link. Pairs that
  // would load nothing new are left to the greedy.
  void takeSeededPairs(const std::vector<size_t>& seeded) {
    if (seeded.size() < 2) return;
    const size_t half = seeded.size() / 2;
    for (size_t i = 0; i < half; ++i) {
      const size_t a = seeded[i], b = seeded[i + half];
      if (a == kCoverNoHost || b == kCoverNoHost) continue;
      const int gained = gain(paths_.path(a, b), paths_.path(b, a));
      if (gained > 0) take(a, b, gained);
    }
  }

  // Each free host in turn takes the free partner whose two paths cross the most links not yet
  // covered. A host with no uncovered link out of its leaf or into it has nothing to gain and
  // is not looked at (most hosts, once the first rounds are done).
  void takeGreedyPairs() {
    // The inner loop reads locals, not members: the compiler keeps them in registers.
    const size_t hosts = g_.eps.size();
    const char* busy = busy_.data();
    const int* uncovered = paths_.uncovered.data();
    int longest = longest_;
    for (size_t a : order_) {
      if (left_ == 0) break;
      if (busy[a] != 0) continue;
      const size_t slot_a =
          static_cast<size_t>(paths_.slot_of[static_cast<size_t>(g_.eps[a].leaf)]);
      if (from_slot_[slot_a] == 0 && to_host_[a] == 0) continue;
      size_t best = a;
      int best_gain = 0;
      for (size_t b = 0; b < hosts; ++b) {
        if (b == a || busy[b] != 0) continue;
        const size_t there = paths_.path(a, b);
        const size_t back = paths_.path(b, a);
        longest = std::max(longest, paths_.length(there) + paths_.length(back));
        // The uncovered links of both paths bound the gain: most pairs need no closer look.
        if (uncovered[there] + uncovered[back] <= best_gain) continue;
        const int gained = gain(there, back);
        if (gained > best_gain) {
          best_gain = gained;
          best = b;
          if (gained == longest) break;  // all of the longest path pair is new: cannot do better
        }
      }
      if (best_gain == 0) continue;
      take(a, best, best_gain);
    }
    longest_ = longest;
  }

  // New links a pair would cover: both directions, a link on both paths counted once.
  int gain(size_t there, size_t back) const {
    const int* t0 = paths_.links.data() + paths_.offset[there];
    const int* t1 = paths_.links.data() + paths_.offset[there + 1];
    int gained = 0;
    for (const int* t = t0; t != t1; ++t) gained += covered_[static_cast<size_t>(*t)] == 0 ? 1 : 0;
    for (uint32_t i = paths_.offset[back]; i < paths_.offset[back + 1]; ++i) {
      const int id = paths_.links[i];
      if (covered_[static_cast<size_t>(id)] == 0 && std::find(t0, t1, id) == t1) ++gained;
    }
    return gained;
  }

  // Puts the pair in this round and covers the links of both its paths.
  void take(size_t a, size_t b, int gained) {
    busy_[a] = busy_[b] = 1;
    for (size_t p : {paths_.path(a, b), paths_.path(b, a)}) {
      for (uint32_t i = paths_.offset[p]; i < paths_.offset[p + 1]; ++i) cover(paths_.links[i]);
    }
    const auto& ea = g_.eps[a];
    const auto& eb = g_.eps[b];
    round_.push_back({ea.node->name, eb.node->name, ea.port->number, eb.port->number, ea.port->lid,
                      eb.port->lid, gained});
  }

  // Covers a link: it no longer counts on the paths that cross it. (The arrays are read
  // through locals: the counts are stored as int, which the compiler must assume may alias
  // the uint32_t path ids otherwise.)
  void cover(int id) {
    auto& c = covered_[static_cast<size_t>(id)];
    if (c != 0) return;
    c = 1;
    --left_;
    const uint32_t* crossing = paths_.crossing.data();
    int* uncovered = paths_.uncovered.data();
    int* from_slot = from_slot_.data();
    int* to_host = to_host_.data();
    const size_t n = paths_.n;
    const uint32_t end = paths_.by_link[static_cast<size_t>(id) + 1];
    for (uint32_t i = paths_.by_link[static_cast<size_t>(id)]; i < end; ++i) {
      const uint32_t p = crossing[i];
      --uncovered[p];
      --from_slot[p / n];
      --to_host[p % n];
    }
  }

  const CoverGraph& g_;
  CoverPaths& paths_;
  std::vector<char> covered_;
  size_t left_ = 0;  // routable links not yet covered
  const std::vector<int> only_to_;
  // Uncovered links on the paths out of each leaf slot and into each host.
  std::vector<int> from_slot_;
  std::vector<int> to_host_;
  std::vector<size_t> order_;  // this round's order of the hosts (orderByOwnLinks)
  std::vector<int> own_;       // per host: uncovered links only its traffic crosses
  std::vector<char> busy_;     // per host: already in this round
  std::vector<CoverPair> round_;
  int longest_ = 0;  // the most links a pair's two paths have had: a pair reaching it is taken
};

// CoverPlan::unroutable and ::uncovered, by name.
void listMissedCoverLinks(const Fabric& f, const CoverGraph& g, const std::vector<char>& routable,
                          const std::vector<char>& covered, CoverPlan* plan) {
  for (size_t id = 0; id < g.links.size(); ++id) {
    const auto& [s, port] = g.links[id];
    if (routable[id] == 0) {
      plan->unroutable.push_back(directedLinkName(f, g.sw[static_cast<size_t>(s)]->guid, port));
    } else if (covered[id] == 0) {
      plan->uncovered.push_back(directedLinkName(f, g.sw[static_cast<size_t>(s)]->guid, port));
    }
  }
}

}  // namespace

Result<std::vector<uint16_t>> parseFtreeCaOrder(const std::string& text) {
  std::vector<uint16_t> lids;
  size_t line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    const size_t start = line.find_first_not_of(" \t\r");
    if (start == std::string::npos) continue;  // an empty line
    const size_t stop = line.find_first_of(" \t\r", start);
    const std::string word = line.substr(start, stop == std::string::npos ? stop : stop - start);
    char* rest = nullptr;
    const unsigned long lid = std::strtoul(word.c_str(), &rest, 0);
    // ftree fills the places of a leaf's missing compute nodes with "0xFFFF\tDUMMY": kept, so
    // that every host keeps its place in the order.
    if (word.empty() || rest == nullptr || *rest != '\0' || lid == 0 ||
        (lid > 0xbfff && lid != kCaOrderDummy)) {
      return invalidArgument(
          "line " + std::to_string(line_no) + ": '" + word + "' is not a unicast LID",
          "give the opensm-ftree-ca-order.dump OpenSM's ftree wrote beside its log (\"0x000b "
          "h0769 mlx5_0\" a line)");
    }
    lids.push_back(static_cast<uint16_t>(lid));
  }
  if (lids.empty()) {
    return invalidArgument("no compute node in the CA order",
                           "give the opensm-ftree-ca-order.dump of an ftree-routed subnet");
  }
  return lids;
}

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
  plan.leaf_bound = coverLeafBound(g);
  plan.tables_bound = coverTablesBound(g);
  CoverPaths paths = readCoverPaths(g);
  plan.source_bound = coverSourceBound(g, paths, &plan.source_bound_why);
  plan.lower_bound = std::max({plan.leaf_bound, plan.tables_bound, plan.source_bound});

  const std::vector<char> routable = routableLinks(g);
  CoverGreedy greedy(g, paths, routable);
  plan.routable = greedy.left();
  const std::vector<size_t> seeded = coverSeededOrder(g, opts.ca_order);
  while (greedy.left() > 0 && static_cast<int>(plan.rounds.size()) < opts.max_rounds) {
    std::vector<CoverPair> round = greedy.nextRound(plan.rounds.empty() ? seeded : kCoverNoSeed);
    if (round.empty()) break;  // nothing more can be covered
    plan.rounds.push_back(std::move(round));
  }
  plan.covered = plan.routable - greedy.left();
  listMissedCoverLinks(f, g, routable, greedy.covered(), &plan);
  return plan;
}

}  // namespace gdrmesh::fabric
