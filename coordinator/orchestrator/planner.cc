#include "coordinator/orchestrator/planner.h"

#include <algorithm>
#include <random>
#include <set>
#include <utility>

namespace gdrmesh {
namespace {

// One pair slot before sizes are applied: indices into Slots::sides and Slots::rails, so that
// half a million slots cost no string copies until the tests are written out.
struct Slot {
  int round = 0;
  uint32_t initiator = 0;
  uint32_t target = 0;
  int32_t rail = -1;
  bool bidirectional = false;
};
struct Slots {
  std::vector<EndpointSelector> sides;
  std::vector<std::string> rails;
  std::vector<Slot> slots;
  uint32_t side(EndpointSelector s) {
    sides.push_back(std::move(s));
    return static_cast<uint32_t>(sides.size() - 1);
  }
  void add(int round, uint32_t a, uint32_t b, int32_t rail = -1) {
    slots.push_back(Slot{round, a, b, rail, false});
  }
};

std::string hostOf(const std::string& resource) {
  return resource.substr(0, resource.rfind('/'));
}

std::string joinNames(const std::vector<std::string>& names, size_t limit = 8) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < limit; ++i) {
    if (i) out += ", ";
    out += names[i];
  }
  if (names.size() > limit) out += ", ... (" + std::to_string(names.size()) + " in all)";
  return out;
}

std::string plural(size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

EndpointSelector sideFrom(const EndpointSelector& tmpl, const std::string& worker,
                          const std::string& device) {
  EndpointSelector s = tmpl;
  s.worker = worker;
  s.device = device;
  return s;
}

// Hosts chosen for the sweep, in name order, with the counts an error message needs.
struct Selection {
  std::vector<const WorkerStatus*> hosts;
  std::map<std::string, const WorkerStatus*> by_name;  // every worker
  std::map<std::string, std::string> left_out;         // worker -> why
};

bool labelsMatch(const WorkerStatus& w, const std::map<std::string, std::string>& select) {
  for (const auto& [key, value] : select) {
    auto it = w.labels.find(key);
    if (it == w.labels.end() || it->second != value) return false;
  }
  return true;
}

Result<Selection> selectHosts(const SweepSpec& spec, const std::vector<WorkerStatus>& workers,
                              std::vector<std::string>& notes) {
  Selection sel;
  for (const auto& w : workers) sel.by_name[w.name] = &w;
  std::vector<std::string> known;
  for (const auto& [name, w] : sel.by_name) known.push_back(name);
  for (const auto& name : spec.hosts) {
    if (!sel.by_name.count(name)) {
      return notFound("hosts: no worker named '" + name + "'",
                      "known workers: " + (known.empty() ? "none" : joinNames(known)) +
                          " (`gdrmesh workers` lists them)");
    }
  }
  for (const auto& name : spec.exclude) {
    if (!sel.by_name.count(name))
      notes.push_back("exclude: no worker named " + name + " (ignored)");
  }
  const std::set<std::string> wanted(spec.hosts.begin(), spec.hosts.end());
  const std::set<std::string> excluded(spec.exclude.begin(), spec.exclude.end());
  for (const auto& [name, w] : sel.by_name) {
    if (!wanted.empty() && !wanted.count(name)) {
      sel.left_out[name] = "not in hosts";
    } else if (excluded.count(name)) {
      sel.left_out[name] = "excluded";
    } else if (!w->online()) {
      sel.left_out[name] = "offline";
      if (!wanted.empty()) notes.push_back(name + " is offline: left out of the sweep");
    } else if (!labelsMatch(*w, spec.select)) {
      sel.left_out[name] = "does not match select";
    } else {
      sel.hosts.push_back(w);
    }
  }
  return sel;
}

Status tooFewHosts(const SweepSpec& spec, const Selection& sel, size_t need) {
  std::map<std::string, int> why;
  for (const auto& [name, reason] : sel.left_out) ++why[reason];
  std::string detail;
  for (const auto& [reason, n] : why) detail += ", " + std::to_string(n) + " " + reason;
  std::vector<std::string> chosen;
  for (const auto* w : sel.hosts) chosen.push_back(w->name);
  return failedPrecondition(std::string(toString(spec.pattern)) + " needs at least " +
                                std::to_string(need) + (need == 1 ? " host" : " hosts") + "; " +
                                std::to_string(sel.hosts.size()) + " selected" +
                                (chosen.empty() ? "" : " (" + joinNames(chosen) + ")") + " of " +
                                plural(sel.by_name.size(), "worker", "workers") + detail,
                            "start workers on more hosts, or widen hosts/exclude/select");
}

std::vector<const Nic*> sortedNics(const WorkerStatus& w) {
  std::vector<const Nic*> nics;
  for (const auto& n : w.inventory.nics) nics.push_back(&n);
  std::sort(nics.begin(), nics.end(), [](const Nic* a, const Nic* b) { return a->name < b->name; });
  return nics;
}

// The lowest-index GPU whose nearest NIC is `nic`, or -1.
int gpuNearest(const WorkerStatus& w, const std::string& nic) {
  int best = -1;
  for (const auto& g : w.inventory.gpus) {
    if (g.nearest_nic == nic && (best < 0 || g.index < best)) best = g.index;
  }
  return best;
}

// Round-robin tournament (circle method) over n players: n-1 rounds for even n, n for odd n
// (player r sits out round r). emit(round, a, b) once per unordered pair.
template <typename Emit>
int circleRounds(int n, Emit&& emit) {
  if (n < 2) return 0;
  const int m = (n % 2) ? n + 1 : n;  // with a phantom player for odd n
  const int rounds = m - 1;
  for (int r = 0; r < rounds; ++r) {
    const int fixed = m - 1;
    if (fixed < n) {
      if (r % 2 == 0) {
        emit(r, r, fixed);
      } else {
        emit(r, fixed, r);
      }
    }
    for (int k = 1; k < m / 2; ++k) {
      const int a = (r + k) % rounds;
      const int b = (r - k + rounds) % rounds;
      emit(r, a, b);
    }
  }
  return rounds;
}

// Applies direction to forward slots that span `rounds` rounds.
void applyDirection(SweepDirection direction, int rounds, std::vector<Slot>& slots) {
  if (direction == SweepDirection::kBidir) {
    for (auto& s : slots) s.bidirectional = true;
  } else if (direction == SweepDirection::kBoth) {
    const size_t n = slots.size();
    slots.reserve(2 * n);
    for (size_t i = 0; i < n; ++i) {
      // Each side keeps its memory, GPU and registration: with initiator cuda and target host,
      // the reverse test writes into the GPU instead of reading from it.
      Slot rev = slots[i];
      std::swap(rev.initiator, rev.target);
      rev.round += rounds;
      slots.push_back(rev);
    }
  }
}

Status planAllPairs(const SweepSpec& spec, const Selection& sel, Slots& out) {
  const int n = static_cast<int>(sel.hosts.size());
  if (n < 2) return tooFewHosts(spec, sel, 2);
  // sides[i]: host i as initiator; sides[n + i]: host i as target.
  for (const auto* w : sel.hosts) out.side(sideFrom(spec.test.initiator, w->name, ""));
  for (const auto* w : sel.hosts) out.side(sideFrom(spec.test.target, w->name, ""));
  const size_t pairs = static_cast<size_t>(n) * static_cast<size_t>(n - 1) / 2;
  out.slots.reserve(spec.direction == SweepDirection::kBoth ? 2 * pairs : pairs);
  const uint32_t un = static_cast<uint32_t>(n);
  const int rounds = circleRounds(n, [&](int r, int a, int b) {
    out.add(r, static_cast<uint32_t>(a), un + static_cast<uint32_t>(b));
  });
  applyDirection(spec.direction, rounds, out.slots);
  return Status::okStatus();
}

Status planRandom(const SweepSpec& spec, const Selection& sel, uint64_t seed, Slots& out) {
  const size_t n = sel.hosts.size();
  if (n < 2) return tooFewHosts(spec, sel, 2);
  if (spec.random_rounds == 0) {
    return invalidArgument("rounds: must be at least 1 for the random pattern",
                           "set rounds to the number of random matchings wanted");
  }
  for (const auto* w : sel.hosts) out.side(sideFrom(spec.test.initiator, w->name, ""));
  for (const auto* w : sel.hosts) out.side(sideFrom(spec.test.target, w->name, ""));
  std::mt19937_64 rng(seed);
  std::vector<size_t> order(n);
  for (uint32_t r = 0; r < spec.random_rounds; ++r) {
    for (size_t i = 0; i < n; ++i) order[i] = i;
    // Fisher-Yates with plain modulo: the same seed gives the same plan on every platform
    // (std::shuffle's distribution is implementation-defined).
    for (size_t i = n - 1; i > 0; --i) std::swap(order[i], order[rng() % (i + 1)]);
    for (size_t i = 0; i + 1 < n; i += 2) {
      out.add(static_cast<int>(r), static_cast<uint32_t>(order[i]),
              static_cast<uint32_t>(n + order[i + 1]));
    }
  }
  applyDirection(spec.direction, static_cast<int>(spec.random_rounds), out.slots);
  return Status::okStatus();
}

Status checkPairSide(const std::string& field, const EndpointSelector& side, const Selection& sel) {
  auto it = sel.by_name.find(side.worker);
  if (side.worker.empty() || it == sel.by_name.end()) {
    return notFound(field + ": no worker named '" + side.worker + "'",
                    "use a name from `gdrmesh workers`");
  }
  auto why = sel.left_out.find(side.worker);
  if (why != sel.left_out.end()) {
    return failedPrecondition(field + ": worker " + side.worker + " is " + why->second,
                              "fix the pair or the host selection (hosts/exclude/select)");
  }
  if (!side.device.empty()) {
    std::vector<std::string> names;
    for (const auto* nic : sortedNics(*it->second)) names.push_back(nic->name);
    if (std::find(names.begin(), names.end(), side.device) == names.end()) {
      return notFound(field + ": " + side.worker + " has no NIC " + side.device,
                      names.empty() ? std::string("it reports no NICs; leave the device empty")
                                    : "its NICs: " + joinNames(names));
    }
  }
  return Status::okStatus();
}

// The cover planner's rounds (spec.cover_rounds), each pair in its round; pairs with a host not
// selected are left out (noted), and rounds left empty close up.
Status planCoverRounds(const SweepSpec& spec, const Selection& sel, std::vector<std::string>& notes,
                       Slots& out) {
  if (spec.cover_rounds.empty()) {
    return failedPrecondition(
        std::string("pattern ") + toString(spec.pattern) +
            ": the coordinator has no plan from a fabric",
        "start the coordinator with --fabric FILE (a snapshot `gdrmesh fabric discover --save "
        "FILE` wrote), or `fabric: FILE` in its --config");
  }
  std::set<std::string> selected;
  for (const auto* w : sel.hosts) selected.insert(w->name);
  int round = 0;
  size_t left_out = 0;
  for (const auto& pairs : spec.cover_rounds) {
    bool any = false;
    for (const auto& [a, b] : pairs) {
      if (selected.count(a.worker) == 0 || selected.count(b.worker) == 0) {
        ++left_out;
        continue;
      }
      const uint32_t ia = out.side(sideFrom(spec.test.initiator, a.worker, a.device));
      out.add(round, ia, out.side(sideFrom(spec.test.target, b.worker, b.device)));
      any = true;
    }
    if (any) ++round;
  }
  if (left_out > 0) {
    notes.push_back(std::string(toString(spec.pattern)) + ": " + std::to_string(left_out) +
                    " planned pairs left out (a host not selected or not online)");
  }
  if (out.slots.empty()) return tooFewHosts(spec, sel, 2);
  applyDirection(spec.direction, round, out.slots);
  return Status::okStatus();
}

Status planPairs(const SweepSpec& spec, const Selection& sel, Slots& out) {
  if (spec.pairs.empty()) {
    return invalidArgument("pairs: the pairs pattern needs at least one pair",
                           "list pairs as INITIATOR[/NIC]:TARGET[/NIC]");
  }
  for (size_t i = 0; i < spec.pairs.size(); ++i) {
    const auto& [a, b] = spec.pairs[i];
    const std::string field = "pairs[" + std::to_string(i) + "]";
    GDR_RETURN_IF_ERROR(checkPairSide(field + ".initiator", a, sel));
    GDR_RETURN_IF_ERROR(checkPairSide(field + ".target", b, sel));
    const uint32_t ia = out.side(sideFrom(spec.test.initiator, a.worker, a.device));
    out.add(0, ia, out.side(sideFrom(spec.test.target, b.worker, b.device)));
  }
  applyDirection(spec.direction, 0, out.slots);
  // First-fit packing, in the order given (reverse tests after every forward one).
  std::vector<ResourceSet> rounds;
  for (auto& s : out.slots) {
    std::vector<std::string> res = resourcesOf(out.sides[s.initiator]);
    for (auto& r : resourcesOf(out.sides[s.target])) res.push_back(std::move(r));
    std::sort(res.begin(), res.end());
    res.erase(std::unique(res.begin(), res.end()), res.end());
    size_t r = 0;
    while (r < rounds.size() && !rounds[r].canTake(res)) ++r;
    if (r == rounds.size()) rounds.emplace_back();
    rounds[r].take(res);
    s.round = static_cast<int>(r);
  }
  return Status::okStatus();
}

Status planRails(const SweepSpec& spec, const Selection& sel, std::vector<std::string>& notes,
                 Slots& out) {
  if (sel.hosts.size() < 2) return tooFewHosts(spec, sel, 2);
  const bool cuda = spec.test.initiator.memory == MemoryKind::kCuda ||
                    spec.test.target.memory == MemoryKind::kCuda;
  std::vector<std::vector<const Nic*>> nics;
  size_t max_nics = 0;
  for (const auto* w : sel.hosts) {
    nics.push_back(sortedNics(*w));
    max_nics = std::max(max_nics, nics.back().size());
  }
  if (max_nics == 0) {
    return failedPrecondition("rails: none of the selected hosts reports a NIC",
                              "use all-pairs, or check the workers' inventories");
  }
  size_t with_max = 0;
  for (const auto& v : nics) with_max += v.size() == max_nics ? 1 : 0;
  for (size_t h = 0; h < sel.hosts.size(); ++h) {
    const size_t have = nics[h].size();
    if (have == max_nics) continue;
    std::string rails;
    for (size_t i = have; i < max_nics; ++i)
      rails += (i > have ? ", rail" : "rail") + std::to_string(i);
    const std::string& name = sel.hosts[h]->name;
    notes.push_back(name + " has " + plural(have, "NIC", "NICs") + ", " +
                    plural(with_max, "host has ", "hosts have ") + std::to_string(max_nics) + ": " +
                    rails + (max_nics - have == 1 ? " skips " : " skip ") + name);
  }
  int max_rounds = 0;
  for (size_t i = 0; i < max_nics; ++i) {
    const std::string rail = "rail" + std::to_string(i);
    struct Member {
      const WorkerStatus* w;
      std::string nic;
      int gpu;
    };
    std::vector<Member> members;
    for (size_t h = 0; h < sel.hosts.size(); ++h) {
      if (nics[h].size() <= i) continue;
      const std::string& nic = nics[h][i]->name;
      int gpu = -1;
      if (cuda) {
        gpu = gpuNearest(*sel.hosts[h], nic);
        if (gpu < 0) {
          notes.push_back(rail + " skips " + sel.hosts[h]->name + ": no GPU there has " + nic +
                          " as its nearest NIC (cuda memory needs one)");
          continue;
        }
      }
      members.push_back({sel.hosts[h], nic, gpu});
    }
    if (members.size() < 2) {
      notes.push_back(rail + " has " + plural(members.size(), "host", "hosts") +
                      ": not tested (a rail needs 2)");
      continue;
    }
    const auto side = [&](const EndpointSelector& tmpl, const Member& m) {
      EndpointSelector s = sideFrom(tmpl, m.w->name, m.nic);
      if (tmpl.memory == MemoryKind::kCuda) s.gpu = m.gpu;
      return out.side(std::move(s));
    };
    const uint32_t first = static_cast<uint32_t>(out.sides.size());
    for (const auto& m : members) side(spec.test.initiator, m);
    for (const auto& m : members) side(spec.test.target, m);
    const uint32_t nm = static_cast<uint32_t>(members.size());
    out.rails.push_back(rail);
    const int32_t rail_index = static_cast<int32_t>(out.rails.size() - 1);
    const int rounds = circleRounds(static_cast<int>(nm), [&](int r, int a, int b) {
      out.add(r, first + static_cast<uint32_t>(a), first + nm + static_cast<uint32_t>(b),
              rail_index);
    });
    max_rounds = std::max(max_rounds, rounds);
  }
  if (out.slots.empty()) {
    return failedPrecondition("rails: no rail has 2 hosts that can test it",
                              "see the notes; use all-pairs, or fix the GPU-NIC affinity");
  }
  applyDirection(spec.direction, max_rounds, out.slots);
  return Status::okStatus();
}

void planLoopback(const SweepSpec& spec, const Selection& sel, std::vector<std::string>& notes,
                  Slots& out) {
  for (const auto* w : sel.hosts) {
    const auto nics = sortedNics(*w);
    int j = 0;
    auto add = [&](const EndpointSelector& a, const EndpointSelector& b) {
      const uint32_t ia = out.side(a);
      out.add(j++, ia, out.side(b));
    };
    EndpointSelector host_side;
    host_side.worker = w->name;
    if (nics.empty()) {
      notes.push_back(w->name + " reports no NIC: loopback on the automatic device");
      add(host_side, host_side);
    }
    for (size_t k = 0; k < nics.size(); ++k) {
      if (nics.size() > 1 && k + 1 == nics.size()) break;
      EndpointSelector a = host_side, b = host_side;
      a.device = nics[k]->name;
      b.device = nics[nics.size() > 1 ? k + 1 : k]->name;
      add(a, b);
    }
    std::vector<const Gpu*> gpus;
    for (const auto& g : w->inventory.gpus) gpus.push_back(&g);
    std::sort(gpus.begin(), gpus.end(),
              [](const Gpu* a, const Gpu* b) { return a->index < b->index; });
    for (const auto* g : gpus) {
      std::string nic = nics.empty() ? "" : nics[0]->name;
      bool known = false;
      for (const auto* n : nics) known = known || n->name == g->nearest_nic;
      if (known) {
        nic = g->nearest_nic;
      } else if (!nics.empty()) {
        notes.push_back(w->name + " GPU " + std::to_string(g->index) +
                        " has no known nearest NIC: loopback through " + nic);
      }
      EndpointSelector a = sideFrom(spec.test.initiator, w->name, nic);
      EndpointSelector b = sideFrom(spec.test.target, w->name, nic);
      a.memory = b.memory = MemoryKind::kCuda;
      a.gpu = b.gpu = g->index;
      add(a, b);
    }
  }
}

}  // namespace

std::vector<std::string> resourcesOf(const EndpointSelector& side) {
  if (side.device.empty()) return {side.worker + "/*"};
  std::vector<std::string> out{side.worker + "/" + side.device};
  if (side.memory == MemoryKind::kCuda) {
    out.push_back(side.worker + "/gpu:" + std::to_string(side.gpu < 0 ? 0 : side.gpu));
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> resourcesOf(const PlannedTest& test) {
  std::vector<std::string> out = resourcesOf(test.initiator);
  for (auto& r : resourcesOf(test.target)) out.push_back(std::move(r));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool conflicts(const std::string& a, const std::string& b) {
  if (a == b) return true;
  const std::string ha = hostOf(a), hb = hostOf(b);
  if (ha != hb) return false;
  return a.compare(ha.size(), std::string::npos, "/*") == 0 ||
         b.compare(hb.size(), std::string::npos, "/*") == 0;
}

bool conflicts(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  for (const auto& x : a) {
    for (const auto& y : b) {
      if (conflicts(x, y)) return true;
    }
  }
  return false;
}

bool conflicts(const PlannedTest& a, const PlannedTest& b) {
  return conflicts(resourcesOf(a), resourcesOf(b));
}

bool ResourceSet::canTake(const std::vector<std::string>& resources) const {
  for (const auto& r : resources) {
    const std::string host = hostOf(r);
    const bool whole = r.size() == host.size() + 2 && r.compare(host.size(), 2, "/*") == 0;
    if (whole) {
      if (by_host_.count(host)) return false;
    } else if (held_.count(r) || held_.count(host + "/*")) {
      return false;
    }
  }
  return true;
}

void ResourceSet::take(const std::vector<std::string>& resources) {
  for (const auto& r : resources) {
    ++held_[r];
    ++by_host_[hostOf(r)];
  }
}

void ResourceSet::release(const std::vector<std::string>& resources) {
  for (const auto& r : resources) {
    auto it = held_.find(r);
    if (it == held_.end()) continue;
    if (--it->second == 0) held_.erase(it);
    auto h = by_host_.find(hostOf(r));
    if (h != by_host_.end() && --h->second == 0) by_host_.erase(h);
  }
}

Result<SweepPlan> planSweep(const SweepSpec& spec, const std::vector<WorkerStatus>& workers) {
  SweepPlan plan;
  std::vector<uint64_t> sizes = spec.sizes;
  if (sizes.empty()) sizes.push_back(spec.test.message_size);
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0) {
      return invalidArgument("sizes[" + std::to_string(i) + "]: must be > 0",
                             "give sizes like 64KiB or 1MiB");
    }
  }
  GDR_ASSIGN_OR_RETURN(Selection sel, selectHosts(spec, workers, plan.notes));

  Slots slots;
  Status planned = Status::okStatus();
  switch (spec.pattern) {
    case SweepPattern::kPairs:
      planned = planPairs(spec, sel, slots);
      break;
    case SweepPattern::kAllPairs:
      planned = planAllPairs(spec, sel, slots);
      break;
    case SweepPattern::kRails:
      planned = planRails(spec, sel, plan.notes, slots);
      break;
    case SweepPattern::kLoopback:
      if (sel.hosts.empty()) return tooFewHosts(spec, sel, 1);
      planLoopback(spec, sel, plan.notes, slots);
      break;
    case SweepPattern::kCover:
    case SweepPattern::kBisection:
      planned = planCoverRounds(spec, sel, plan.notes, slots);
      break;
    case SweepPattern::kRandom: {
      uint64_t seed = spec.seed;
      if (seed == 0) {
        std::random_device rd;
        while (seed == 0) seed = (static_cast<uint64_t>(rd()) << 32) ^ rd();
      }
      plan.seed = seed;
      planned = planRandom(spec, sel, seed, slots);
      break;
    }
  }
  GDR_RETURN_IF_ERROR(planned);

  // Group the slots by round (stable: generation order within a round), then expand sizes.
  int slot_rounds = 0;
  for (const auto& s : slots.slots) slot_rounds = std::max(slot_rounds, s.round + 1);
  std::vector<size_t> count(static_cast<size_t>(slot_rounds) + 1, 0);
  for (const auto& s : slots.slots) ++count[static_cast<size_t>(s.round) + 1];
  for (size_t r = 1; r < count.size(); ++r) count[r] += count[r - 1];
  std::vector<uint32_t> ordered(slots.slots.size());
  for (size_t i = 0; i < slots.slots.size(); ++i) {
    ordered[count[static_cast<size_t>(slots.slots[i].round)]++] = static_cast<uint32_t>(i);
  }

  const int n_sizes = static_cast<int>(sizes.size());
  plan.tests.resize(ordered.size() * sizes.size());
  size_t next = 0;
  for (uint32_t index : ordered) {
    const Slot& s = slots.slots[index];
    for (int k = 0; k < n_sizes; ++k) {
      PlannedTest& t = plan.tests[next++];
      t.round = s.round * n_sizes + k;
      t.initiator = slots.sides[s.initiator];
      t.target = slots.sides[s.target];
      t.message_size = sizes[static_cast<size_t>(k)];
      t.bidirectional = s.bidirectional;
      if (s.rail >= 0) t.rail = slots.rails[static_cast<size_t>(s.rail)];
    }
  }
  plan.rounds = slot_rounds * n_sizes;
  return plan;
}

}  // namespace gdrmesh
