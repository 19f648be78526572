#include "cli/junit.h"

#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "cli/output.h"
#include "cli/sweep_output.h"
#include "common/fabric/counters.h"
#include "common/fabric/fabric.h"
#include "common/pair_spec.h"
#include "common/units.h"

namespace gdrmesh::cli {

std::string xmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        if (u < 0x20 && c != '\t' && c != '\n' && c != '\r') break;  // not allowed in XML 1.0
        if (u == 0x7f) break;
        out += c;
    }
  }
  return out;
}

namespace {

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3f", s < 0 ? 0.0 : s);
  return buf;
}

}  // namespace

std::string renderJUnit(const std::vector<JUnitSuite>& suites) {
  size_t tests = 0, failures = 0, skipped = 0;
  double time = 0;
  for (const auto& s : suites) {
    tests += s.cases.size();
    time += s.time_seconds;
    for (const auto& c : s.cases) {
      failures += c.outcome == JUnitCase::Outcome::kFail;
      skipped += c.outcome == JUnitCase::Outcome::kSkip;
    }
  }
  std::ostringstream o;
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o << "<testsuites name=\"gdrmesh\" tests=\"" << tests << "\" failures=\"" << failures
    << "\" errors=\"0\" skipped=\"" << skipped << "\" time=\"" << seconds(time) << "\">\n";
  for (const auto& s : suites) {
    size_t f = 0, k = 0;
    for (const auto& c : s.cases) {
      f += c.outcome == JUnitCase::Outcome::kFail;
      k += c.outcome == JUnitCase::Outcome::kSkip;
    }
    o << "  <testsuite name=\"" << xmlEscape(s.name) << "\" tests=\"" << s.cases.size()
      << "\" failures=\"" << f << "\" errors=\"0\" skipped=\"" << k << "\" time=\""
      << seconds(s.time_seconds) << "\"";
    if (!s.timestamp.empty()) o << " timestamp=\"" << xmlEscape(s.timestamp) << "\"";
    o << ">\n";
    if (!s.properties.empty()) {
      o << "    <properties>\n";
      for (const auto& [k2, v] : s.properties) {
        o << "      <property name=\"" << xmlEscape(k2) << "\" value=\"" << xmlEscape(v)
          << "\"/>\n";
      }
      o << "    </properties>\n";
    }
    for (const auto& c : s.cases) {
      o << "    <testcase classname=\"" << xmlEscape(c.classname) << "\" name=\""
        << xmlEscape(c.name) << "\" time=\"" << seconds(c.time_seconds) << "\"";
      if (c.outcome == JUnitCase::Outcome::kPass && c.system_out.empty()) {
        o << "/>\n";
        continue;
      }
      o << ">\n";
      if (c.outcome == JUnitCase::Outcome::kFail) {
        o << "      <failure message=\"" << xmlEscape(c.message) << "\" type=\"FAIL\">"
          << xmlEscape(c.detail) << "</failure>\n";
      } else if (c.outcome == JUnitCase::Outcome::kSkip) {
        o << "      <skipped message=\"" << xmlEscape(c.message) << "\"/>\n";
      }
      if (!c.system_out.empty()) {
        o << "      <system-out>" << xmlEscape(c.system_out) << "</system-out>\n";
      }
      o << "    </testcase>\n";
    }
    o << "  </testsuite>\n";
  }
  o << "</testsuites>\n";
  return o.str();
}

namespace {

std::string sideName(const EndpointRecord& e) {
  return e.nic.empty() ? e.worker : e.worker + "/" + e.nic;
}

std::string figures(const TestResult& r) {
  const auto& m = r.measurement;
  std::string s;
  if (m.has_bandwidth) {
    s += "bandwidth avg " + fmt(m.bw.avg_gbps, 3) + " Gb/s, peak " + fmt(m.bw.peak_gbps, 3) +
         " Gb/s, " + fmt(m.bw.msg_rate_mpps, 4) + " Mpps";
  }
  if (m.has_latency) {
    if (!s.empty()) s += "; ";
    s += "latency median " + fmt(m.lat.median_us, 2) + " us, p99 " + fmt(m.lat.p99_us, 2) +
         " us, max " + fmt(m.lat.max_us, 2) + " us";
  }
  return s.empty() ? "no figures" : s;
}

// "data: verified (status PASSED)": what the data check of a failing case's result says.
std::string junitDataLine(const TestResult& r) {
  std::string s = std::string("data: ") +
                  (r.transport == TransportKind::kSimulated ? "simulated, no data moved"
                   : r.status == TestStatus::kPassed        ? "verified"
                   : r.status == TestStatus::kSkipped       ? "skipped"
                                                            : "not verified") +
                  " (status " + toString(r.status) + ")";
  if (!r.reason.empty()) s += ": " + r.reason;
  return s + "\n";
}

// A failing case's message and detail: the threshold reasons, else the result's reason or status.
void junitFailure(const TestResult* r, const PairVerdict* v, const std::string& reasons,
                  JUnitCase* c) {
  c->outcome = JUnitCase::Outcome::kFail;
  c->message = !reasons.empty()                     ? reasons
               : r != nullptr && !r->reason.empty() ? r->reason
               : r != nullptr                       ? std::string(toString(r->status))
                                                    : "FAIL";
  std::ostringstream d;
  if (r != nullptr) d << "figures: " << figures(*r) << "\n";
  if (v != nullptr) {
    for (const auto& x : v->reasons) d << "threshold: " << x << "\n";
  }
  if (r != nullptr) d << junitDataLine(*r) << "test id: " << r->test_id << "\n";
  c->detail = d.str();
}

JUnitCase caseFor(const TestResult* r, const PairVerdict* v, const std::string& cls) {
  JUnitCase c;
  c.classname = cls;
  std::string src, dst, shape;
  uint64_t size = 0;
  if (r != nullptr) {
    src = sideName(r->initiator);
    dst = sideName(r->target);
    size = r->message_size;
    shape = std::string(" ") + toString(r->op) + " " + toString(r->mode);
    c.time_seconds = r->finished_ms > r->started_ms
                         ? static_cast<double>(r->finished_ms - r->started_ms) / 1e3
                         : 0;
  }
  if (v != nullptr) {
    if (!v->src.empty()) src = v->src;
    if (!v->dst.empty()) dst = v->dst;
    if (v->message_size > 0) size = v->message_size;
  }
  c.name = src + " -> " + dst + " " + formatSize(size) + shape;
  if (v != nullptr && v->retest) c.name += " (retest)";

  std::string verdict;
  if (v != nullptr) {
    verdict = toString(v->verdict);
  } else if (r != nullptr) {
    verdict = r->status == TestStatus::kPassed    ? "PASS"
              : r->status == TestStatus::kSkipped ? "SKIP"
                                                  : "FAIL";
  }
  std::string reasons;
  if (v != nullptr) {
    for (const auto& x : v->reasons) reasons += (reasons.empty() ? "" : "; ") + x;
  }
  if (verdict == "FAIL") {
    junitFailure(r, v, reasons, &c);
  } else if (verdict == "SKIP") {
    c.outcome = JUnitCase::Outcome::kSkip;
    c.message = !reasons.empty() ? reasons : r != nullptr ? r->reason : "";
  }
  if (r != nullptr) {
    c.system_out = "transport " + std::string(toString(r->transport)) + "\ndata path " +
                   dataPath(*r) + "\nintegrity " + integrityText(*r) + "\n";
    if (r->measurement.has_bandwidth || r->measurement.has_latency) {
      c.system_out += figures(*r) + "\n";
    }
  }
  return c;
}

// Whether a part's test template ran this (op, mode, size).
bool partRan(const SweepPart& part, Op op, Mode mode, uint64_t size) {
  const auto& t = part.spec.test;
  if (t.op != op || t.mode != mode) return false;
  if (part.spec.sizes.empty()) {
    return (t.message_size > 0 ? t.message_size : kDefaultMessageSize) == size;
  }
  for (uint64_t s : part.spec.sizes) {
    if (s == size) return true;
  }
  return false;
}

// The part a test belongs to: by its plan index when the parts' ranges are known, else (a
// retest, or a sweep stored before parts were) the first part that ran its op, mode and size.
size_t partOf(const SweepReportData& report, int64_t plan_index, Op op, Mode mode, uint64_t size) {
  if (plan_index >= 0) {
    const auto at = static_cast<uint64_t>(plan_index);
    for (size_t i = 0; i < report.parts.size(); ++i) {
      const auto& p = report.parts[i];
      if (p.planned_known && at >= p.plan_begin && at < p.plan_begin + p.planned) return i;
    }
  }
  for (size_t i = 0; i < report.parts.size(); ++i) {
    if (partRan(report.parts[i], op, mode, size)) return i;
  }
  return 0;
}

// What every suite says of the sweep: its report, the coordinator, and the state and reason as
// the CLI knows them ("unknown" when it lost the sweep).
struct JUnitSweep {
  const SweepReportData& report;
  const std::string& coordinator;
  std::string state;
  std::string reason;
  std::string pattern;  // the sweep's pattern; "config" for an acceptance run
};

std::string startedText(const SweepProgress& p, size_t chars) {
  return p.started_ms > 0 ? formatRfc3339(p.started_ms).substr(0, chars) : "";
}

// One suite per part (each sweep of an acceptance run's config), named by its pattern and
// test, its cases of class gdrmesh.<its pattern> (pushed to *part_cls, one per suite).
std::vector<JUnitSuite> junitPartSuites(const JUnitSweep& sw, std::vector<std::string>* part_cls) {
  const auto& p = sw.report.progress;
  const size_t parts = sw.report.parts.size();
  std::vector<JUnitSuite> suites;
  for (size_t i = 0; i < parts; ++i) {
    const auto& spec = sw.report.parts[i].spec;
    const std::string pat = spec.pattern_from_config ? sw.pattern : toString(spec.pattern);
    const std::string test = std::string(toString(spec.test.op)) + " " + toString(spec.test.mode);
    JUnitSuite s;
    s.name = p.id + (parts > 1 ? " #" + std::to_string(i + 1) : "") + " " + pat + " " + test;
    s.timestamp = startedText(p, 19);
    s.time_seconds = i == 0 ? p.elapsed_seconds : 0;  // the sweep's time, counted once
    s.properties = {{"sweep_id", p.id},
                    {"coordinator", sw.coordinator},
                    {"started", startedText(p, std::string::npos)},
                    {"pattern", pat},
                    {"test", test},
                    {"part", std::to_string(i + 1) + " of " + std::to_string(parts)},
                    {"state", sw.state},
                    {"verdict", p.verdict}};
    if (!p.name.empty()) s.properties.emplace_back("name", p.name);
    suites.push_back(std::move(s));
    part_cls->push_back("gdrmesh." + pat);
  }
  return suites;
}

// Without parts (an older coordinator): the suite of one run of the sweep, `key` its run id.
JUnitSuite junitRunSuite(const JUnitSweep& sw, const std::string& key) {
  const auto& p = sw.report.progress;
  JUnitSuite s;
  s.name = key + " " + sw.pattern;
  s.timestamp = startedText(p, 19);
  s.time_seconds = p.elapsed_seconds;
  s.properties = {{"sweep_id", p.id},
                  {"coordinator", sw.coordinator},
                  {"started", startedText(p, std::string::npos)},
                  {"pattern", sw.pattern},
                  {"state", sw.state},
                  {"verdict", p.verdict}};
  if (!p.name.empty()) s.properties.emplace_back("name", p.name);
  if (key != p.id) s.properties.emplace_back("run_id", key);
  return s;
}

// The case for the sweep as a whole: fails unless it finished with verdict PASS, its detail
// the counts, the suspects with their evidence and the notes.
JUnitCase junitOverallCase(const JUnitSweep& sw) {
  const auto& report = sw.report;
  const auto& p = report.progress;
  JUnitCase overall;
  overall.classname = "gdrmesh.sweep";
  overall.name = "sweep verdict";
  overall.time_seconds = p.elapsed_seconds;
  if (sw.state != "finished" || p.verdict != "PASS") {
    overall.outcome = JUnitCase::Outcome::kFail;
    overall.message = sw.state != "finished"
                          ? "sweep " + sw.state + (sw.reason.empty() ? "" : ": " + sw.reason)
                          : "verdict " + (p.verdict.empty() ? std::string("none") : p.verdict);
    std::ostringstream d;
    const auto& vc = report.verdict_counts;
    d << "sweep " << p.id << " " << sw.state << ", tests " << testCountsText(p) << "; verdicts "
      << verdictCountsText(vc.pass, vc.fail, vc.skip) << "\n";
    for (const auto& s : report.suspects) {
      d << "suspect " << s.kind << " " << s.name << " (score " << fmt(s.score, 2) << ")";
      for (const auto& e : s.evidence) d << "; " << e;
      d << "\n";
    }
    for (const auto& n : report.notes) d << "note: " << n << "\n";
    overall.detail = d.str();
  }
  return overall;
}

// A sweep on a discovered fabric with a fabric reader: a `fabric` suite, one case per link with
// a verdict; a link that is not ok fails, its evidence the failure's detail, and one that no
// test crossed (not_covered) is skipped.
JUnitSuite junitFabricSuite(const JUnitSweep& sw) {
  const auto& p = sw.report.progress;
  JUnitSuite s;
  s.name = p.id + " fabric";
  s.timestamp = startedText(p, 19);
  s.properties = {{"sweep_id", p.id}, {"coordinator", sw.coordinator}, {"suite", "fabric"}};
  for (const auto& l : sw.report.links) {
    JUnitCase c;
    c.classname = "gdrmesh.fabric";
    c.name = l.link;
    c.system_out = "ends: " + l.switch_name + " port " + std::to_string(l.port) + " (" +
                   fabric::guidHex(l.switch_guid) + ") and " + l.remote_name + " port " +
                   std::to_string(l.remote_port) + " (" + fabric::guidHex(l.remote_guid) +
                   "); verdict " + l.verdict;
    if (l.verdict == fabric::kLinkNotCovered) {
      // No test crossed it: nothing is known of it, as of a test that did not run.
      c.outcome = JUnitCase::Outcome::kSkip;
      c.message = "link not covered: no test of the sweep crossed it";
    } else if (l.verdict != fabric::kLinkOk) {
      c.outcome = JUnitCase::Outcome::kFail;
      c.message = "link " + l.verdict + (l.evidence.empty() ? std::string() : ": " + l.evidence[0]);
      for (const auto& e : l.evidence) c.detail += e + "\n";
    }
    s.cases.push_back(std::move(c));
  }
  return s;
}

// The cases of the results and verdicts, each in its suite: by part when the report has parts,
// else by run (suites in the order their runs first appear, the sweep's own id first).
class JUnitPlacer {
 public:
  explicit JUnitPlacer(const JUnitSweep& sw)
      : sw_(sw), cls_("gdrmesh." + sw.pattern), suites_(junitPartSuites(sw, &part_cls_)) {
    if (sw.report.parts.empty()) suiteForRun(sw.report.progress.id);
  }

  void placeResult(const TestResult& r, const PairVerdict* v) {
    if (sw_.report.parts.empty()) {
      add(suiteForRun(r.run_id), caseFor(&r, v, cls_));
      return;
    }
    const size_t k = partOf(sw_.report, r.plan_index, r.op, r.mode, r.message_size);
    add(suites_[k], caseFor(&r, v, part_cls_[k]));
  }

  void placeVerdict(const PairVerdict& v) {
    if (sw_.report.parts.empty()) {
      add(suites_.front(), caseFor(nullptr, &v, cls_));
      return;
    }
    const size_t k = partOf(sw_.report, -1, v.op, v.mode, v.message_size);
    add(suites_[k], caseFor(nullptr, &v, part_cls_[k]));
  }

  std::vector<JUnitSuite> take() { return std::move(suites_); }

 private:
  JUnitSuite& suiteForRun(const std::string& run_id) {
    const std::string key = run_id.empty() ? sw_.report.progress.id : run_id;
    auto it = suite_of_.find(key);
    if (it != suite_of_.end()) return suites_[it->second];
    suite_of_[key] = suites_.size();
    suites_.push_back(junitRunSuite(sw_, key));
    return suites_.back();
  }

  // Cases of one name in one suite are numbered: "... #2".
  void add(JUnitSuite& s, JUnitCase c) {
    const int n = ++seen_names_[s.name + "\n" + c.name];
    if (n > 1) c.name += " #" + std::to_string(n);
    s.cases.push_back(std::move(c));
  }

  const JUnitSweep& sw_;
  std::string cls_;
  std::vector<std::string> part_cls_;
  std::vector<JUnitSuite> suites_;
  std::map<std::string, size_t> suite_of_;
  std::map<std::string, int> seen_names_;
};

}  // namespace

std::vector<JUnitSuite> junitFromReport(const SweepReportData& report,
                                        const std::string& coordinator, const std::string& lost) {
  const auto& p = report.progress;
  JUnitSweep sw{report, coordinator, lost.empty() ? toString(p.state) : "unknown",
                lost.empty() ? p.reason : lost, p.pattern};
  if (sw.pattern.empty() && !report.spec.pattern_from_config) {
    sw.pattern = toString(report.spec.pattern);
  }
  if (sw.pattern.empty()) sw.pattern = "config";

  std::map<std::string, const PairVerdict*> verdict_of;
  for (const auto& v : report.verdicts) {
    if (!v.test_id.empty()) verdict_of[v.test_id] = &v;
  }
  JUnitPlacer placer(sw);
  std::set<std::string> judged;
  for (const auto& r : report.results) {
    auto it = verdict_of.find(r.test_id);
    const PairVerdict* v = it == verdict_of.end() ? nullptr : it->second;
    if (v != nullptr) judged.insert(v->test_id);
    placer.placeResult(r, v);
  }
  // Verdicts without a result in the report (results not asked for, or not stored).
  for (const auto& v : report.verdicts) {
    if (v.test_id.empty() || judged.count(v.test_id) == 0) placer.placeVerdict(v);
  }
  std::vector<JUnitSuite> suites = placer.take();
  suites.front().cases.insert(suites.front().cases.begin(), junitOverallCase(sw));
  if (!report.links.empty()) suites.push_back(junitFabricSuite(sw));
  return suites;
}

}  // namespace gdrmesh::cli
