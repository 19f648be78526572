// Progress lines, their throttling on non-terminals, and the sweep report text.
#include "cli/output.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>

#include "cli/sweep_output.h"
#include "coordinator/service/history_convert.h"
#include "coordinator/service/sweep_convert.h"

namespace gdrmesh::cli {
namespace {

// The samples are wire messages, converted as the commands convert them: once, then printed.
SweepProgress dom(const v1::SweepProgress& p) {
  return convert::fromProto(p);
}
SweepReportData dom(const v1::SweepReport& r) {
  return convert::fromProto(r, nullptr);
}
ScheduleSummary dom(const v1::ScheduleInfo& s) {
  return convert::fromProto(s);
}

v1::SweepProgress progress(const std::string& state, uint32_t done, uint32_t total) {
  v1::SweepProgress p;
  p.set_id("s-1");
  p.set_state(state);
  p.set_tests_done(done);
  p.set_tests_total(total);
  p.set_eta_seconds(-1);
  return p;
}

TEST(FormatElapsed, SecondsMinutesHours) {
  EXPECT_EQ(formatElapsed(0), "0s");
  EXPECT_EQ(formatElapsed(42.4), "42s");
  EXPECT_EQ(formatElapsed(62), "1m02s");
  EXPECT_EQ(formatElapsed(3599), "59m59s");
  EXPECT_EQ(formatElapsed(7380), "2h03m");
  EXPECT_EQ(formatElapsed(-1), "-");
}

TEST(ProgressLine, RunningWithEta) {
  auto p = progress("running", 412, 1023);
  p.set_id("s-20261122-0001");
  p.set_tests_failed(3);
  p.set_elapsed_seconds(62);
  p.set_eta_seconds(130);
  EXPECT_EQ(
      progressLine(dom(p)),
      "sweep s-20261122-0001 running  412/1023 ran  3 not verified  elapsed 1m02s  ETA 2m10s");
}

TEST(ProgressLine, FinishedShowsVerdictNotEta) {
  auto p = progress("finished", 10, 10);
  p.set_eta_seconds(0);
  p.set_tests_skipped(2);
  p.set_verdict("FAIL");
  EXPECT_EQ(progressLine(dom(p)),
            "sweep s-1 finished  10/10 ran  0 not verified  2 skipped  elapsed 0s  verdict FAIL");
  auto c = progress("cancelled", 3, 10);
  c.set_reason("cancelled by user");
  EXPECT_NE(progressLine(dom(c)).find("(cancelled by user)"), std::string::npos);
}

TEST(ProgressThrottle, FirstEveryFivePercentAndStateChanges) {
  ProgressThrottle t;
  EXPECT_TRUE(t.shouldPrint(dom(progress("queued", 0, 100))));
  EXPECT_TRUE(t.shouldPrint(dom(progress("running", 0, 100))));  // state change
  EXPECT_FALSE(t.shouldPrint(dom(progress("running", 1, 100))));
  EXPECT_FALSE(t.shouldPrint(dom(progress("running", 4, 100))));
  EXPECT_TRUE(t.shouldPrint(dom(progress("running", 5, 100))));
  EXPECT_FALSE(t.shouldPrint(dom(progress("running", 9, 100))));
  EXPECT_TRUE(t.shouldPrint(dom(progress("running", 23, 100))));  // jumps print once
  EXPECT_FALSE(t.shouldPrint(dom(progress("running", 24, 100))));
  EXPECT_TRUE(t.shouldPrint(dom(progress("finished", 100, 100))));
  EXPECT_FALSE(t.shouldPrint(dom(progress("finished", 100, 100))));
  ProgressThrottle empty;  // no tests planned yet: no division by zero
  EXPECT_TRUE(empty.shouldPrint(dom(progress("running", 0, 0))));
  EXPECT_FALSE(empty.shouldPrint(dom(progress("running", 0, 0))));
}

v1::SweepReport sampleReport() {
  v1::SweepReport r;
  *r.mutable_progress() = progress("finished", 3, 3);
  r.mutable_progress()->set_tests_failed(1);
  r.mutable_progress()->set_verdict("FAIL");
  r.mutable_progress()->set_pattern("all-pairs");
  r.add_notes("hosts with unequal NIC counts: h3 has 1, others 2");
  auto* ok = r.add_verdicts();
  ok->set_src("h1/mlx5_0");
  ok->set_dst("h2/mlx5_0");
  ok->set_message_size(65536);
  ok->set_verdict("PASS");
  ok->set_value(190.5);
  ok->set_unit("Gb/s");
  auto* bad = r.add_verdicts();
  bad->set_src("h1/mlx5_0");
  bad->set_dst("h3/mlx5_1");
  bad->set_message_size(65536);
  bad->set_verdict("FAIL");
  bad->set_value(12.25);
  bad->set_unit("Gb/s");
  bad->add_reasons("bw 12.25 Gb/s below the class minimum 180 Gb/s");
  auto* low = r.add_suspects();
  low->set_kind("host");
  low->set_name("h1");
  low->set_score(0.2);
  auto* high = r.add_suspects();
  high->set_kind("nic");
  high->set_name("h3/mlx5_1");
  high->set_score(0.9);
  high->add_evidence("failed with 5 of 7 partners");
  return r;
}

TEST(SweepReportText, FailingVerdictsAndRankedSuspects) {
  std::string text = sweepReportText(dom(sampleReport()), ReportOptions{});
  EXPECT_NE(text.find("verdict FAIL"), std::string::npos) << text;
  EXPECT_NE(text.find("note      hosts with unequal NIC counts"), std::string::npos) << text;
  EXPECT_NE(text.find("failing verdicts (1 of 2)"), std::string::npos) << text;
  EXPECT_NE(text.find("below the class minimum"), std::string::npos) << text;
  EXPECT_EQ(text.find("190.50"), std::string::npos) << "passing verdicts are left out\n" << text;
  auto nic = text.find("1. nic h3/mlx5_1");
  auto host = text.find("2. host h1");
  ASSERT_NE(nic, std::string::npos) << text;
  ASSERT_NE(host, std::string::npos) << text;
  EXPECT_NE(text.find("- failed with 5 of 7 partners"), std::string::npos) << text;
  std::string all = sweepReportText(dom(sampleReport()), ReportOptions{true, false});
  EXPECT_NE(all.find("190.50 Gb/s"), std::string::npos) << all;
}

// A page of failing verdicts (what the table fetches): the counts speak for every verdict.
TEST(SweepReportText, CountsCoverVerdictsNotFetched) {
  v1::SweepReport r = sampleReport();
  r.mutable_verdicts()->DeleteSubrange(0, 1);  // the PASS was not fetched
  r.mutable_verdict_counts()->set_pass(523'700);
  r.mutable_verdict_counts()->set_fail(76);
  r.set_verdicts_matching(76);
  std::string text = sweepReportText(dom(r), ReportOptions{});
  EXPECT_NE(text.find("failing verdicts (76 of 523776)"), std::string::npos) << text;
  EXPECT_NE(text.find("below the class minimum"), std::string::npos) << text;
  r.clear_verdicts();  // --verdicts none
  text = sweepReportText(dom(r), ReportOptions{});
  EXPECT_NE(text.find("failing verdicts (76 of 523776)"), std::string::npos) << text;
  EXPECT_NE(text.find("not fetched"), std::string::npos) << text;
}

// Issue #22: "tests 15/15 done: 15 passed, 0 failed ... verdict FAIL". A test's words (ran, data
// verified or not) and a verdict's (PASS, FAIL) are different words.
TEST(SweepReportText, TestWordsNeverContradictTheVerdict) {
  v1::SweepReport r = sampleReport();
  r.mutable_progress()->set_tests_failed(0);
  const std::string text = sweepReportText(dom(r), ReportOptions{});
  EXPECT_NE(text.find("tests     3/3 ran: 3 data verified, 0 not verified, 0 skipped"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("verdicts  1 PASS, 1 FAIL, 0 SKIP: verdict FAIL"), std::string::npos) << text;
  EXPECT_EQ(text.find("passed"), std::string::npos) << text;
  EXPECT_EQ(text.find(" failed,"), std::string::npos) << text;
  EXPECT_EQ(sweepsTable({dom(r.progress())}).find("FAILED"), std::string::npos);
  EXPECT_NE(sweepsTable({dom(r.progress())}).find("NOT VERIFIED"), std::string::npos);
}

// Numbers even when every verdict passes: min, median, max over pairs, worst pairs and hosts.
TEST(SweepReportText, FiguresOverPairs) {
  v1::SweepReport r = sampleReport();
  auto* f = r.add_figures();
  f->set_op(v1::OP_READ);
  f->set_mode(v1::MODE_BANDWIDTH);
  f->set_message_size(1048576);
  f->set_unit("Gb/s");
  f->set_pairs(6);
  f->set_min(180.25);
  f->set_median(190.5);
  f->set_max(195);
  auto* w = f->add_worst();
  w->set_src("h1/mlx5_0");
  w->set_dst("h3/mlx5_1");
  w->set_value(180.25);
  auto* h = f->add_worst_hosts();
  h->set_host("h3");
  h->set_median(182);
  const std::string text = sweepReportText(dom(r), ReportOptions{});
  EXPECT_NE(text.find("figures over pairs"), std::string::npos) << text;
  EXPECT_NE(text.find("read  bw    1MiB  6      180.25 Gb/s  190.50 Gb/s  195.00 Gb/s  "
                      "h1/mlx5_0->h3/mlx5_1 180.25  h3 182.00"),
            std::string::npos)
      << text;
}

// A sweep on a fabric: its reason names the bad link; the links' table lists the failing ones
// worst first with both ends and the evidence; `--verdicts all` every link.
TEST(SweepReportText, LinksWorstFirstWithBothEndsAndEvidence) {
  v1::SweepReport r = sampleReport();
  auto add = [&](const std::string& a, int ap, const std::string& b, int bp, const char* verdict,
                 const char* evidence) {
    auto* l = r.add_links();
    l->set_link(a + "[" + std::to_string(ap) + "] <-> " + b + "[" + std::to_string(bp) + "]");
    l->set_switch_name(a);
    l->set_switch_guid(0x1001);
    l->set_port(static_cast<uint32_t>(ap));
    l->set_remote_name(b);
    l->set_remote_guid(0x2001);
    l->set_remote_port(static_cast<uint32_t>(bp));
    l->set_verdict(verdict);
    if (*evidence != '\0') l->add_evidence(evidence);
  };
  // As the store keeps them: by name.
  add("leaf01", 3, "spine01", 1, "ok", "");
  add("leaf01", 5, "spine01", 2, "slow_pairs", "3 of 4 slow pairs crossed it");
  add("leaf02", 3, "spine01", 3, "errors", "1,234 symbol errors on leaf02[3] during round 0");
  add("leaf02", 4, "spine02", 2, "not_covered", "no test of the sweep crossed it");
  const std::string text = sweepReportText(dom(r), ReportOptions{});
  EXPECT_NE(text.find("links (4: 2 not ok, 1 ok, 1 not covered; worst first)"), std::string::npos)
      << text;
  const size_t errors = text.find(
      "errors      leaf02[3] <-> spine01[3]  leaf02 port 3 "
      "(0x0000000000001001) <-> spine01 port 3 (0x0000000000002001)  "
      "1,234 symbol errors on leaf02[3] during round 0");
  const size_t slow = text.find("slow_pairs  leaf01[5] <-> spine01[2]");
  ASSERT_NE(errors, std::string::npos) << text;
  ASSERT_NE(slow, std::string::npos) << text;
  EXPECT_LT(errors, slow);
  EXPECT_EQ(text.find("leaf01[3] <-> spine01[1]"), std::string::npos) << text;
  EXPECT_NE(text.find("(the 2 ok and not covered links: --verdicts all lists them)"),
            std::string::npos)
      << text;
  const std::string all = sweepReportText(dom(r), ReportOptions{true, false});
  const size_t all_errors = all.find("\nerrors ");
  const size_t uncovered = all.find("\nnot_covered  leaf02[4] <-> spine02[2]");
  const size_t ok = all.find("\nok ");
  ASSERT_NE(uncovered, std::string::npos) << all;
  ASSERT_NE(ok, std::string::npos) << all;
  EXPECT_LT(all_errors, uncovered);
  EXPECT_LT(uncovered, ok);
  EXPECT_NE(all.find("leaf01[3] <-> spine01[1]"), std::string::npos) << all;
}

// An acceptance run says what each sweep of its config ran; a plain sweep prints no such table.
TEST(SweepReportText, AcceptanceRunListsItsSweeps) {
  v1::SweepReport r = sampleReport();
  r.mutable_progress()->set_pattern("config");
  for (const char* op : {"write", "read"}) {
    auto* p = r.add_parts();
    p->set_index(static_cast<uint32_t>(r.parts_size() - 1));
    p->mutable_spec()->set_pattern("all-pairs");
    p->mutable_spec()->mutable_test()->set_op(std::string(op) == "read" ? v1::OP_READ
                                                                        : v1::OP_WRITE);
    p->mutable_spec()->mutable_test()->set_mode(v1::MODE_BANDWIDTH);
    p->mutable_spec()->mutable_test()->set_iterations(50);
    p->mutable_spec()->add_sizes(4096);
    p->mutable_spec()->add_sizes(1048576);
    p->set_planned(6);
    p->set_planned_known(true);
  }
  const std::string text = sweepReportText(dom(r), ReportOptions{});
  EXPECT_NE(text.find("what ran: the config's 2 sweeps"), std::string::npos) << text;
  EXPECT_NE(text.find("1  all-pairs  one        write bw 4KiB,1MiB  50 iters  host -> host  6"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("2  all-pairs  one        read bw 4KiB,1MiB"), std::string::npos) << text;
  v1::SweepReport plain = sampleReport();
  plain.mutable_spec()->set_pattern("all-pairs");
  *plain.add_parts()->mutable_spec() = plain.spec();
  EXPECT_EQ(sweepReportText(dom(plain), ReportOptions{}).find("what ran"), std::string::npos);
}

// `gdrmesh workers` shows the labels that --select matches, in the table, JSON and CSV.
TEST(WorkersOutput, LabelsAreShown) {
  WorkerView w;
  w.name = "h1";
  w.state = "online";
  w.labels = {{"rack", "r12"}, {"zone", "a"}};
  EXPECT_NE(workersTable({w}).find("rack=r12,zone=a"), std::string::npos) << workersTable({w});
  EXPECT_EQ(workersJson({w})[0]["labels"]["rack"], "r12");
  const std::string csv = workersCsv({w});
  EXPECT_NE(csv.find(",labels\r\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",rack=r12; zone=a\r\n"), std::string::npos) << csv;
}

// A simulated result moved no byte: its integrity never reads as verified.
TEST(ResultOutput, SimulatedResultsSayNoDataMoved) {
  TestResult r;
  r.transport = TransportKind::kSimulated;
  r.status = TestStatus::kPassed;
  r.integrity.checked = true;
  r.integrity.bytes_checked = 65536;
  r.integrity.where = "simulated";
  EXPECT_EQ(integrityText(r), "simulated: no data moved");
  EXPECT_EQ(integrityCell(r), "simulated: no data moved");
  EXPECT_NE(resultDetail(r).find("integrity simulated: no data moved"), std::string::npos);
  EXPECT_EQ(resultWhole(r).find("verified"), std::string::npos) << resultWhole(r);
  EXPECT_NE(resultsTable({r}).find("simulated: no data moved"), std::string::npos);
  r.transport = TransportKind::kVerbs;
  EXPECT_EQ(integrityCell(r), "ok");
}

// Issue #22: a sweep that FAILs on its thresholds has no failed test; the list shows its
// failing verdicts beside the verdict, with the tests' own counts as they are.
TEST(SweepsTable, AFailSweepShowsItsFailingVerdicts) {
  auto p = progress("finished", 6, 6);
  p.set_verdict("FAIL");
  p.mutable_verdict_counts()->set_pass(4);
  p.mutable_verdict_counts()->set_fail(2);
  auto ok = progress("finished", 6, 6);
  ok.set_id("s-2");
  ok.set_verdict("PASS");
  ok.mutable_verdict_counts()->set_pass(6);
  const std::string t = sweepsTable({dom(p), dom(ok)});
  EXPECT_NE(t.find("FAIL (2 of 6)"), std::string::npos) << t;
  EXPECT_NE(t.find("6/6"), std::string::npos) << t;
  EXPECT_EQ(t.find("PASS ("), std::string::npos) << t;
}

TEST(SchedulesTable, LocalAndUtcTimes) {
  setenv("TZ", "UTC", 1);
  tzset();
  v1::ScheduleInfo s;
  s.set_name("nightly");
  s.set_cron("0 2 * * *");
  s.set_timezone("Europe/Berlin");
  s.set_next_run_ms(1'700'000'000'000);  // 2023-11-14T22:13:20Z
  s.set_last_state("missed");
  s.set_missed(2);
  std::string t = schedulesTable({dom(s)}, 1'700'000'000'000 - 3'600'000);
  EXPECT_NE(t.find("2023-11-14 22:13 UTC (in 1h00m)"), std::string::npos) << t;
  EXPECT_NE(t.find("2023-11-14T22:13:20Z"), std::string::npos) << t;
  EXPECT_NE(t.find("missed"), std::string::npos) << t;
  EXPECT_EQ(schedulesTable({}, 0).rfind("no schedules", 0), 0u);
}

// Issue #22: a failed run showed no reason, and LAST STATE stayed `started` after its sweep
// ended. The reason is shown; a started run shows its sweep's state and verdict.
TEST(SchedulesTable, ReasonsAndTheSweepsOwnEnd) {
  v1::ScheduleInfo failed;
  failed.set_name("nightly");
  failed.set_last_state("failed");
  failed.set_last_detail("starting the sweep failed: no workers online");
  v1::ScheduleInfo started;
  started.set_name("hourly");
  started.set_last_state("started");
  started.set_last_sweep_id("s-1");
  started.set_last_sweep_state("finished");
  started.set_last_sweep_verdict("FAIL");
  const std::string t = schedulesTable({dom(failed), dom(started)}, 0);
  EXPECT_NE(t.find("REASON"), std::string::npos) << t;
  EXPECT_NE(t.find("starting the sweep failed: no workers online"), std::string::npos) << t;
  EXPECT_NE(t.find("finished FAIL"), std::string::npos) << t;
  EXPECT_EQ(t.find("started"), std::string::npos) << t;
}

// Issue #19: `sweeps -o json` printed protobuf's JSON mapping ("created_ms": "0", "OP_WRITE");
// it prints the domain encoding shared with the API: integers as numbers, lower-case names.
TEST(JsonText, SweepDocumentsAreTheSharedEncoding) {
  auto p = progress("running", 0, 5);
  p.set_created_ms(1'700'000'000'000);
  const std::string j = jsonText(toJson(dom(p)));
  EXPECT_NE(j.find("\"tests_total\": 5"), std::string::npos) << j;
  EXPECT_NE(j.find("\"tests_failed\": 0"), std::string::npos) << j;
  EXPECT_NE(j.find("\"created_ms\": 1700000000000"), std::string::npos) << j;
  EXPECT_NE(j.find("\"created\": \"2023-11-14T22:13:20"), std::string::npos) << j;
  EXPECT_NE(j.find("\"verdict_counts\": {\n    \"pass\": 0"), std::string::npos) << j;
  v1::SweepReport r = sampleReport();
  r.mutable_verdicts(0)->set_op(v1::OP_WRITE);
  r.mutable_verdicts(0)->set_mode(v1::MODE_LATENCY);
  const std::string doc = jsonText(toJson(dom(r)));
  EXPECT_EQ(doc.find("OP_"), std::string::npos) << doc;
  EXPECT_EQ(doc.find("\"65536\""), std::string::npos) << doc;
  EXPECT_NE(doc.find("\"op\": \"write\""), std::string::npos) << doc;
  EXPECT_NE(doc.find("\"mode\": \"lat\""), std::string::npos) << doc;
  EXPECT_NE(doc.find("\"message_size\": 65536"), std::string::npos) << doc;
}

}  // namespace
}  // namespace gdrmesh::cli
