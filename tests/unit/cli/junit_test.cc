// JUnit XML: escaping, document shape, and the mapping from a sweep report.
#include "cli/junit.h"

#include <gtest/gtest.h>

namespace gdrmesh::cli {
namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (auto pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

TEST(XmlEscape, EscapesMarkupAndDropsControlCharacters) {
  EXPECT_EQ(xmlEscape("a & b < c > d \"e\" 'f'"),
            "a &amp; b &lt; c &gt; d &quot;e&quot; &apos;f&apos;");
  EXPECT_EQ(xmlEscape(std::string("x\x01y\x1bz\x7f", 6)), "xyz");
  EXPECT_EQ(xmlEscape(std::string("nul\0here", 8)), "nulhere");
  EXPECT_EQ(xmlEscape("tab\tnl\ncr\r"), "tab\tnl\ncr\r");
  EXPECT_EQ(xmlEscape("µs ok"), "µs ok");  // UTF-8 passes through
  EXPECT_EQ(xmlEscape("&amp;"), "&amp;amp;");
}

JUnitCase makeCase(const std::string& name, double seconds) {
  JUnitCase c;
  c.classname = "gdrmesh.pairs";
  c.name = name;
  c.time_seconds = seconds;
  return c;
}

TEST(RenderJUnit, CountsAndElements) {
  JUnitSuite s;
  s.name = "s-1 <pairs>";
  s.timestamp = "2026-11-22T15:11:07";
  s.properties = {{"sweep_id", "s-1"}, {"coordinator", "c:7070"}};
  JUnitCase pass = makeCase("a -> b 64KiB write bw", 1.5);
  JUnitCase fail = makeCase("a -> c 64KiB write bw", 2);
  fail.outcome = JUnitCase::Outcome::kFail;
  fail.message = "bw 1 Gb/s < 100 Gb/s";
  fail.detail = "figures: x\x02y";
  fail.system_out = "transport verbs";
  JUnitCase skip = makeCase("a -> d 64KiB write bw", 0);
  skip.outcome = JUnitCase::Outcome::kSkip;
  skip.message = "no verbs on d";
  s.cases = {pass, fail, skip};
  std::string xml = renderJUnit({s});
  EXPECT_EQ(xml.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites", 0), 0u) << xml;
  EXPECT_NE(xml.find("<testsuite name=\"s-1 &lt;pairs&gt;\" tests=\"3\" failures=\"1\" "
                     "errors=\"0\" skipped=\"1\""),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<property name=\"coordinator\" value=\"c:7070\"/>"), std::string::npos);
  EXPECT_NE(xml.find("<failure message=\"bw 1 Gb/s &lt; 100 Gb/s\" type=\"FAIL\">figures: xy"
                     "</failure>"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<skipped message=\"no verbs on d\"/>"), std::string::npos) << xml;
  EXPECT_NE(xml.find("<system-out>transport verbs</system-out>"), std::string::npos) << xml;
  EXPECT_NE(xml.find("time=\"1.500\""), std::string::npos) << xml;
  EXPECT_EQ(count(xml, "<testcase "), 3u);
  EXPECT_EQ(count(xml, "</testsuite>"), 1u);
}

TestResult result(const std::string& id, const std::string& dst, TestStatus status) {
  TestResult r;
  r.test_id = id;
  r.run_id = "s-9";
  r.started_ms = 1000;
  r.finished_ms = 3500;
  r.op = Op::kWrite;
  r.mode = Mode::kBandwidth;
  r.transport = TransportKind::kVerbs;
  r.initiator.worker = "h1";
  r.target.worker = dst;
  for (EndpointRecord* e : {&r.initiator, &r.target}) {
    e->nic = "mlx5_0";
    e->memory = MemoryKind::kCuda;
    e->reg_path = RegPath::kDmabuf;
  }
  r.message_size = 65536;
  r.status = status;
  r.measurement.has_bandwidth = true;
  r.measurement.bw.avg_gbps = 12.5;
  return r;
}

TEST(JUnitFromReport, CasesPerPairAndSizeWithVerdicts) {
  SweepReportData rep;
  rep.progress.id = "s-9";
  rep.progress.pattern = "all-pairs";
  rep.progress.state = SweepState::kFinished;
  rep.progress.verdict = "FAIL";
  rep.progress.started_ms = 1'700'000'000'000;
  rep.results.push_back(result("t1", "h2", TestStatus::kPassed));
  rep.results.push_back(result("t2", "h3", TestStatus::kFailed));
  rep.results.back().reason = "integrity: 12 bytes wrong <at 0x40>";
  rep.results.push_back(result("t3", "h4", TestStatus::kSkipped));
  rep.results.back().reason = "verbs not available on h4";
  PairVerdict v;
  v.test_id = "t2";
  v.verdict = VerdictKind::kFail;
  v.src = "h1/mlx5_0";
  v.dst = "h3/mlx5_0";
  v.message_size = 65536;
  v.reasons = {"bw 12.50 Gb/s below 180 Gb/s (class PIX)"};
  rep.verdicts.push_back(v);
  rep.suspects.push_back(Suspect{"host", "h3", 0.8, {"failed with 3 of 3 partners"}});

  auto suites = junitFromReport(rep, "coord:7070");
  ASSERT_EQ(suites.size(), 1u);
  const auto& suite = suites[0];
  EXPECT_EQ(suite.name, "s-9 all-pairs");
  ASSERT_EQ(suite.cases.size(), 4u);  // sweep verdict + 3 results
  EXPECT_EQ(suite.cases[0].name, "sweep verdict");
  EXPECT_EQ(suite.cases[0].outcome, JUnitCase::Outcome::kFail);
  EXPECT_NE(suite.cases[0].detail.find("suspect host h3"), std::string::npos);
  EXPECT_EQ(suite.cases[1].name, "h1/mlx5_0 -> h2/mlx5_0 64KiB write bw");
  EXPECT_EQ(suite.cases[1].classname, "gdrmesh.all-pairs");
  EXPECT_EQ(suite.cases[1].outcome, JUnitCase::Outcome::kPass);
  EXPECT_DOUBLE_EQ(suite.cases[1].time_seconds, 2.5);
  EXPECT_NE(suite.cases[1].system_out.find("verbs cuda(dmabuf)->cuda(dmabuf) GPUDirect"),
            std::string::npos)
      << suite.cases[1].system_out;
  const auto& f = suite.cases[2];
  EXPECT_EQ(f.outcome, JUnitCase::Outcome::kFail);
  EXPECT_EQ(f.message, "bw 12.50 Gb/s below 180 Gb/s (class PIX)");
  EXPECT_NE(f.detail.find("figures: bandwidth avg 12.500 Gb/s"), std::string::npos) << f.detail;
  EXPECT_NE(f.detail.find("data: not verified (status FAILED): integrity: 12 bytes wrong"),
            std::string::npos)
      << f.detail;
  EXPECT_EQ(suite.cases[3].outcome, JUnitCase::Outcome::kSkip);
  EXPECT_EQ(suite.cases[3].message, "verbs not available on h4");
  bool has_coordinator = false;
  for (const auto& [k, val] : suite.properties) {
    has_coordinator |= k == "coordinator" && val == "coord:7070";
  }
  EXPECT_TRUE(has_coordinator);

  std::string xml = renderJUnit(suites);
  EXPECT_NE(xml.find("12 bytes wrong &lt;at 0x40&gt;"), std::string::npos) << xml;
}

TEST(JUnitFromReport, PassingSweepHasNoFailuresAndRunsBecomeSuites) {
  SweepReportData rep;
  rep.spec.pattern_from_config = true;
  rep.progress.id = "s-2";
  rep.progress.state = SweepState::kFinished;
  rep.progress.verdict = "PASS";
  for (const auto& [id, run] : {std::pair<const char*, const char*>{"t1", "s-2/0"},
                                {"t2", "s-2/1"},
                                {"t3", "s-2/1"}}) {  // t3: the same pair again in run 1
    rep.results.push_back(result(id, "h2", TestStatus::kPassed));
    rep.results.back().run_id = run;
  }
  auto suites = junitFromReport(rep, "c:1");
  ASSERT_EQ(suites.size(), 3u);  // the sweep's own (verdict) + two runs
  EXPECT_EQ(suites[0].name, "s-2 config");
  EXPECT_EQ(suites[1].name, "s-2/0 config");
  ASSERT_EQ(suites[2].cases.size(), 2u);
  EXPECT_NE(suites[2].cases[0].name, suites[2].cases[1].name);  // duplicates numbered
  std::string xml = renderJUnit(suites);
  EXPECT_NE(xml.find("<testsuites name=\"gdrmesh\" tests=\"4\" failures=\"0\""), std::string::npos)
      << xml;
}

// Issue #22: an acceptance run gave one <testsuite> with classname gdrmesh.config; the README
// promises one per sweep of the config, classname gdrmesh.<its pattern>.
TEST(JUnitFromReport, OneSuitePerSweepOfTheConfig) {
  SweepReportData rep;
  rep.progress.id = "s-7";
  rep.progress.pattern = "config";
  rep.progress.state = SweepState::kFinished;
  rep.progress.verdict = "PASS";
  const std::pair<SweepPattern, Op> kParts[] = {{SweepPattern::kAllPairs, Op::kWrite},
                                                {SweepPattern::kLoopback, Op::kRead}};
  for (const auto& [pattern, op] : kParts) {
    SweepPart part;
    part.index = static_cast<uint32_t>(rep.parts.size());
    part.spec.pattern = pattern;
    part.spec.test.op = op;
    part.spec.test.mode = Mode::kBandwidth;
    part.spec.sizes = {65536};
    part.plan_begin = rep.parts.empty() ? 0 : 2;
    part.planned = 2;
    part.planned_known = true;
    rep.parts.push_back(part);
  }
  for (int i = 0; i < 4; ++i) {
    auto r = result("t" + std::to_string(i), "h" + std::to_string(i + 2), TestStatus::kPassed);
    r.run_id = "s-7";
    r.plan_index = i;
    if (i >= 2) r.op = Op::kRead;
    rep.results.push_back(r);
  }
  auto retest = result("t9", "h9", TestStatus::kPassed);  // beyond the plan: by its shape
  retest.plan_index = 7;
  retest.op = Op::kRead;
  rep.results.push_back(retest);

  auto suites = junitFromReport(rep, "c:1");
  ASSERT_EQ(suites.size(), 2u);
  EXPECT_EQ(suites[0].name, "s-7 #1 all-pairs write bw");
  EXPECT_EQ(suites[1].name, "s-7 #2 loopback read bw");
  ASSERT_EQ(suites[0].cases.size(), 3u);  // the sweep verdict + 2
  EXPECT_EQ(suites[0].cases[0].name, "sweep verdict");
  EXPECT_EQ(suites[0].cases[1].classname, "gdrmesh.all-pairs");
  ASSERT_EQ(suites[1].cases.size(), 3u);
  for (const auto& c : suites[1].cases) EXPECT_EQ(c.classname, "gdrmesh.loopback") << c.name;
  const std::string xml = renderJUnit(suites);
  EXPECT_EQ(count(xml, "<testsuite "), 2u) << xml;
  EXPECT_EQ(xml.find("gdrmesh.config"), std::string::npos) << xml;
}

TEST(JUnitFromReport, UnfinishedSweepFailsWithItsReason) {
  SweepReportData rep;
  rep.progress.id = "s-3";
  rep.progress.state = SweepState::kCancelled;
  rep.progress.reason = "cancelled by alice";
  auto suites = junitFromReport(rep, "c:1");
  ASSERT_EQ(suites.size(), 1u);
  ASSERT_EQ(suites[0].cases.size(), 1u);
  EXPECT_EQ(suites[0].cases[0].outcome, JUnitCase::Outcome::kFail);
  EXPECT_EQ(suites[0].cases[0].message, "sweep cancelled: cancelled by alice");
}

// A sweep the CLI lost (it stopped following, or its progress stream failed) still gives CI a
// document that fails: its state reads "unknown" and the sweep verdict says why.
TEST(JUnitFromReport, ALostSweepReadsUnknownAndFailsSayingWhy) {
  SweepReportData rep;
  rep.spec.pattern_from_config = true;
  rep.progress.id = "s-4";
  rep.progress.state = SweepState::kRunning;
  rep.progress.reason = "not this";
  auto suites =
      junitFromReport(rep, "c:1", "the CLI stopped following (interrupted); the sweep goes on");
  ASSERT_EQ(suites.size(), 1u);
  EXPECT_EQ(suites[0].name, "s-4 config");
  ASSERT_EQ(suites[0].cases.size(), 1u);
  EXPECT_EQ(suites[0].cases[0].outcome, JUnitCase::Outcome::kFail);
  EXPECT_EQ(suites[0].cases[0].message,
            "sweep unknown: the CLI stopped following (interrupted); the sweep goes on");
  EXPECT_EQ(suites[0].cases[0].detail.rfind("sweep s-4 unknown, tests ", 0), 0u)
      << suites[0].cases[0].detail;
  bool state_unknown = false;
  for (const auto& [k, val] : suites[0].properties)
    state_unknown |= k == "state" && val == "unknown";
  EXPECT_TRUE(state_unknown);
}

// Issue #20: a sweep on a discovered fabric with a fabric reader gives a `fabric` suite, one case
// per link with a verdict; a link with errors over their threshold fails, naming both ends.
TEST(JUnitFromReport, AFabricSuiteWithACasePerLinkAndAFailureForABadOne) {
  SweepReportData rep;
  rep.progress.id = "s-9";
  rep.progress.state = SweepState::kFinished;
  rep.progress.verdict = "PASS";
  LinkVerdictRecord bad;
  bad.link = "leaf07[12] <-> spine02[7]";
  bad.switch_name = "leaf07";
  bad.switch_guid = 0x1007;
  bad.port = 12;
  bad.remote_name = "spine02";
  bad.remote_guid = 0x2002;
  bad.remote_port = 7;
  bad.verdict = "errors";
  bad.evidence = {"1,234 symbol errors on leaf07[12] during round 1 = 4,442/h (threshold 120/h)"};
  rep.links.push_back(bad);
  LinkVerdictRecord ok;
  ok.link = "leaf01[3] <-> spine01[1]";
  ok.verdict = "ok";
  rep.links.push_back(ok);
  LinkVerdictRecord uncovered;
  uncovered.link = "leaf02[4] <-> spine02[2]";
  uncovered.verdict = "not_covered";
  rep.links.push_back(uncovered);
  auto suites = junitFromReport(rep, "c:1");
  ASSERT_EQ(suites.size(), 2u);
  const JUnitSuite& fab = suites[1];
  EXPECT_EQ(fab.name, "s-9 fabric");
  ASSERT_EQ(fab.cases.size(), 3u);
  // A link no test crossed is skipped: nothing is known of it, it is no failure.
  EXPECT_EQ(fab.cases[2].outcome, JUnitCase::Outcome::kSkip);
  EXPECT_NE(fab.cases[2].message.find("not covered"), std::string::npos);
  EXPECT_EQ(fab.cases[0].classname, "gdrmesh.fabric");
  EXPECT_EQ(fab.cases[0].name, "leaf07[12] <-> spine02[7]");
  EXPECT_EQ(fab.cases[0].outcome, JUnitCase::Outcome::kFail);
  EXPECT_NE(fab.cases[0].message.find("1,234 symbol errors"), std::string::npos);
  EXPECT_NE(fab.cases[0].system_out.find("leaf07 port 12 (0x0000000000001007)"), std::string::npos);
  EXPECT_NE(fab.cases[0].system_out.find("spine02 port 7 (0x0000000000002002)"), std::string::npos);
  EXPECT_EQ(fab.cases[1].outcome, JUnitCase::Outcome::kPass);
  const std::string xml = renderJUnit(suites);
  EXPECT_NE(xml.find("failures=\"1\""), std::string::npos) << xml;
}

}  // namespace
}  // namespace gdrmesh::cli
