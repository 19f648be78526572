#include "coordinator/orchestrator/link_counters.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <utility>

#include "common/fabric/cover.h"
#include "coordinator/orchestrator/localiser.h"

namespace gdrmesh {
namespace {

// The first active port of an HCA, as SweepFabric::paths picks it.
fabric::Endpoint counterEndpointOf(const fabric::Node* n) {
  if (n == nullptr) return {};
  for (const fabric::Port& p : n->ports) {
    if (p.state == "Active") return {n, &p};
  }
  return {n, n->ports.size() == 1 ? n->ports.data() : nullptr};
}

std::string counterEndName(const fabric::Fabric& f, uint64_t guid, int port) {
  const fabric::Node* n = f.nodeByGuid(guid);
  return (n != nullptr ? n->name : std::string("?")) + " port " + std::to_string(port) + " (" +
         fabric::guidHex(guid) + ")";
}

// "4,442/h", "3.5/min".
std::string counterRateText(double rate, const CounterThreshold& t) {
  char text[32];
  if (rate >= 100) {
    return fabric::groupedNumber(static_cast<uint64_t>(std::llround(rate))) +
           thresholdText({t.counter, 0, t.per_seconds, ""}).substr(1);
  }
  std::snprintf(text, sizeof text, "%.3g", rate);
  return text + thresholdText({t.counter, 0, t.per_seconds, ""}).substr(1);
}

}  // namespace

CableEnds cableOf(const fabric::Fabric& f, uint64_t guid, int port) {
  CableEnds c;
  const fabric::Node* n = f.nodeByGuid(guid);
  const fabric::Port* p = n != nullptr ? n->port(port) : nullptr;
  const fabric::Node* r =
      p != nullptr && p->remote_guid != 0 ? f.nodeByGuid(p->remote_guid) : nullptr;
  c.a_name = n != nullptr ? n->name : fabric::guidHex(guid);
  c.a_guid = guid;
  c.a_port = port;
  if (r != nullptr) {
    c.b_name = r->name;
    c.b_guid = r->guid;
    c.b_port = p->remote_port;
    if (std::make_pair(c.b_guid, c.b_port) < std::make_pair(c.a_guid, c.a_port)) {
      std::swap(c.a_name, c.b_name);
      std::swap(c.a_guid, c.b_guid);
      std::swap(c.a_port, c.b_port);
    }
  }
  c.name = c.a_name + "[" + std::to_string(c.a_port) + "] <-> " +
           (c.b_guid != 0 ? c.b_name + "[" + std::to_string(c.b_port) + "]" : std::string("?"));
  return c;
}

std::vector<fabric::CounterPort> roundCounterPorts(
    const SweepFabric& fabric, const fabric::HostMatch& match,
    const std::vector<std::pair<EndpointSelector, EndpointSelector>>& pairs, size_t* untraced) {
  const fabric::Fabric& f = fabric.fabric();
  std::set<fabric::CounterPort> ports;
  std::set<std::pair<std::string, std::string>> seen;  // "worker/device" pairs traced
  for (const auto& [a, b] : pairs) {
    const std::string ka = a.worker + "/" + a.device;
    const std::string kb = b.worker + "/" + b.device;
    if (!seen.emplace(ka, kb).second) continue;
    const fabric::Endpoint ea = counterEndpointOf(match.hcaFor(f, a.worker, a.device));
    const fabric::Endpoint eb = counterEndpointOf(match.hcaFor(f, b.worker, b.device));
    if (ea.node == nullptr || eb.node == nullptr) {
      ++*untraced;
      continue;
    }
    bool traced = false;
    for (const auto& [from, to] : {std::make_pair(ea, eb), std::make_pair(eb, ea)}) {
      auto hops = fabric::tracePath(f, from, to);
      if (!hops.ok()) continue;
      traced = true;
      for (const fabric::Hop& h : *hops) {
        const fabric::Node* sw = f.nodeByGuid(h.switch_guid);
        if (sw == nullptr) continue;
        ports.insert({sw->lid, h.in_port, sw->guid});
        ports.insert({sw->lid, h.out_port, sw->guid});
      }
    }
    if (!traced) ++*untraced;
  }
  return {ports.begin(), ports.end()};
}

RoundCounterDeltas roundCounterDeltas(const SweepFabric& fabric, const std::string& sweep_id,
                                      int round, double seconds,
                                      const fabric::CounterReadOutcome& before,
                                      const fabric::CounterReadOutcome& after) {
  const fabric::Fabric& f = fabric.fabric();
  RoundCounterDeltas out;
  std::map<fabric::CounterPort, const fabric::PortCounterValues*> first;
  for (const auto& p : before.ports) first[p.port] = &p;
  for (const auto& p : after.ports) {
    auto it = first.find(p.port);
    const fabric::PortCounterValues* b = it == first.end() ? nullptr : it->second;
    const Status& st = b != nullptr && !b->status.ok() ? b->status : p.status;
    if (b == nullptr || !st.ok()) {
      const fabric::Node* sw = f.nodeByGuid(p.port.guid);
      out.findings.push_back(
          "fabric counters: round " + std::to_string(round) + ": " +
          (sw != nullptr ? sw->name : fabric::guidHex(p.port.guid)) + "[" +
          std::to_string(p.port.port) + "] not read: " +
          (b == nullptr ? std::string("missing from the read before the round") : st.toString()));
      continue;
    }
    const CableEnds cable = cableOf(f, p.port.guid, p.port.port);
    const fabric::Node* sw = f.nodeByGuid(p.port.guid);
    const size_t rows_before = out.rows.size();
    const std::string* unchanged = nullptr;  // a counter read both times that did not move
    // A row of this port's cable for `counter` (its change filled in by the caller).
    const auto row_of = [&](const std::string& counter) {
      LinkCounterRecord r;
      r.sweep_id = sweep_id;
      r.round = round;
      r.switch_name = sw != nullptr ? sw->name : fabric::guidHex(p.port.guid);
      r.switch_guid = p.port.guid;
      r.port = p.port.port;
      r.link = cable.name;
      r.counter = counter;
      r.seconds = seconds;
      return r;
    };
    for (const auto& [name, after_value] : p.values) {
      const fabric::CounterKind* kind = fabric::counterKind(name);
      auto bv = b->values.find(name);
      if (kind == nullptr || bv == b->values.end()) continue;
      // Reset after the read before (allowed by the operator): the round counted from 0.
      const uint64_t from = b->reset && kind->error ? 0 : bv->second;
      const bool extended = b->extended && p.extended;
      const fabric::CounterDelta d = fabric::counterDelta(*kind, extended, from, after_value);
      if (d.value == 0 && !d.at_least) {
        if (unchanged == nullptr || name == fabric::kSymbolErrorCounter) unchanged = &name;
        continue;
      }
      LinkCounterRecord r = row_of(name);
      r.delta = d.value;
      r.at_least = d.at_least;
      out.rows.push_back(std::move(r));
    }
    if (out.rows.size() == rows_before && unchanged != nullptr) {
      // Read, and nothing moved: one row of 0, so that a sweep resumed after a restart knows the
      // port was read (its cable is judged ok, as without the restart).
      out.rows.push_back(row_of(*unchanged));
    }
  }
  return out;
}

std::string counterNoun(const std::string& counter) {
  static const std::map<std::string, std::string> kNouns = {
      {fabric::kSymbolErrorCounter, "symbol errors"},
      {fabric::kLinkErrorRecoveryCounter, "link error recoveries"},
      {fabric::kLinkDownedCounter, "link downs"},
      {fabric::kPortRcvErrors, "receive errors"},
      {fabric::kPortXmitDiscards, "transmit discards"},
      {fabric::kPortXmitWait, "transmit wait ticks"},
  };
  auto it = kNouns.find(counter);
  return it == kNouns.end() ? counter : it->second;
}

std::vector<CounterExcess> judgeCounters(const std::vector<LinkCounterRecord>& rows,
                                         const std::vector<CounterThreshold>& thresholds) {
  std::vector<CounterExcess> out;
  for (const LinkCounterRecord& r : rows) {
    auto t = std::find_if(thresholds.begin(), thresholds.end(),
                          [&](const CounterThreshold& x) { return x.counter == r.counter; });
    if (t == thresholds.end()) continue;
    const auto delta = static_cast<double>(r.delta);
    std::string text = (r.at_least ? ">= " : "") + fabric::groupedNumber(r.delta) + " " +
                       counterNoun(r.counter) + " on " + r.switch_name + "[" +
                       std::to_string(r.port) + "] during round " + std::to_string(r.round);
    bool over = false;
    if (t->per_seconds > 0) {
      // A rate over the round's window; a window of 0 s (a clock that did not move) is the
      // count alone against the threshold.
      const double rate = r.seconds > 0 ? delta / r.seconds * t->per_seconds : delta;
      over = rate > t->count;
      text += " = " + std::string(r.at_least ? ">= " : "") + counterRateText(rate, *t);
    } else {
      over = delta > t->count;
    }
    if (!over) continue;
    CounterExcess e;
    e.row = r;
    e.threshold = &*t;
    e.text = text + " (threshold " + thresholdText(*t) + ")";
    out.push_back(std::move(e));
  }
  return out;
}

namespace {

// What the sweep found on one cable: counter errors, slow pairs blamed on it, no test over it.
struct CableFindings {
  CableEnds cable;
  bool errors = false;
  bool slow = false;
  bool not_covered = false;
  std::vector<std::string> evidence;
};

// The findings by cable name: every cable read, over a threshold, blamed, or (an inter-switch
// cable) crossed by no test in either direction.
std::map<std::string, CableFindings> cableFindings(const fabric::Fabric& f,
                                                   const std::set<DirectedLink>& read,
                                                   const std::vector<CounterExcess>& excess,
                                                   const std::vector<BlamedLink>& blamed,
                                                   const std::vector<DirectedLink>& never) {
  std::map<std::string, CableFindings> by_cable;
  auto findings_of = [&](uint64_t guid, int port) -> CableFindings& {
    CableEnds c = cableOf(f, guid, port);
    CableFindings& v = by_cable[c.name];
    v.cable = std::move(c);
    return v;
  };
  for (const DirectedLink& l : read) findings_of(l.guid, l.port);
  for (const CounterExcess& e : excess) {
    CableFindings& v = findings_of(e.row.switch_guid, e.row.port);
    v.errors = true;
    v.evidence.push_back(e.text);
  }
  for (const BlamedLink& b : blamed) {
    if (b.links.empty()) continue;
    CableFindings& v = findings_of(b.links.front().guid, b.links.front().port);
    v.slow = true;
    for (const auto& line : b.suspect.evidence) v.evidence.push_back(line);
  }
  // An inter-switch cable is not covered when neither of its directions carried a test.
  std::map<std::string, size_t> never_directions;
  for (const DirectedLink& l : never) ++never_directions[cableOf(f, l.guid, l.port).name];
  for (const DirectedLink& l : never) {
    const CableEnds c = cableOf(f, l.guid, l.port);
    if (never_directions[c.name] < 2 || by_cable.count(c.name) != 0) continue;
    CableFindings& v = findings_of(l.guid, l.port);
    v.not_covered = true;
    v.evidence.push_back("no test of the sweep crossed it, in either direction");
  }
  return by_cable;
}

LinkVerdictRecord cableVerdict(const std::string& sweep_id, const std::string& name,
                               const CableFindings& v) {
  LinkVerdictRecord r;
  r.sweep_id = sweep_id;
  r.link = name;
  r.switch_name = v.cable.a_name;
  r.switch_guid = v.cable.a_guid;
  r.port = v.cable.a_port;
  r.remote_name = v.cable.b_name;
  r.remote_guid = v.cable.b_guid;
  r.remote_port = v.cable.b_port;
  r.verdict = v.errors && v.slow ? fabric::kLinkErrorsSlowPairs
              : v.errors         ? fabric::kLinkErrors
              : v.slow           ? fabric::kLinkSlowPairs
              : v.not_covered    ? fabric::kLinkNotCovered
                                 : fabric::kLinkOk;
  r.evidence = v.evidence;
  return r;
}

// The suspect of a cable whose counters went over a threshold: the excesses, then its ends
// (always the last line of its evidence).
Suspect counterSuspect(const fabric::Fabric& f, const std::string& name, const CableEnds& cable,
                       const std::vector<CounterExcess>& excess) {
  Suspect s;
  s.kind = "link";
  s.name = name;
  s.score = 0.9;
  for (const CounterExcess& e : excess) {
    if (cableOf(f, e.row.switch_guid, e.row.port).name == name) s.evidence.push_back(e.text);
  }
  s.evidence.push_back("ends: " + counterEndName(f, cable.a_guid, cable.a_port) + " and " +
                       counterEndName(f, cable.b_guid, cable.b_port));
  return s;
}

// link_blame's suspects, then the counters' others: where the counters also name a blamed
// cable, one suspect with both kinds of evidence and the higher score.
std::vector<Suspect> mergedLinkSuspects(const fabric::Fabric& f,
                                        const std::vector<BlamedLink>& blamed,
                                        std::vector<Suspect> counter_suspects) {
  std::vector<Suspect> out;
  for (const BlamedLink& b : blamed) {
    Suspect s = b.suspect;
    const std::string cable = b.links.empty()
                                  ? std::string()
                                  : cableOf(f, b.links.front().guid, b.links.front().port).name;
    auto it = std::find_if(counter_suspects.begin(), counter_suspects.end(),
                           [&](const Suspect& c) { return c.name == cable; });
    if (it != counter_suspects.end()) {
      s.score = std::max(s.score, it->score);
      // Its evidence but the ends, which the blame's evidence names already.
      s.evidence.insert(s.evidence.end(), it->evidence.begin(), it->evidence.end() - 1);
      counter_suspects.erase(it);
    }
    out.push_back(std::move(s));
  }
  for (auto& s : counter_suspects) out.push_back(std::move(s));
  return out;
}

}  // namespace

LinkJudgement judgeLinks(const SweepFabric& fabric, const std::string& sweep_id,
                         const std::set<DirectedLink>& read,
                         const std::vector<CounterExcess>& excess,
                         const std::vector<BlamedLink>& blamed,
                         const std::vector<DirectedLink>& never) {
  const fabric::Fabric& f = fabric.fabric();
  LinkJudgement out;
  std::vector<Suspect> counter_suspects;
  for (const auto& [name, v] : cableFindings(f, read, excess, blamed, never)) {
    out.verdicts.push_back(cableVerdict(sweep_id, name, v));
    if (v.errors) counter_suspects.push_back(counterSuspect(f, name, v.cable, excess));
  }
  out.link_suspects = mergedLinkSuspects(f, blamed, std::move(counter_suspects));
  std::stable_sort(out.verdicts.begin(), out.verdicts.end(),
                   [](const LinkVerdictRecord& a, const LinkVerdictRecord& b) {
                     return fabric::linkVerdictSeverity(a.verdict) >
                            fabric::linkVerdictSeverity(b.verdict);
                   });
  return out;
}

std::vector<LinkVerdictRecord> linkVerdictsFromPaths(const SweepFabric& fabric,
                                                     const std::string& sweep_id,
                                                     const std::vector<BlamedLink>& blamed) {
  if (blamed.empty()) return {};
  std::vector<LinkVerdictRecord> out = judgeLinks(fabric, sweep_id, {}, {}, blamed).verdicts;
  for (LinkVerdictRecord& v : out) v.evidence.emplace_back(kNoCountersEvidence);
  return out;
}

void judgeSweepLinks(const std::vector<LinkVerdictRecord>& links, SweepVerdict* v) {
  const LinkVerdictRecord* worst = nullptr;
  size_t failing = 0;
  for (const LinkVerdictRecord& l : links) {
    if (!fabric::linkVerdictFails(l.verdict)) continue;
    ++failing;
    // The worst first; among equals the first by name, whatever order the rows come in.
    if (worst == nullptr ||
        fabric::linkVerdictSeverity(l.verdict) > fabric::linkVerdictSeverity(worst->verdict) ||
        (fabric::linkVerdictSeverity(l.verdict) == fabric::linkVerdictSeverity(worst->verdict) &&
         l.link < worst->link)) {
      worst = &l;
    }
  }
  if (worst == nullptr) return;
  v->pass = false;
  std::string reason = "link " + worst->link + ": " + worst->verdict;
  if (!worst->evidence.empty()) reason += ": " + worst->evidence.front();
  if (failing > 1) reason += " (and " + std::to_string(failing - 1) + " more links not ok)";
  v->reason = v->reason.empty() ? reason : reason + "; " + v->reason;
}

}  // namespace gdrmesh
