#include "coordinator/orchestrator/link_blame.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "coordinator/orchestrator/localiser.h"

namespace gdrmesh {
namespace {

// One candidate of the blame: a directed link or a cable, and the tests that crossed it.
struct BlameCandidate {
  std::vector<DirectedLink> links;
  std::vector<size_t> bad;
  size_t good = 0;
};

// The directed link that leaves the far end of `l` (the other direction of its cable).
DirectedLink reverseOf(const fabric::Fabric& f, const DirectedLink& l) {
  const fabric::Node* n = f.nodeByGuid(l.guid);
  const fabric::Port* p = n != nullptr ? n->port(l.port) : nullptr;
  if (p == nullptr) return {};
  return {p->remote_guid, p->remote_port};
}

std::string blameEnd(const fabric::Fabric& f, uint64_t guid, int port) {
  const fabric::Node* n = f.nodeByGuid(guid);
  return (n != nullptr ? n->name : std::string("?")) + " port " + std::to_string(port) + " (" +
         fabric::guidHex(guid) + ")";
}

std::string blamePercent(size_t part, size_t whole) {
  char text[16];
  std::snprintf(text, sizeof text, "%.0f %%",
                whole == 0 ? 0.0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole));
  return text;
}

// Whether `name` (a host, NIC or pair suspect's) is an endpoint of row `r`.
bool suspectTouches(const JudgeRows& rows, const JudgeRow& r, const Suspect& s) {
  const std::string a = rows.endpointName(r.initiator);
  const std::string b = rows.endpointName(r.target);
  if (s.kind == "host") {
    return rows.str(r.initiator.worker) == s.name || rows.str(r.target.worker) == s.name;
  }
  if (s.kind == "nic") return a == s.name || b == s.name;
  if (s.kind == "link") return s.name == a + "<->" + b || s.name == b + "<->" + a;
  return false;
}

// Each directed link: the bad and good tests whose data crossed it; `bad_rows` gets the bad
// tests. Retests, tests without a known path and skipped ones cross nothing.
std::map<DirectedLink, BlameCandidate> blameDirectedLinks(const JudgeRows& rows,
                                                          const JudgeVerdicts& verdicts,
                                                          const RowPaths& paths,
                                                          std::vector<size_t>* bad_rows) {
  std::map<DirectedLink, BlameCandidate> directed;
  for (size_t i = 0; i < rows.size() && i < verdicts.size(); ++i) {
    const JudgeRow& r = rows[i];
    if (r.retest || !paths.known[i] || verdicts.kind[i] == VerdictKind::kSkip) continue;
    const bool bad = verdicts.kind[i] == VerdictKind::kFail;
    if (bad) bad_rows->push_back(i);
    for (const DirectedLink& l : dataLinks(r, paths, i)) {
      BlameCandidate& c = directed[l];
      c.links = {l};
      if (bad) {
        c.bad.push_back(i);
      } else {
        ++c.good;
      }
    }
  }
  return directed;
}

// The candidates: every directed link, and every cable both of whose directions were crossed
// (both directions of one, each test once).
std::vector<BlameCandidate> blameCandidates(
    const fabric::Fabric& f, const std::map<DirectedLink, BlameCandidate>& directed) {
  std::vector<BlameCandidate> candidates;
  for (const auto& [l, c] : directed) {
    candidates.push_back(c);
    const DirectedLink back = reverseOf(f, l);
    if (!(l < back)) continue;  // each cable once, from its smaller end
    auto it = directed.find(back);
    if (it == directed.end()) continue;
    BlameCandidate cable;
    cable.links = {l, back};
    std::set<size_t> bad(c.bad.begin(), c.bad.end());
    bad.insert(it->second.bad.begin(), it->second.bad.end());
    cable.bad.assign(bad.begin(), bad.end());
    cable.good = c.good + it->second.good;  // a good test crossing both ways counts twice: stricter
    candidates.push_back(std::move(cable));
  }
  return candidates;
}

// The candidate that best explains the bad tests not `explained` yet (nullptr: none does well
// enough), its score and how many of those it explains.
struct BlameChoice {
  const BlameCandidate* best = nullptr;
  double score = 0;
  size_t bad = 0;
};

BlameChoice bestBlameCandidate(const std::vector<BlameCandidate>& candidates,
                               const std::set<size_t>& explained, size_t total_bad) {
  BlameChoice choice;
  for (const BlameCandidate& c : candidates) {
    size_t bad = 0;
    for (size_t i : c.bad) bad += explained.count(i) == 0 ? 1 : 0;
    const double crossed = static_cast<double>(c.bad.size() + c.good);
    const double purity = crossed > 0 ? static_cast<double>(c.bad.size()) / crossed : 0;
    const double share = static_cast<double>(bad) / static_cast<double>(total_bad);
    if (bad < 2 || purity < 0.75 || share < 0.5) continue;
    const double score = share * purity;
    // Ties: the directed link before its cable (the more precise name), then link order.
    if (choice.best == nullptr || score > choice.score + 1e-12 ||
        (score > choice.score - 1e-12 && c.links.size() < choice.best->links.size())) {
      choice = {&c, score, bad};
    }
  }
  return choice;
}

// The chosen candidate as a blamed link: its suspect, with the evidence for it.
BlamedLink blamedLinkOf(const SweepFabric& fabric, const BlameChoice& choice, size_t total_bad) {
  const fabric::Fabric& f = fabric.fabric();
  const BlameCandidate& best = *choice.best;
  BlamedLink b;
  b.links = best.links;
  b.bad_rows = best.bad;
  const DirectedLink& l = best.links.front();
  const std::string name = fabric.linkName(l);
  b.suspect.kind = "link";
  b.suspect.name = best.links.size() == 1 ? name : [&] {
    std::string n = name;
    auto arrow = n.find(" -> ");
    if (arrow != std::string::npos) n.replace(arrow, 4, " <-> ");
    return n;
  }();
  b.suspect.score = 0.5 + 0.5 * choice.score;
  const DirectedLink far = reverseOf(f, l);
  const std::string slow_word = total_bad == 1 ? " slow or failed pair" : " slow or failed pairs";
  b.suspect.evidence.push_back(std::to_string(choice.bad) + " of " + std::to_string(total_bad) +
                               slow_word + " crossed " + b.suspect.name);
  b.suspect.evidence.push_back(
      std::to_string(best.bad.size()) + " of " + std::to_string(best.bad.size() + best.good) +
      " tests over it failed (" + blamePercent(best.bad.size(), best.bad.size() + best.good) +
      "); the pairs not crossing it: " + std::to_string(total_bad - choice.bad) + " failed");
  b.suspect.evidence.push_back(
      "ends: " + blameEnd(f, l.guid, l.port) + " and " + blameEnd(f, far.guid, far.port) +
      (best.links.size() == 1 ? " (this direction)" : " (both directions)"));
  return b;
}

}  // namespace

std::vector<BlamedLink> blameLinks(const JudgeRows& rows, const JudgeVerdicts& verdicts,
                                   const RowPaths& paths, const SweepFabric& fabric,
                                   size_t max_links) {
  std::vector<size_t> bad_rows;
  const std::map<DirectedLink, BlameCandidate> directed =
      blameDirectedLinks(rows, verdicts, paths, &bad_rows);
  std::vector<BlamedLink> out;
  if (bad_rows.size() < 2) return out;
  const std::vector<BlameCandidate> candidates = blameCandidates(fabric.fabric(), directed);
  // Greedily: the best candidate, then the best for the bad tests it leaves unexplained.
  std::set<size_t> explained;
  while (out.size() < max_links) {
    const BlameChoice choice = bestBlameCandidate(candidates, explained, bad_rows.size());
    if (choice.best == nullptr) break;
    out.push_back(blamedLinkOf(fabric, choice, bad_rows.size()));
    for (size_t i : choice.best->bad) explained.insert(i);
  }
  return out;
}

std::vector<Suspect> withLinkBlame(std::vector<Suspect> suspects,
                                   const std::vector<BlamedLink>& blamed, const JudgeRows& rows,
                                   const JudgeVerdicts& verdicts) {
  if (blamed.empty()) return suspects;
  for (Suspect& s : suspects) {
    if (s.kind != "host" && s.kind != "nic" && s.kind != "link") continue;
    for (const BlamedLink& b : blamed) {
      const std::set<size_t> over(b.bad_rows.begin(), b.bad_rows.end());
      size_t failing = 0;
      bool all = true;
      for (size_t i = 0; i < rows.size() && i < verdicts.size() && all; ++i) {
        if (rows[i].retest || verdicts.kind[i] != VerdictKind::kFail) continue;
        if (!suspectTouches(rows, rows[i], s)) continue;
        ++failing;
        all = over.count(i) != 0;
      }
      if (all && failing > 0) {
        s.score *= 0.5;
        s.evidence.push_back("every failing test of " + s.name + " crossed " + b.suspect.name +
                             " (the fabric link explains its failures)");
        break;
      }
    }
  }
  std::vector<Suspect> links;
  links.reserve(blamed.size());
  for (const BlamedLink& b : blamed) links.push_back(b.suspect);
  return mergeSuspects(std::move(suspects), links);
}

}  // namespace gdrmesh
