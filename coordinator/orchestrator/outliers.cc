#include "coordinator/orchestrator/outliers.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "common/stats.h"
#include "common/units.h"

namespace gdrmesh {
namespace {

constexpr double kMadToSd = 1.4826;  // MAD x this = the standard deviation of a normal sample
constexpr double kMinSpread = 0.01;  // on the log scale: 1 %

// Tests compared with each other: size, op, mode, memory kinds, and which figure.
using OutlierGroup = std::tuple<uint64_t, int, int, int, int, bool>;
OutlierGroup outlierGroupOf(const JudgeRow& r, bool latency) {
  return {r.message_size,
          static_cast<int>(r.op),
          static_cast<int>(r.mode),
          static_cast<int>(r.initiator.memory),
          static_cast<int>(r.target.memory),
          latency};
}

bool hasFigure(const JudgeRow& r, bool latency) {
  if (r.status != TestStatus::kPassed) return false;
  return latency ? r.has_latency && r.lat_median_us > 0 : r.has_bandwidth && r.bw_avg_gbps > 0;
}
// Higher is better, on a log scale.
double figureOf(const JudgeRow& r, bool latency) {
  return latency ? -std::log(r.lat_median_us) : std::log(r.bw_avg_gbps);
}
std::string shown(double x, bool latency) {
  char buf[64];
  if (latency) {
    std::snprintf(buf, sizeof buf, "%.2f us", std::exp(-x));
  } else {
    std::snprintf(buf, sizeof buf, "%.1f Gb/s", std::exp(x));
  }
  return buf;
}
struct Spread {
  double median = 0;
  double sd = kMinSpread;  // 1.4826 x MAD, at least kMinSpread
};
Spread spreadOf(const std::vector<double>& v) {
  Spread s;
  s.median = medianOf(v);
  std::vector<double> dev;
  dev.reserve(v.size());
  for (double x : v) dev.push_back(std::fabs(x - s.median));
  s.sd = std::max(kMadToSd * medianOf(std::move(dev)), kMinSpread);
  return s;
}

// How far below the median x lies: in spreads, and as a fraction of the median's figure.
struct Below {
  double z = 0;
  double shortfall = 0;
};
Below below(double x, const Spread& s) {
  return {(s.median - x) / s.sd, 1.0 - std::exp(x - s.median)};
}
bool isOutlier(const Below& b, const OutlierOptions& o) {
  return b.z >= o.robust_z && b.shortfall >= o.min_shortfall;
}

double scoreOf(double shortfall) {
  return std::min(1.0, 0.5 + shortfall);
}

// A host (nic 0) or one NIC of a host.
using Entity = std::pair<uint32_t, uint32_t>;
struct Samples {
  std::vector<double> x;
  // Every partner as seen, then (settle()) each once: at 1,024 hosts a set per host took 2 M
  // node allocations, most of the end of a sweep (issue #19).
  std::vector<uint32_t> partners;
  void settle() {
    std::sort(partners.begin(), partners.end());
    partners.erase(std::unique(partners.begin(), partners.end()), partners.end());
  }
};
struct Flagged {
  double value = 0;
  size_t partners = 0;
  Below b;
};

// The outliers among `entities` (those with enough partners), and the spread they were judged
// against; none when fewer than options.min_hosts could be judged.
std::map<Entity, Flagged> judgeEntities(const std::map<Entity, Samples>& entities,
                                        const OutlierOptions& o, Spread* spread, size_t* judged) {
  std::vector<std::pair<Entity, double>> values;
  for (const auto& [e, s] : entities) {
    if (static_cast<int>(s.partners.size()) >= o.min_partners)
      values.emplace_back(e, medianOf(s.x));
  }
  *judged = values.size();
  std::map<Entity, Flagged> out;
  if (static_cast<int>(values.size()) < o.min_hosts) return out;
  std::vector<double> v;
  v.reserve(values.size());
  for (const auto& [e, x] : values) v.push_back(x);
  *spread = spreadOf(v);
  for (const auto& [e, x] : values) {
    const Below b = below(x, *spread);
    if (isOutlier(b, o)) out[e] = {x, entities.at(e).partners.size(), b};
  }
  return out;
}

std::string outlierGroupName(const OutlierGroup& g) {
  const auto& [size, op, mode, mi, mt, latency] = g;
  std::string s = formatSize(size) + " " + toString(static_cast<Op>(op));
  if (latency) s += " latency";
  const auto ini = static_cast<MemoryKind>(mi), tgt = static_cast<MemoryKind>(mt);
  if (ini != MemoryKind::kHost || tgt != MemoryKind::kHost) {
    s += std::string(" ") + toString(ini) + "->" + toString(tgt);
  }
  return s;
}

void addSuspect(std::map<std::pair<std::string, std::string>, Suspect>& out,
                const std::string& kind, const std::string& name, double score,
                std::string evidence) {
  Suspect& s = out[{kind, name}];
  s.kind = kind;
  s.name = name;
  s.score = std::max(s.score, score);
  s.evidence.push_back(std::move(evidence));
}

std::string linkName(const JudgeRows& rows, const JudgeRow& r) {
  std::string a = rows.endpointName(r.initiator), b = rows.endpointName(r.target);
  if (b < a) std::swap(a, b);
  return a + "<->" + b;
}

}  // namespace

bool isRepeatOf(const JudgeRow& r, const JudgeRow& s) {
  auto ends = [](const JudgeSide& x) { return std::make_pair(x.worker, x.nic); };
  const bool same = ends(r.initiator) == ends(s.initiator) && ends(r.target) == ends(s.target);
  const bool swapped = ends(r.initiator) == ends(s.target) && ends(r.target) == ends(s.initiator);
  return (same || swapped) && r.message_size == s.message_size && r.op == s.op &&
         r.mode == s.mode &&
         std::minmax(r.initiator.memory, r.target.memory) ==
             std::minmax(s.initiator.memory, s.target.memory);
}

namespace {

using OutlierSuspects = std::map<std::pair<std::string, std::string>, Suspect>;

// One group's figures: every one, and per host and per NIC (NICs only of hosts that tested
// several in the group, each sample with its partner).
struct OutlierGroupSamples {
  std::map<Entity, Samples> hosts, nics;
  std::map<uint32_t, std::set<uint32_t>> nics_of;  // host -> NICs tested in this group
  std::vector<double> all;
};

// Collected by string id, each host's NICs in a short list, then moved into the maps: a tree
// lookup for each side's host, NIC and NIC set took most of the outliers' 0.2 s at 1,024 hosts
// (523,776 rows; issue #19). A NIC's samples are kept only where its host tested several (a
// copy of every host's samples, 12 MB more at the end of that sweep, otherwise).
OutlierGroupSamples outlierGroupSamples(const JudgeRows& rows, const std::vector<size_t>& members,
                                        bool latency) {
  OutlierGroupSamples g;
  std::vector<std::vector<uint32_t>> nic_ids(rows.strings().size());  // per host, in this group
  for (const size_t i : members) {
    for (const JudgeSide* me : {&rows[i].initiator, &rows[i].target}) {
      auto& mine = nic_ids[me->worker];
      if (me->nic != 0 && std::find(mine.begin(), mine.end(), me->nic) == mine.end())
        mine.push_back(me->nic);
    }
  }
  g.all.reserve(members.size());
  std::vector<Samples> hosts(rows.strings().size());
  std::vector<std::vector<std::pair<uint32_t, Samples>>> nics(rows.strings().size());
  auto add = [](Samples& s, double x, uint32_t partner) {
    s.x.push_back(x);
    s.partners.push_back(partner);
  };
  for (const size_t i : members) {
    const JudgeRow& r = rows[i];
    const double x = figureOf(r, latency);
    g.all.push_back(x);
    for (const auto& [me, peer] :
         {std::pair(&r.initiator, &r.target), std::pair(&r.target, &r.initiator)}) {
      add(hosts[me->worker], x, peer->worker);
      if (me->nic == 0 || nic_ids[me->worker].size() < 2) continue;  // compared among several
      auto& mine = nics[me->worker];
      const uint32_t nic = me->nic;  // a lambda may not capture the binding (clang)
      auto it =
          std::find_if(mine.begin(), mine.end(), [nic](const auto& n) { return n.first == nic; });
      if (it == mine.end()) it = mine.emplace(mine.end(), nic, Samples{});
      add(it->second, x, peer->worker);
    }
  }
  for (uint32_t w = 0; w < hosts.size(); ++w) {
    if (!hosts[w].x.empty()) {
      hosts[w].settle();
      g.hosts.emplace_hint(g.hosts.end(), Entity{w, 0}, std::move(hosts[w]));
    }
    if (!nic_ids[w].empty()) g.nics_of[w].insert(nic_ids[w].begin(), nic_ids[w].end());
    for (auto& [nic, samples] : nics[w]) {
      samples.settle();
      g.nics.emplace(Entity{w, nic}, std::move(samples));
    }
  }
  return g;
}

// One group's outlier hosts and NICs.
struct OutlierEndpoints {
  std::map<Entity, Flagged> host_flags, nic_flags;
  size_t hosts_judged = 0;
};

// Flags the group's outlier hosts and NICs and names each a suspect: a NIC stands for its host
// when the host's other NICs are not outliers.
OutlierEndpoints flagOutlierEndpoints(const JudgeRows& rows, OutlierGroupSamples& g, bool latency,
                                      const std::string& group, const OutlierOptions& o,
                                      OutlierSuspects& suspects) {
  OutlierEndpoints out;
  Spread host_spread, nic_spread;
  size_t nics_judged = 0;
  out.host_flags = judgeEntities(g.hosts, o, &host_spread, &out.hosts_judged);
  out.nic_flags = judgeEntities(g.nics, o, &nic_spread, &nics_judged);
  auto evidence = [&](const Flagged& f, const Spread& s, size_t judged, const char* peers) {
    return "median " + shown(f.value, latency) + " over " + std::to_string(f.partners) +
           (f.partners == 1 ? " partner" : " partners") + ", cluster median " +
           shown(s.median, latency) + " (" + std::to_string(judged) + " " + peers + "), " +
           formatFixed(f.b.z, 1) + " robust SDs and " + formatPercent(f.b.shortfall) + " below (" +
           group + ")";
  };
  std::set<uint32_t> replaced;
  for (const auto& [e, f] : out.nic_flags) {
    size_t flagged = 0;
    for (const uint32_t n : g.nics_of[e.first]) flagged += out.nic_flags.count({e.first, n});
    if (flagged == g.nics_of[e.first].size()) continue;  // every NIC: the host
    replaced.insert(e.first);
    addSuspect(suspects, "nic", rows.str(e.first) + "/" + rows.str(e.second),
               scoreOf(f.b.shortfall), evidence(f, nic_spread, nics_judged, "NICs"));
  }
  for (const auto& [e, f] : out.host_flags) {
    if (replaced.count(e.first)) continue;
    addSuspect(suspects, "host", rows.str(e.first), scoreOf(f.b.shortfall),
               evidence(f, host_spread, out.hosts_judged, "hosts"));
  }
  return out;
}

// Pairs of the group far below it that no outlier endpoint explains: a link when every repeat
// of the pair is low too, noise when one is not, and to be repeated when it has none.
void flagOutlierPairs(const JudgeRows& rows, const std::vector<size_t>& members,
                      const std::vector<size_t>& retests, const std::vector<double>& all,
                      bool latency, const std::string& group, const OutlierEndpoints& flagged,
                      const OutlierOptions& o, OutlierFindings& out, OutlierSuspects& suspects) {
  const Spread pair_spread = spreadOf(all);
  auto explained = [&](const JudgeSide& s) {
    return flagged.host_flags.count({s.worker, 0}) > 0 ||
           flagged.nic_flags.count({s.worker, s.nic}) > 0;
  };
  for (const size_t i : members) {
    const JudgeRow& r = rows[i];
    const Below b = below(figureOf(r, latency), pair_spread);
    if (!isOutlier(b, o) || explained(r.initiator) || explained(r.target)) continue;
    const std::string pair =
        rows.endpointName(r.initiator) + "->" + rows.endpointName(r.target) + " (" + group + ")";
    std::vector<std::string> repeats;
    bool all_low = true;
    for (const size_t j : retests) {
      const JudgeRow& x = rows[j];
      if (!isRepeatOf(x, r)) continue;
      if (hasFigure(x, latency)) {
        const double fx = figureOf(x, latency);
        repeats.push_back(shown(fx, latency));
        all_low = all_low && isOutlier(below(fx, pair_spread), o);
      } else {
        repeats.push_back(std::string("status ") + toString(x.status));
      }
    }
    if (repeats.empty()) {
      out.repeat.push_back(i);
      continue;
    }
    std::string seen;
    for (size_t k = 0; k < repeats.size(); ++k) seen += (k ? ", " : "") + repeats[k];
    const std::string first = shown(figureOf(r, latency), latency) + " on the sweep's test, " +
                              seen + (repeats.size() == 1 ? " on its repeat" : " on its repeats");
    if (all_low) {
      addSuspect(suspects, "link", linkName(rows, r), scoreOf(b.shortfall),
                 pair + ": " + first + "; the group's median " +
                     shown(pair_spread.median, latency) + ", " + formatFixed(b.z, 1) +
                     " robust SDs and " + formatPercent(b.shortfall) + " below");
    } else {
      out.notes.push_back(pair + ": " + first + ": noise, not a link (the group's median " +
                          shown(pair_spread.median, latency) + ")");
    }
  }
}

}  // namespace

OutlierFindings findOutliers(const JudgeRows& rows, const OutlierOptions& o) {
  OutlierFindings out;
  if (!o.detect) return out;

  // The sweep's own tests per group and figure; the retests apart.
  std::map<OutlierGroup, std::vector<size_t>> groups;
  std::vector<size_t> retests;
  for (size_t i = 0; i < rows.size(); ++i) {
    const JudgeRow& r = rows[i];
    if (r.retest) {
      retests.push_back(i);
      continue;
    }
    if (r.initiator.worker == r.target.worker) continue;  // loopback: no partner
    for (const bool latency : {false, true}) {
      if (hasFigure(r, latency)) groups[outlierGroupOf(r, latency)].push_back(i);
    }
  }

  OutlierSuspects suspects;
  for (const auto& [g, members] : groups) {
    const bool latency = std::get<5>(g);
    const std::string group = outlierGroupName(g);
    OutlierGroupSamples samples = outlierGroupSamples(rows, members, latency);
    const OutlierEndpoints flagged =
        flagOutlierEndpoints(rows, samples, latency, group, o, suspects);
    if (static_cast<int>(flagged.hosts_judged) < o.min_hosts) continue;
    flagOutlierPairs(rows, members, retests, samples.all, latency, group, flagged, o, out,
                     suspects);
  }
  for (auto& [key, s] : suspects) out.suspects.push_back(std::move(s));
  std::sort(out.suspects.begin(), out.suspects.end(), [](const Suspect& a, const Suspect& b) {
    if (a.score != b.score) return a.score > b.score;
    if (a.kind != b.kind) return a.kind < b.kind;  // host, link, nic
    return a.name < b.name;
  });
  std::sort(out.repeat.begin(), out.repeat.end());
  out.repeat.erase(std::unique(out.repeat.begin(), out.repeat.end()), out.repeat.end());
  return out;
}

SweepVerdict sweepVerdict(const JudgeRows& rows, const JudgeVerdicts& verdicts,
                          const OutlierFindings& outliers, const ClusterConfig& config,
                          const std::vector<size_t>& noise_rows) {
  SweepVerdict v;
  const std::set<size_t> noise(noise_rows.begin(), noise_rows.end());
  for (size_t i = 0; i < rows.size() && i < verdicts.size(); ++i) {
    const JudgeRow& r = rows[i];
    if (r.retest || verdicts.kind[i] != VerdictKind::kFail) continue;
    // A threshold FAIL: the test ran, its bytes were right, a figure missed a threshold.
    const bool threshold_only =
        r.status == TestStatus::kPassed && !(r.integrity_checked && r.wrong_bytes > 0);
    if (threshold_only && noise.count(i)) {
      v.notes.push_back(rows.endpointName(r.initiator) + "->" + rows.endpointName(r.target) + " " +
                        formatSize(r.message_size) + ": " + verdicts.firstReason(i) +
                        " once, passed on its repeat: counted as noise, not a failure");
      continue;
    }
    v.pass = false;
  }
  if (outliers.suspects.empty()) return v;
  const bool thresholds = config.hasThresholds();
  const auto fail = config.outliers.fail;
  const Suspect& top = outliers.suspects.front();
  const std::string named =
      top.kind + " " + top.name + (top.evidence.empty() ? "" : ": " + top.evidence.front()) +
      (outliers.suspects.size() > 1
           ? " (and " + std::to_string(outliers.suspects.size() - 1) + " more outliers)"
           : "");
  if (fail == OutlierOptions::Fail::kAlways ||
      (fail == OutlierOptions::Fail::kAuto && !thresholds)) {
    v.pass = false;
    v.reason = "outlier " + named +
               (fail == OutlierOptions::Fail::kAlways
                    ? " (outliers.fail: always)"
                    : "; no threshold is configured, so outliers decide (outliers.fail: never "
                      "keeps them out of the verdict)");
  } else {
    v.notes.push_back(
        "outlier " + named + ": a suspect, not the verdict " +
        (fail == OutlierOptions::Fail::kNever
             ? std::string("(outliers.fail: never)")
             : std::string("(thresholds are configured and decide; outliers.fail: always makes "
                           "outliers fail the sweep)")));
  }
  return v;
}

}  // namespace gdrmesh
