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

v1::TestResult result(const std::string& id, const std::string& dst, v1::TestStatus status) {
  v1::TestResult r;
  r.set_test_id(id);
  r.set_run_id("s-9");
  r.set_started_ms(1000);
  r.set_finished_ms(3500);
  r.set_op(v1::OP_WRITE);
  r.set_mode(v1::MODE_BANDWIDTH);
  r.set_transport(v1::TRANSPORT_VERBS);
  r.mutable_initiator()->set_worker("h1");
  r.mutable_initiator()->set_nic("mlx5_0");
  r.mutable_initiator()->set_memory(v1::MEMORY_KIND_CUDA);
  r.mutable_initiator()->set_reg_path(v1::REG_PATH_DMABUF);
  r.mutable_target()->set_worker(dst);
  r.mutable_target()->set_nic("mlx5_0");
  r.mutable_target()->set_memory(v1::MEMORY_KIND_CUDA);
  r.mutable_target()->set_reg_path(v1::REG_PATH_DMABUF);
  r.set_message_size(65536);
  r.set_status(status);
  r.mutable_measurement()->mutable_bw()->set_avg_gbps(12.5);
  return r;
}

TEST(JUnitFromReport, CasesPerPairAndSizeWithVerdicts) {
  v1::SweepReport rep;
  auto* p = rep.mutable_progress();
  p->set_id("s-9");
  p->set_pattern("all-pairs");
  p->set_state("finished");
  p->set_verdict("FAIL");
  p->set_started_ms(1'700'000'000'000);
  *rep.add_results() = result("t1", "h2", v1::TEST_STATUS_PASSED);
  auto failed = result("t2", "h3", v1::TEST_STATUS_FAILED);
  failed.set_reason("integrity: 12 bytes wrong <at 0x40>");
  *rep.add_results() = failed;
  auto skipped = result("t3", "h4", v1::TEST_STATUS_SKIPPED);
  skipped.set_reason("verbs not available on h4");
  *rep.add_results() = skipped;
  auto* v = rep.add_verdicts();
  v->set_test_id("t2");
  v->set_verdict("FAIL");
  v->set_src("h1/mlx5_0");
  v->set_dst("h3/mlx5_0");
  v->set_message_size(65536);
  v->add_reasons("bw 12.50 Gb/s below 180 Gb/s (class PIX)");
  auto* s = rep.add_suspects();
  s->set_kind("host");
  s->set_name("h3");
  s->set_score(0.8);
  s->add_evidence("failed with 3 of 3 partners");

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
  v1::SweepReport rep;
  rep.mutable_progress()->set_id("s-2");
  rep.mutable_progress()->set_state("finished");
  rep.mutable_progress()->set_verdict("PASS");
  auto a = result("t1", "h2", v1::TEST_STATUS_PASSED);
  a.set_run_id("s-2/0");
  auto b = result("t2", "h2", v1::TEST_STATUS_PASSED);
  b.set_run_id("s-2/1");
  auto c = result("t3", "h2", v1::TEST_STATUS_PASSED);  // the same pair again in run 1
  c.set_run_id("s-2/1");
  *rep.add_results() = a;
  *rep.add_results() = b;
  *rep.add_results() = c;
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
  v1::SweepReport rep;
  auto* p = rep.mutable_progress();
  p->set_id("s-7");
  p->set_pattern("config");
  p->set_state("finished");
  p->set_verdict("PASS");
  const std::pair<const char*, v1::Op> kParts[] = {{"all-pairs", v1::OP_WRITE},
                                                   {"loopback", v1::OP_READ}};
  for (const auto& [pattern, op] : kParts) {
    auto* part = rep.add_parts();
    part->set_index(static_cast<uint32_t>(rep.parts_size() - 1));
    part->mutable_spec()->set_pattern(pattern);
    part->mutable_spec()->mutable_test()->set_op(op);
    part->mutable_spec()->mutable_test()->set_mode(v1::MODE_BANDWIDTH);
    part->mutable_spec()->add_sizes(65536);
    part->set_plan_begin(rep.parts_size() == 1 ? 0 : 2);
    part->set_planned(2);
    part->set_planned_known(true);
  }
  for (int i = 0; i < 4; ++i) {
    auto r = result("t" + std::to_string(i), "h" + std::to_string(i + 2), v1::TEST_STATUS_PASSED);
    r.set_run_id("s-7");
    r.set_plan_index(i);
    if (i >= 2) r.set_op(v1::OP_READ);
    *rep.add_results() = r;
  }
  auto retest = result("t9", "h9", v1::TEST_STATUS_PASSED);  // beyond the plan: by its shape
  retest.set_plan_index(7);
  retest.set_op(v1::OP_READ);
  *rep.add_results() = retest;

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
  v1::SweepReport rep;
  rep.mutable_progress()->set_id("s-3");
  rep.mutable_progress()->set_state("cancelled");
  rep.mutable_progress()->set_reason("cancelled by alice");
  auto suites = junitFromReport(rep, "c:1");
  ASSERT_EQ(suites.size(), 1u);
  ASSERT_EQ(suites[0].cases.size(), 1u);
  EXPECT_EQ(suites[0].cases[0].outcome, JUnitCase::Outcome::kFail);
  EXPECT_EQ(suites[0].cases[0].message, "sweep cancelled: cancelled by alice");
}

// Issue #20: a sweep on a discovered fabric with a fabric reader gives a `fabric` suite, one case
// per link with a verdict; a link with errors over their threshold fails, naming both ends.
TEST(JUnitFromReport, AFabricSuiteWithACasePerLinkAndAFailureForABadOne) {
  v1::SweepReport rep;
  rep.mutable_progress()->set_id("s-9");
  rep.mutable_progress()->set_state("finished");
  rep.mutable_progress()->set_verdict("PASS");
  auto* bad = rep.add_links();
  bad->set_link("leaf07[12] <-> spine02[7]");
  bad->set_switch_name("leaf07");
  bad->set_switch_guid(0x1007);
  bad->set_port(12);
  bad->set_remote_name("spine02");
  bad->set_remote_guid(0x2002);
  bad->set_remote_port(7);
  bad->set_verdict("errors");
  bad->add_evidence("1,234 symbol errors on leaf07[12] during round 1 = 4,442/h (threshold 120/h)");
  auto* ok = rep.add_links();
  ok->set_link("leaf01[3] <-> spine01[1]");
  ok->set_verdict("ok");
  auto* uncovered = rep.add_links();
  uncovered->set_link("leaf02[4] <-> spine02[2]");
  uncovered->set_verdict("not_covered");
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
