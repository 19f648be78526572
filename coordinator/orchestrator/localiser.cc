#include "coordinator/orchestrator/localiser.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "coordinator/orchestrator/outliers.h"
#include "coordinator/orchestrator/planner.h"

namespace gdrmesh {
namespace {

// An endpoint by the ids of its worker and NIC in the rows' string table.
struct Side {
  uint32_t host = 0;
  uint32_t nic = 0;
};

// One judged test: its row (and, where the verdict came without one, no row to retest).
struct Judged {
  Side a, b;
  size_t row = 0;
  bool failed = false;
  bool has_row = true;
  bool loopback() const { return a.host == b.host; }
};

struct RetestOutcome {
  uint32_t partner = 0;  // the known-good host
  bool passed = false;
  size_t row = 0;  // for the reason
};

// Sorted, deduplicated ids.
void settle(std::vector<uint32_t>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

// What every decision is made from: who failed with whom, the strong suspects, the hosts
// known to be good, and the retests' outcomes per examined host. Hosts are string ids of the
// rows, and the per-host tables are indexed by them.
struct Analysis {
  const JudgeRows* rows = nullptr;
  const JudgeVerdicts* verdicts = nullptr;
  std::vector<Judged> tests;  // sweep tests (not retests), PASS or FAIL
  std::vector<Judged> retests;
  std::vector<std::vector<uint32_t>> partners, failed_with;  // sorted
  std::map<uint32_t, std::vector<std::string>> loopback_failures;
  std::vector<int> passes;  // host -> passed sweep tests
  std::vector<bool> strong, known_good;
  std::map<uint32_t, std::vector<RetestOutcome>> retested;  // examined host -> outcomes
  // Repeats of failing sweep tests (the same two endpoints and shape), by the failing test's
  // index in `tests`.
  std::map<size_t, std::vector<RetestOutcome>> repeats;

  const std::string& str(uint32_t id) const { return rows->str(id); }
  std::string name(const Side& s) const {
    return s.nic == 0 ? str(s.host) : str(s.host) + "/" + str(s.nic);
  }
  const std::string& why(size_t row) const { return verdicts->firstReason(row); }
  bool isStrong(uint32_t host) const { return strong[host]; }
  bool isGood(uint32_t host) const { return known_good[host]; }
  int failedRetests(uint32_t host) const {
    auto it = retested.find(host);
    if (it == retested.end()) return 0;
    int n = 0;
    for (const auto& o : it->second) n += o.passed ? 0 : 1;
    return n;
  }
  int passedRetests(uint32_t host) const {
    auto it = retested.find(host);
    if (it == retested.end()) return 0;
    int n = 0;
    for (const auto& o : it->second) n += o.passed ? 1 : 0;
    return n;
  }
  double score(uint32_t host) const {
    const double np = static_cast<double>(partners[host].size());
    const double nf = static_cast<double>(failed_with[host].size());
    const double rf = failedRetests(host), rp = passedRetests(host);
    return np + rf + rp > 0 ? (nf + rf) / (np + rf + rp) : 0;
  }
  // Host names of `ids`, in name order.
  std::vector<std::string> names(const std::vector<uint32_t>& ids) const {
    std::vector<std::string> out;
    out.reserve(ids.size());
    for (uint32_t id : ids) out.push_back(str(id));
    std::sort(out.begin(), out.end());
    return out;
  }
};

std::string joined(const std::vector<std::string>& sorted, size_t limit = 8) {
  std::string out;
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (i == limit) {
      out += ", ...";
      break;
    }
    out += (i ? ", " : "") + sorted[i];
  }
  return out;
}

// The judged tests into an.tests and an.retests (skipped ones left out). `has_row`: false for
// rows made from a verdict alone (no result to retest from).
void sortJudgedTests(Analysis& an, const std::vector<bool>* has_row) {
  const JudgeRows& rows = *an.rows;
  const JudgeVerdicts& verdicts = *an.verdicts;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (verdicts.kind[i] == VerdictKind::kSkip) continue;
    const JudgeRow& r = rows[i];
    Judged j;
    j.a = {r.initiator.worker, r.initiator.nic};
    j.b = {r.target.worker, r.target.nic};
    j.row = i;
    j.failed = verdicts.kind[i] == VerdictKind::kFail;
    j.has_row = has_row == nullptr || (*has_row)[i];
    (r.retest ? an.retests : an.tests).push_back(j);
  }
}

// Each host's partners, those it failed with, its passes and loopback failures, from the sweep
// tests; returns the hosts seen in them.
std::vector<bool> tallyPartners(Analysis& an) {
  std::vector<bool> seen(an.partners.size());
  for (const auto& j : an.tests) {
    if (j.loopback()) {
      if (j.failed) {
        an.loopback_failures[j.a.host].push_back("loopback " + an.name(j.a) + "->" + an.name(j.b) +
                                                 " failed: " + an.why(j.row));
      } else {
        ++an.passes[j.a.host];
      }
      seen[j.a.host] = true;
      continue;
    }
    for (const auto& [x, y] : {std::pair(j.a, j.b), std::pair(j.b, j.a)}) {
      seen[x.host] = true;
      an.partners[x.host].push_back(y.host);
      if (j.failed) {
        an.failed_with[x.host].push_back(y.host);
      } else {
        ++an.passes[x.host];
      }
    }
  }
  for (auto& p : an.partners) settle(p);
  for (auto& f : an.failed_with) settle(f);
  return seen;
}

// The strong suspects: hosts that failed with two partners or more, and either with at least
// half of their partners or as a star: most of the partners a host failed with failed with
// nobody else (a host that fails now and then with many partners, each of whom is fine with
// everyone else).
void markStrongSuspects(Analysis& an) {
  for (uint32_t host = 0; host < an.failed_with.size(); ++host) {
    const auto& failed = an.failed_with[host];
    if (failed.size() < 2) continue;
    size_t only_with_it = 0;
    for (const uint32_t p : failed) only_with_it += an.failed_with[p].size() == 1 ? 1 : 0;
    if (2 * failed.size() >= an.partners[host].size() || 2 * only_with_it > failed.size()) {
      an.strong[host] = true;
    }
  }
}

// The known-good hosts: seen, passed a test, no loopback failure, not a strong suspect, and
// every partner they failed with is one.
void markKnownGood(Analysis& an, const std::vector<bool>& seen) {
  for (uint32_t host = 0; host < seen.size(); ++host) {
    if (!seen[host] || an.passes[host] == 0 || an.loopback_failures.count(host) ||
        an.strong[host]) {
      continue;
    }
    bool explained = true;
    for (const auto& partner : an.failed_with[host]) explained = explained && an.strong[partner];
    if (explained) an.known_good[host] = true;
  }
}

// Each retest's outcome: to the failing sweep test it repeats, or to the host it examined (the
// side that is not known-good); a retest of neither kind tells nothing.
void assignRetests(Analysis& an) {
  for (const auto& j : an.retests) {
    // A repeat of a failing sweep test: its outcome belongs to that test, not to a host.
    bool repeat = false;
    // Only a pair that no strong suspect explains is repeated, and an endpoint retest never
    // pairs the two ends of such a pair: the same endpoints mean a repeat.
    for (size_t t = 0; t < an.tests.size(); ++t) {
      const Judged& s = an.tests[t];
      if (!s.failed || an.strong[s.a.host] || an.strong[s.b.host] ||
          !isRepeatOf((*an.rows)[j.row], (*an.rows)[s.row])) {
        continue;
      }
      an.repeats[t].push_back({0, !j.failed, j.row});
      repeat = true;
    }
    if (repeat) continue;
    const bool a_good = an.known_good[j.a.host];
    const bool b_good = an.known_good[j.b.host];
    if (a_good == b_good) continue;  // cannot tell which side it examined
    const Side& examined = a_good ? j.b : j.a;
    const Side& good = a_good ? j.a : j.b;
    an.retested[examined.host].push_back({good.host, !j.failed, j.row});
  }
}

// `has_row`: false for rows made from a verdict alone (no result to retest from).
Analysis analyse(const JudgeRows& rows, const JudgeVerdicts& verdicts,
                 const std::vector<bool>* has_row = nullptr) {
  Analysis an;
  an.rows = &rows;
  an.verdicts = &verdicts;
  const size_t n = rows.strings().size();  // hosts are string ids
  an.partners.resize(n);
  an.failed_with.resize(n);
  an.passes.resize(n);
  an.strong.resize(n);
  an.known_good.resize(n);
  sortJudgedTests(an, has_row);
  const std::vector<bool> seen = tallyPartners(an);
  markStrongSuspects(an);
  markKnownGood(an, seen);
  assignRetests(an);
  return an;
}

std::string retestLine(const Analysis& an, const RetestOutcome& o, bool for_link) {
  const std::string& partner = an.str(o.partner);
  if (o.passed) {
    return "retest with known-good " + partner +
           (for_link ? ": passed (the link, not the host)" : ": passed");
  }
  const std::string& reason = an.why(o.row);
  return "retest with known-good " + partner + ": " + (reason.empty() ? "failed" : reason);
}

int kindRank(const std::string& kind) {
  return kind == "threshold" ? 0 : kind == "host" ? 1 : kind == "nic" ? 2 : 3;
}

void rank(std::vector<Suspect>& out) {
  std::sort(out.begin(), out.end(), [](const Suspect& a, const Suspect& b) {
    if (a.score != b.score) return a.score > b.score;
    if (a.kind != b.kind) return kindRank(a.kind) < kindRank(b.kind);
    return a.name < b.name;
  });
}

// The one NIC of `host` that all of its failures involve while its other NICs passed, or "".
std::string failingNicOf(const Analysis& an, uint32_t host) {
  std::set<uint32_t> failing, passing;
  auto note = [&](const Side& s, bool failed) {
    if (s.host != host || s.nic == 0) return;
    (failed ? failing : passing).insert(s.nic);
  };
  for (const auto& j : an.tests) {
    note(j.a, j.failed);
    if (!(j.loopback() && j.a.nic == j.b.nic)) note(j.b, j.failed);
  }
  for (const auto& j : an.retests) {
    note(j.a, j.failed);
    note(j.b, j.failed);
  }
  if (failing.size() != 1) return "";
  const uint32_t nic = *failing.begin();
  passing.erase(nic);
  return passing.empty() ? "" : an.str(nic);
}

// The rule a threshold reason names: "... < 25 Gb/s (bandwidth_gbps_min)" -> its last
// parenthesis when that is a rule name; "" for other reasons (status, integrity).
std::string ruleOf(const std::string& reason) {
  if (reason.empty() || reason.back() != ')') return "";
  const size_t open = reason.rfind('(');
  if (open == std::string::npos) return "";
  std::string rule = reason.substr(open + 1, reason.size() - open - 2);
  for (const char c : rule) {
    if (!((c >= 'a' && c <= 'z') || c == '_')) return "";
  }
  return rule;
}

// (Nearly) every sweep test failing one threshold: the threshold or the fleet, not one host.
std::optional<Suspect> fleetFinding(const Analysis& an) {
  constexpr size_t kMinTests = 6;
  constexpr double kShare = 0.9;
  size_t judged = 0;
  std::map<std::string, std::pair<size_t, size_t>> by_rule;  // rule -> tests, first row
  for (const auto& j : an.tests) {
    if (j.loopback()) continue;
    ++judged;
    if (!j.failed) continue;
    const uint32_t k = an.verdicts->reasons_of[j.row];
    if (k == 0) continue;
    std::set<std::string> rules;
    for (const auto& reason : an.verdicts->reasons[k - 1]) rules.insert(ruleOf(reason));
    rules.erase("");
    for (const auto& rule : rules) {
      auto [it, inserted] = by_rule.emplace(rule, std::make_pair(size_t{0}, j.row));
      ++it->second.first;
    }
  }
  if (judged < kMinTests) return std::nullopt;
  const std::pair<const std::string, std::pair<size_t, size_t>>* top = nullptr;
  for (const auto& e : by_rule) {
    if (!top || e.second.first > top->second.first) top = &e;
  }
  if (!top || static_cast<double>(top->second.first) < kShare * static_cast<double>(judged)) {
    return std::nullopt;
  }
  const auto& [rule, count_row] = *top;
  const auto& [count, row] = count_row;
  const JudgeRow& r = (*an.rows)[row];
  std::string example;
  for (const auto& reason : an.verdicts->reasons[an.verdicts->reasons_of[row] - 1]) {
    if (ruleOf(reason) == rule) example = reason;
  }
  Suspect s;
  s.kind = "threshold";
  s.name = rule;
  s.score = 1.0;
  s.evidence.push_back((count == judged ? "all " + std::to_string(judged)
                                        : std::to_string(count) + " of " + std::to_string(judged)) +
                       " tests fail " + rule + " (e.g. " + an.rows->endpointName(r.initiator) +
                       "->" + an.rows->endpointName(r.target) + ": " + example +
                       "): the threshold or the fleet, not one host");
  return s;
}

// The hosts (or one NIC of a host) that failures, loopback failures and retests point at, in
// name order.
void localiseHostSuspects(const Analysis& an, std::vector<Suspect>& out) {
  std::vector<uint32_t> host_ids;
  for (uint32_t h = 0; h < an.failed_with.size(); ++h) {
    if (!an.failed_with[h].empty()) host_ids.push_back(h);
  }
  for (const auto& [h, f] : an.loopback_failures) host_ids.push_back(h);
  for (const auto& [h, o] : an.retested) host_ids.push_back(h);
  settle(host_ids);
  std::sort(host_ids.begin(), host_ids.end(),
            [&an](uint32_t x, uint32_t y) { return an.str(x) < an.str(y); });
  for (const uint32_t host : host_ids) {
    const std::vector<uint32_t>& failed = an.failed_with[host];
    const size_t np = an.partners[host].size();
    const int rf = an.failedRetests(host), rp = an.passedRetests(host);
    const bool loop = an.loopback_failures.count(host) > 0;
    bool explained = !failed.empty() && !an.isStrong(host);
    for (const auto& partner : failed) explained = explained && an.isStrong(partner);
    bool listed = loop || rf > 0 || failed.size() >= 2 || (failed.size() == 1 && rp == 0);
    if (!loop && rf == 0 && explained) listed = false;
    if (!listed) continue;

    Suspect s;
    s.kind = "host";
    s.name = an.str(host);
    s.score = loop ? 1.0 : an.score(host);
    if (loop) {
      for (const auto& line : an.loopback_failures.at(host)) s.evidence.push_back(line);
    }
    if (!failed.empty()) {
      s.evidence.push_back("failed with " + std::to_string(failed.size()) + " of " +
                           std::to_string(np) + (np == 1 ? " partner: " : " partners: ") +
                           joined(an.names(failed)));
    }
    auto r_it = an.retested.find(host);
    if (r_it != an.retested.end()) {
      for (const auto& o : r_it->second) s.evidence.push_back(retestLine(an, o, false));
    }
    const std::string nic = failingNicOf(an, host);
    if (!nic.empty()) {
      s.kind = "nic";
      s.name = s.name + "/" + nic;
      s.evidence.push_back("every failure of " + an.str(host) + " involves " + nic +
                           "; its other NICs passed");
    }
    out.push_back(std::move(s));
  }
}

// A link named by its endpoints (host, NIC) in id order.
using LocaliserLinkKey = std::pair<std::pair<uint32_t, uint32_t>, std::pair<uint32_t, uint32_t>>;
LocaliserLinkKey localiserLinkOf(const Judged& j) {
  auto x = std::make_pair(j.a.host, j.a.nic), y = std::make_pair(j.b.host, j.b.nic);
  if (y < x) std::swap(x, y);
  return LocaliserLinkKey{x, y};
}

// Links: failing pairs that no strong suspect and no failed retest explains, each with how many
// of its tests failed; a failure that its repeats do not show is a note (noise), not a link.
void localiseLinkSuspects(const Analysis& an, Localisation& result) {
  // A link is named by its endpoints in name order; counted by their ids.
  std::map<LocaliserLinkKey, Suspect> links;
  for (size_t t = 0; t < an.tests.size(); ++t) {
    const Judged& j = an.tests[t];
    if (j.loopback() || !j.failed) continue;
    if (an.isStrong(j.a.host) || an.isStrong(j.b.host)) continue;
    if (an.failedRetests(j.a.host) > 0 || an.failedRetests(j.b.host) > 0) continue;
    // The pair itself again: a failure its repeats do not show is noise, not a link.
    const auto rep = an.repeats.find(t);
    std::vector<std::string> repeat_lines;
    if (rep != an.repeats.end()) {
      bool any_failed = false;
      for (const auto& o : rep->second) {
        any_failed = any_failed || !o.passed;
        repeat_lines.push_back(
            o.passed
                ? "repeat: passed"
                : "repeat: " + (an.why(o.row).empty() ? std::string("failed") : an.why(o.row)));
      }
      if (!any_failed) {
        result.notes.push_back(an.name(j.a) + "->" + an.name(j.b) + ": " + an.why(j.row) +
                               "; passed on its repeat: noise, not a link");
        result.noise_rows.push_back(j.row);
        continue;
      }
    }
    const LocaliserLinkKey key = localiserLinkOf(j);
    if (links.count(key)) continue;
    std::string x = an.name(j.a), y = an.name(j.b);
    if (y < x) std::swap(x, y);
    Suspect s;
    s.kind = "link";
    s.name = x + "<->" + y;
    s.score = 0.5;
    s.evidence.push_back(an.name(j.a) + "->" + an.name(j.b) + ": " + an.why(j.row));
    for (auto& line : repeat_lines) s.evidence.push_back(std::move(line));
    for (const Side* side : {&j.a, &j.b}) {
      auto r_it = an.retested.find(side->host);
      if (r_it == an.retested.end() || an.passedRetests(side->host) == 0) continue;
      s.score += 0.25;
      for (const auto& o : r_it->second) {
        s.evidence.push_back(an.str(side->host) + " " + retestLine(an, o, true));
      }
    }
    links.emplace(key, std::move(s));
  }
  if (!links.empty()) {
    std::map<LocaliserLinkKey, std::pair<int, int>> link_tests;  // failed, all; suspect links only
    for (const auto& [key, s] : links) link_tests[key];
    for (const auto& j : an.tests) {
      if (j.loopback()) continue;
      auto it = link_tests.find(localiserLinkOf(j));
      if (it == link_tests.end()) continue;
      ++it->second.second;
      if (j.failed) ++it->second.first;
    }
    for (auto& [key, s] : links) {
      const auto& [failed, all] = link_tests[key];
      if (all > 1) {
        s.evidence.insert(s.evidence.begin(), "failed " + std::to_string(failed) + " of " +
                                                  std::to_string(all) + " tests on this link");
      }
      result.suspects.push_back(std::move(s));
    }
  }
}

Localisation localiseAnalysis(const Analysis& an) {
  Localisation result;
  if (auto fleet = fleetFinding(an)) {
    result.notes.push_back("localisation: " + fleet->evidence.front() +
                           "; no host, NIC or link is ranked from it");
    result.suspects.push_back(std::move(*fleet));
    return result;
  }
  localiseHostSuspects(an, result.suspects);
  localiseLinkSuspects(an, result);
  rank(result.suspects);
  return result;
}

// The rows to repeat as they were: each failing pair that no strong suspect explains (a link
// candidate), and each row asked for, once per pair and shape.
std::vector<size_t> retestRepeatRows(const Analysis& an, const std::vector<size_t>& repeat_rows) {
  const JudgeRows& rows = *an.rows;
  std::vector<size_t> repeats;
  for (const auto& j : an.tests) {
    if (j.failed && j.has_row && !j.loopback() && !an.isStrong(j.a.host) &&
        !an.isStrong(j.b.host)) {
      repeats.push_back(j.row);
    }
  }
  for (const size_t row : repeat_rows) {
    if (row < rows.size() && !rows[row].retest) repeats.push_back(row);
  }
  std::vector<size_t> unique;
  for (const size_t row : repeats) {
    bool seen = false;
    for (const size_t u : unique) seen = seen || isRepeatOf(rows[row], rows[u]);
    if (!seen) unique.push_back(row);
  }
  return unique;
}

// An endpoint of a failing test to retest against a known-good host.
struct RetestCandidate {
  double priority;
  std::string name;
  size_t row;
  bool initiator;  // the examined endpoint's role in the failing test
};

// Every endpoint of a failing test that is not known good, once, most suspect first (then by
// name).
std::vector<RetestCandidate> retestCandidates(const Analysis& an) {
  std::vector<RetestCandidate> candidates;
  std::set<std::string> seen;
  for (const auto& j : an.tests) {
    if (!j.failed || !j.has_row) continue;
    for (bool initiator : {true, false}) {
      const Side& x = initiator ? j.a : j.b;
      if (an.isGood(x.host) || !seen.insert(an.name(x)).second) continue;
      candidates.push_back({an.score(x.host), an.name(x), j.row, initiator});
    }
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const RetestCandidate& a, const RetestCandidate& b) {
                     if (a.priority != b.priority) return a.priority > b.priority;
                     return a.name < b.name;
                   });
  return candidates;
}

// A row's endpoint as a retest names it.
EndpointSelector retestSelector(const JudgeRows& rows, const JudgeSide& e) {
  EndpointSelector s;
  s.worker = rows.str(e.worker);
  s.device = rows.str(e.nic);
  s.memory = e.memory;
  s.gpu = e.gpu;
  s.reg = e.reg_path;
  return s;
}

std::vector<PlannedTest> planRetestsOf(const Analysis& an, const std::vector<std::string>& hosts,
                                       int max_retests, const std::vector<size_t>& repeat_rows) {
  const JudgeRows& rows = *an.rows;
  std::vector<uint32_t> good;
  for (const auto& h : std::set<std::string>(hosts.begin(), hosts.end())) {
    const auto id = rows.strings().find(h);
    if (id && an.isGood(*id)) good.push_back(*id);
  }
  const std::vector<size_t> repeats = retestRepeatRows(an, repeat_rows);
  if (good.empty() && repeats.empty()) return {};

  // The NICs each known-good host has tested, by name.
  std::map<uint32_t, std::set<uint32_t>> nics_of;
  for (const auto& j : an.tests) {
    for (const auto* s : {&j.a, &j.b}) {
      if (s->nic != 0) nics_of[s->host].insert(s->nic);
    }
  }

  const std::vector<RetestCandidate> candidates = retestCandidates(an);

  auto selector = [&rows](const JudgeSide& e) { return retestSelector(rows, e); };
  std::vector<PlannedTest> out;
  std::vector<ResourceSet> rounds;
  auto place = [&rounds](PlannedTest& t) {
    const auto res = resourcesOf(t);
    size_t r = 0;
    while (r < rounds.size() && !rounds[r].canTake(res)) ++r;
    if (r == rounds.size()) rounds.emplace_back();
    rounds[r].take(res);
    t.round = static_cast<int>(r);
  };
  for (const size_t row_index : repeats) {
    if (static_cast<int>(out.size()) >= max_retests) break;
    const JudgeRow& row = rows[row_index];
    PlannedTest t;
    t.initiator = selector(row.initiator);
    t.target = selector(row.target);
    t.message_size = row.message_size;
    t.retest = true;
    t.retest_of = std::string(rows.testId(row));
    place(t);
    out.push_back(std::move(t));
  }
  size_t next = 0;
  for (const auto& c : candidates) {
    if (good.empty()) break;
    if (static_cast<int>(out.size()) >= max_retests) break;
    const JudgeRow& row = rows[c.row];
    const JudgeSide& mine = c.initiator ? row.initiator : row.target;
    const JudgeSide& theirs = c.initiator ? row.target : row.initiator;
    std::optional<uint32_t> partner;
    for (size_t k = 0; k < good.size() && !partner; ++k) {
      const uint32_t g = good[(next + k) % good.size()];
      if (g != mine.worker && g != theirs.worker) {
        partner = g;
        next = (next + k + 1) % good.size();
      }
    }
    if (!partner) continue;
    EndpointSelector x = selector(mine);
    EndpointSelector g = selector(theirs);
    g.worker = rows.str(*partner);
    g.device = nics_of[*partner].count(mine.nic) ? rows.str(mine.nic) : "";
    PlannedTest t;
    t.initiator = c.initiator ? x : g;
    t.target = c.initiator ? g : x;
    t.message_size = row.message_size;
    t.retest = true;
    t.retest_of = std::string(rows.testId(row));
    place(t);
    out.push_back(std::move(t));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const PlannedTest& a, const PlannedTest& b) { return a.round < b.round; });
  return out;
}

// Rows and verdicts from full results and the verdicts judged on them (matched by test id): a
// verdict without a row gets a row made from its names; a row without a verdict is skipped.
struct Converted {
  JudgeRows rows;
  JudgeVerdicts verdicts;
  std::vector<bool> has_row;
};
Converted convert(const std::vector<TestResult>& results,
                  const std::vector<PairVerdict>& verdicts) {
  std::map<std::string, const TestResult*> by_id;
  for (const auto& r : results) by_id[r.test_id] = &r;
  Converted c;
  auto split = [](const std::string& s, std::string& worker, std::string& nic) {
    const size_t slash = s.find('/');
    worker = s.substr(0, slash);
    nic = slash == std::string::npos ? "" : s.substr(slash + 1);
  };
  for (const auto& v : verdicts) {
    auto it = by_id.find(v.test_id);
    if (it != by_id.end()) {
      c.rows.add(*it->second, v.retest);
      c.has_row.push_back(true);
    } else {
      TestResult r;
      r.test_id = v.test_id;
      r.message_size = v.message_size;
      split(v.src, r.initiator.worker, r.initiator.nic);
      split(v.dst, r.target.worker, r.target.nic);
      c.rows.add(r, v.retest);
      c.has_row.push_back(false);
    }
    c.verdicts.kind.push_back(v.verdict);
    if (v.reasons.empty()) {
      c.verdicts.reasons_of.push_back(0);
    } else {
      c.verdicts.reasons.push_back(v.reasons);
      c.verdicts.reasons_of.push_back(static_cast<uint32_t>(c.verdicts.reasons.size()));
    }
  }
  return c;
}

}  // namespace

Localisation localiseSweep(const JudgeRows& rows, const JudgeVerdicts& verdicts) {
  return localiseAnalysis(analyse(rows, verdicts));
}

std::vector<Suspect> localise(const JudgeRows& rows, const JudgeVerdicts& verdicts) {
  return localiseSweep(rows, verdicts).suspects;
}

std::vector<PlannedTest> planRetests(const JudgeRows& rows, const JudgeVerdicts& verdicts,
                                     const std::vector<std::string>& hosts, int max_retests,
                                     const std::vector<size_t>& repeat_rows) {
  if (max_retests <= 0) return {};
  return planRetestsOf(analyse(rows, verdicts), hosts, max_retests, repeat_rows);
}

std::vector<Suspect> localise(const std::vector<TestResult>& results,
                              const std::vector<PairVerdict>& verdicts) {
  const Converted c = convert(results, verdicts);
  return localiseAnalysis(analyse(c.rows, c.verdicts, &c.has_row)).suspects;
}

std::vector<PlannedTest> planRetests(const std::vector<TestResult>& results,
                                     const std::vector<PairVerdict>& verdicts,
                                     const std::vector<std::string>& hosts, int max_retests) {
  if (max_retests <= 0) return {};
  const Converted c = convert(results, verdicts);
  return planRetestsOf(analyse(c.rows, c.verdicts, &c.has_row), hosts, max_retests, {});
}

std::vector<Suspect> mergeSuspects(std::vector<Suspect> a, const std::vector<Suspect>& b) {
  for (const auto& s : b) {
    auto it = std::find_if(a.begin(), a.end(),
                           [&s](const Suspect& x) { return x.kind == s.kind && x.name == s.name; });
    if (it == a.end()) {
      a.push_back(s);
      continue;
    }
    it->score = std::max(it->score, s.score);
    it->evidence.insert(it->evidence.end(), s.evidence.begin(), s.evidence.end());
  }
  rank(a);
  return a;
}

}  // namespace gdrmesh
