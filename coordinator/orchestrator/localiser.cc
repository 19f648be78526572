#include "coordinator/orchestrator/localiser.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <utility>

#include "coordinator/orchestrator/planner.h"

namespace gdrmesh {
namespace {

struct Side {
  std::string host;
  std::string nic;
  std::string name() const { return nic.empty() ? host : host + "/" + nic; }
};

Side parseSide(const std::string& s) {
  const size_t slash = s.find('/');
  if (slash == std::string::npos) return {s, ""};
  return {s.substr(0, slash), s.substr(slash + 1)};
}

// One judged test, with its row where there is one.
struct Judged {
  Side a, b;
  const PairVerdict* verdict = nullptr;
  const TestResult* row = nullptr;
  bool failed() const { return verdict->verdict == VerdictKind::kFail; }
  bool loopback() const { return a.host == b.host; }
  std::string why() const { return verdict->reasons.empty() ? "" : verdict->reasons.front(); }
};

struct RetestOutcome {
  std::string partner;  // the known-good host
  bool passed = false;
  std::string reason;
};

std::string names(const std::set<std::string>& s, size_t limit = 8) {
  std::string out;
  size_t i = 0;
  for (const auto& n : s) {
    if (i == limit) {
      out += ", ...";
      break;
    }
    out += (i++ ? ", " : "") + n;
  }
  return out;
}

// What every decision is made from: who failed with whom, the strong suspects, the hosts
// known to be good, and the retests' outcomes per examined host.
struct Analysis {
  std::vector<Judged> tests;  // sweep tests (not retests), PASS or FAIL
  std::vector<Judged> retests;
  std::map<std::string, std::set<std::string>> partners, failed_with;
  std::map<std::string, std::vector<std::string>> loopback_failures;
  std::map<std::string, int> passes;  // host -> passed sweep tests
  std::set<std::string> strong, known_good;
  std::map<std::string, std::vector<RetestOutcome>> retested;  // examined host -> outcomes

  int failedRetests(const std::string& host) const {
    auto it = retested.find(host);
    if (it == retested.end()) return 0;
    int n = 0;
    for (const auto& o : it->second) n += o.passed ? 0 : 1;
    return n;
  }
  int passedRetests(const std::string& host) const {
    auto it = retested.find(host);
    if (it == retested.end()) return 0;
    int n = 0;
    for (const auto& o : it->second) n += o.passed ? 1 : 0;
    return n;
  }
  double score(const std::string& host) const {
    auto p = partners.find(host);
    auto f = failed_with.find(host);
    const double np = p == partners.end() ? 0 : static_cast<double>(p->second.size());
    const double nf = f == failed_with.end() ? 0 : static_cast<double>(f->second.size());
    const double rf = failedRetests(host), rp = passedRetests(host);
    return np + rf + rp > 0 ? (nf + rf) / (np + rf + rp) : 0;
  }
};

Analysis analyse(const std::vector<TestResult>& results, const std::vector<PairVerdict>& verdicts) {
  std::map<std::string, const TestResult*> rows;
  for (const auto& r : results) rows[r.test_id] = &r;
  Analysis an;
  for (const auto& v : verdicts) {
    if (v.verdict == VerdictKind::kSkip) continue;
    Judged j;
    j.verdict = &v;
    auto it = rows.find(v.test_id);
    if (it != rows.end()) {
      j.row = it->second;
      j.a = {j.row->initiator.worker, j.row->initiator.nic};
      j.b = {j.row->target.worker, j.row->target.nic};
    } else {
      j.a = parseSide(v.src);
      j.b = parseSide(v.dst);
    }
    (v.retest ? an.retests : an.tests).push_back(j);
  }
  for (const auto& j : an.tests) {
    if (j.loopback()) {
      if (j.failed()) {
        an.loopback_failures[j.a.host].push_back("loopback " + j.a.name() + "->" + j.b.name() +
                                                 " failed: " + j.why());
      } else {
        ++an.passes[j.a.host];
      }
      continue;
    }
    for (const auto& [x, y] : {std::pair(j.a, j.b), std::pair(j.b, j.a)}) {
      an.partners[x.host].insert(y.host);
      if (j.failed()) {
        an.failed_with[x.host].insert(y.host);
      } else {
        ++an.passes[x.host];
      }
    }
  }
  for (const auto& [host, failed] : an.failed_with) {
    if (failed.size() >= 2 && 2 * failed.size() >= an.partners[host].size()) {
      an.strong.insert(host);
    }
  }
  for (const auto& [host, n] : an.passes) {
    if (n == 0 || an.loopback_failures.count(host) || an.strong.count(host)) continue;
    bool explained = true;
    auto f = an.failed_with.find(host);
    if (f != an.failed_with.end()) {
      for (const auto& partner : f->second) explained = explained && an.strong.count(partner);
    }
    if (explained) an.known_good.insert(host);
  }
  for (const auto& j : an.retests) {
    const bool a_good = an.known_good.count(j.a.host) > 0;
    const bool b_good = an.known_good.count(j.b.host) > 0;
    if (a_good == b_good) continue;  // cannot tell which side it examined
    const Side& examined = a_good ? j.b : j.a;
    const Side& good = a_good ? j.a : j.b;
    an.retested[examined.host].push_back({good.host, !j.failed(), j.why()});
  }
  return an;
}

std::string retestLine(const RetestOutcome& o, bool for_link) {
  if (o.passed) {
    return "retest with known-good " + o.partner +
           (for_link ? ": passed (the link, not the host)" : ": passed");
  }
  return "retest with known-good " + o.partner + ": " + (o.reason.empty() ? "failed" : o.reason);
}

int kindRank(const std::string& kind) {
  return kind == "host" ? 0 : kind == "nic" ? 1 : 2;
}

// The one NIC of `host` that all of its failures involve while its other NICs passed, or "".
std::string failingNicOf(const Analysis& an, const std::string& host) {
  std::set<std::string> failing, passing;
  auto note = [&](const Side& s, bool failed) {
    if (s.host != host || s.nic.empty()) return;
    (failed ? failing : passing).insert(s.nic);
  };
  for (const auto& j : an.tests) {
    note(j.a, j.failed());
    if (!(j.loopback() && j.a.nic == j.b.nic)) note(j.b, j.failed());
  }
  for (const auto& j : an.retests) {
    note(j.a, j.failed());
    note(j.b, j.failed());
  }
  if (failing.size() != 1) return "";
  const std::string nic = *failing.begin();
  passing.erase(nic);
  return passing.empty() ? "" : nic;
}

}  // namespace

std::vector<Suspect> localise(const std::vector<TestResult>& results,
                              const std::vector<PairVerdict>& verdicts) {
  const Analysis an = analyse(results, verdicts);
  std::vector<Suspect> out;

  std::set<std::string> hosts;
  for (const auto& [h, f] : an.failed_with) hosts.insert(h);
  for (const auto& [h, f] : an.loopback_failures) hosts.insert(h);
  for (const auto& [h, o] : an.retested) hosts.insert(h);
  for (const auto& host : hosts) {
    const auto f_it = an.failed_with.find(host);
    const std::set<std::string> failed =
        f_it == an.failed_with.end() ? std::set<std::string>{} : f_it->second;
    const auto p_it = an.partners.find(host);
    const size_t np = p_it == an.partners.end() ? 0 : p_it->second.size();
    const int rf = an.failedRetests(host), rp = an.passedRetests(host);
    const bool loop = an.loopback_failures.count(host) > 0;
    bool explained = !failed.empty() && !an.strong.count(host);
    for (const auto& partner : failed) explained = explained && an.strong.count(partner);
    bool listed = loop || rf > 0 || failed.size() >= 2 || (failed.size() == 1 && rp == 0);
    if (!loop && rf == 0 && explained) listed = false;
    if (!listed) continue;

    Suspect s;
    s.kind = "host";
    s.name = host;
    s.score = loop ? 1.0 : an.score(host);
    if (loop) {
      for (const auto& line : an.loopback_failures.at(host)) s.evidence.push_back(line);
    }
    if (!failed.empty()) {
      s.evidence.push_back("failed with " + std::to_string(failed.size()) + " of " +
                           std::to_string(np) + (np == 1 ? " partner: " : " partners: ") +
                           names(failed));
    }
    auto r_it = an.retested.find(host);
    if (r_it != an.retested.end()) {
      for (const auto& o : r_it->second) s.evidence.push_back(retestLine(o, false));
    }
    const std::string nic = failingNicOf(an, host);
    if (!nic.empty()) {
      s.kind = "nic";
      s.name = host + "/" + nic;
      s.evidence.push_back("every failure of " + host + " involves " + nic +
                           "; its other NICs passed");
    }
    out.push_back(std::move(s));
  }

  // Links: failing pairs that no strong suspect and no failed retest explains.
  std::map<std::string, Suspect> links;
  std::map<std::string, std::pair<int, int>> link_tests;  // name -> failed, all
  for (const auto& j : an.tests) {
    if (j.loopback()) continue;
    std::string x = j.a.name(), y = j.b.name();
    if (y < x) std::swap(x, y);
    const std::string name = x + "<->" + y;
    auto& count = link_tests[name];
    ++count.second;
    if (!j.failed()) continue;
    ++count.first;
    if (an.strong.count(j.a.host) || an.strong.count(j.b.host)) continue;
    if (an.failedRetests(j.a.host) > 0 || an.failedRetests(j.b.host) > 0) continue;
    if (links.count(name)) continue;
    Suspect s;
    s.kind = "link";
    s.name = name;
    s.score = 0.5;
    s.evidence.push_back(j.a.name() + "->" + j.b.name() + ": " + j.why());
    for (const auto* side : {&j.a, &j.b}) {
      auto r_it = an.retested.find(side->host);
      if (r_it == an.retested.end() || an.passedRetests(side->host) == 0) continue;
      s.score += 0.25;
      for (const auto& o : r_it->second) {
        s.evidence.push_back(side->host + " " + retestLine(o, true));
      }
    }
    links[name] = std::move(s);
  }
  for (auto& [name, s] : links) {
    const auto& [failed, all] = link_tests[name];
    if (all > 1) {
      s.evidence.insert(s.evidence.begin(), "failed " + std::to_string(failed) + " of " +
                                                std::to_string(all) + " tests on this link");
    }
    out.push_back(std::move(s));
  }

  std::sort(out.begin(), out.end(), [](const Suspect& a, const Suspect& b) {
    if (a.score != b.score) return a.score > b.score;
    if (a.kind != b.kind) return kindRank(a.kind) < kindRank(b.kind);
    return a.name < b.name;
  });
  return out;
}

std::vector<PlannedTest> planRetests(const std::vector<TestResult>& results,
                                     const std::vector<PairVerdict>& verdicts,
                                     const std::vector<std::string>& hosts, int max_retests) {
  if (max_retests <= 0) return {};
  const Analysis an = analyse(results, verdicts);
  std::vector<std::string> good;
  for (const auto& h : std::set<std::string>(hosts.begin(), hosts.end())) {
    if (an.known_good.count(h)) good.push_back(h);
  }
  if (good.empty()) return {};

  // The NICs each known-good host has tested, by name.
  std::map<std::string, std::set<std::string>> nics_of;
  for (const auto& j : an.tests) {
    for (const auto* s : {&j.a, &j.b}) {
      if (!s->nic.empty()) nics_of[s->host].insert(s->nic);
    }
  }

  struct Candidate {
    double priority;
    std::string name;
    const TestResult* row;
    bool initiator;  // the examined endpoint's role in the failing test
  };
  std::vector<Candidate> candidates;
  std::set<std::string> seen;
  for (const auto& j : an.tests) {
    if (!j.failed() || !j.row) continue;
    for (bool initiator : {true, false}) {
      const Side& x = initiator ? j.a : j.b;
      if (an.known_good.count(x.host) || !seen.insert(x.name()).second) continue;
      candidates.push_back({an.score(x.host), x.name(), j.row, initiator});
    }
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) {
                     if (a.priority != b.priority) return a.priority > b.priority;
                     return a.name < b.name;
                   });

  auto selector = [](const EndpointRecord& e) {
    EndpointSelector s;
    s.worker = e.worker;
    s.device = e.nic;
    s.memory = e.memory;
    s.gpu = e.gpu;
    s.reg = e.reg_path;
    return s;
  };
  std::vector<PlannedTest> out;
  std::vector<ResourceSet> rounds;
  size_t next = 0;
  for (const auto& c : candidates) {
    if (static_cast<int>(out.size()) >= max_retests) break;
    const EndpointRecord& mine = c.initiator ? c.row->initiator : c.row->target;
    const EndpointRecord& theirs = c.initiator ? c.row->target : c.row->initiator;
    std::string partner;
    for (size_t k = 0; k < good.size() && partner.empty(); ++k) {
      const std::string& g = good[(next + k) % good.size()];
      if (g != mine.worker && g != theirs.worker) {
        partner = g;
        next = (next + k + 1) % good.size();
      }
    }
    if (partner.empty()) continue;
    EndpointSelector x = selector(mine);
    EndpointSelector g = selector(theirs);
    g.worker = partner;
    g.device = nics_of[partner].count(mine.nic) ? mine.nic : "";
    PlannedTest t;
    t.initiator = c.initiator ? x : g;
    t.target = c.initiator ? g : x;
    t.message_size = c.row->message_size;
    t.retest = true;
    t.retest_of = c.row->test_id;
    const auto res = resourcesOf(t);
    size_t r = 0;
    while (r < rounds.size() && !rounds[r].canTake(res)) ++r;
    if (r == rounds.size()) rounds.emplace_back();
    rounds[r].take(res);
    t.round = static_cast<int>(r);
    out.push_back(std::move(t));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const PlannedTest& a, const PlannedTest& b) { return a.round < b.round; });
  return out;
}

}  // namespace gdrmesh
