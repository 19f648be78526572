// The counters' arithmetic (common/fabric/counters.h) and judgement (link_counters.h): deltas of
// saturating and wrapping counters, never negative; thresholds as rates over the window; the
// config's threshold syntax.
#include "coordinator/orchestrator/link_counters.h"

#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <string>
#include <vector>

#include "tests/support/fabric_trees.h"

namespace gdrmesh::testing {
namespace {

const fabric::CounterKind& kindOf(const char* name) {
  const fabric::CounterKind* k = fabric::counterKind(name);
  EXPECT_NE(k, nullptr) << name;
  return *k;
}

TEST(CounterDelta, ASaturatedErrorCounterIsALowerBoundNeverNegative) {
  const auto& sym = kindOf(fabric::kSymbolErrorCounter);  // 16 bits
  auto d = fabric::counterDelta(sym, false, 100, 1334);
  EXPECT_EQ(d.value, 1234U);
  EXPECT_FALSE(d.at_least);
  d = fabric::counterDelta(sym, false, 65000, 65535);
  EXPECT_EQ(d.value, 535U);
  EXPECT_TRUE(d.at_least);
  EXPECT_EQ(fabric::deltaText(d), ">= 535");
  // Went back (reset by someone between the reads): at least what it counted since.
  d = fabric::counterDelta(sym, false, 500, 20);
  EXPECT_EQ(d.value, 20U);
  EXPECT_TRUE(d.at_least);
  const auto& downed = kindOf(fabric::kLinkDownedCounter);  // 8 bits
  d = fabric::counterDelta(downed, false, 3, 255);
  EXPECT_EQ(d.value, 252U);
  EXPECT_TRUE(d.at_least);
  const auto& integ = kindOf(fabric::kLocalLinkIntegrityErrors);  // 4 bits
  EXPECT_TRUE(fabric::counterDelta(integ, false, 0, 15).at_least);
  EXPECT_FALSE(fabric::counterDelta(integ, false, 0, 14).at_least);
}

TEST(CounterDelta, ExtendedDataCountersWrapAndThirtyTwoBitOnesSaturate) {
  const auto& data = kindOf(fabric::kPortXmitData);
  const uint64_t top = std::numeric_limits<uint64_t>::max();
  auto d = fabric::counterDelta(data, true, top - 9, 20);  // wrapped
  EXPECT_EQ(d.value, 30U);
  EXPECT_FALSE(d.at_least);
  d = fabric::counterDelta(data, false, 10, 0xffffffffULL);  // PortCounters' 32-bit: stopped
  EXPECT_TRUE(d.at_least);
  EXPECT_EQ(fabric::groupedNumber(4442), "4,442");
  EXPECT_EQ(fabric::groupedNumber(1234567), "1,234,567");
  EXPECT_EQ(fabric::groupedNumber(12), "12");
}

LinkCounterRecord symbolRow(uint64_t delta, double seconds) {
  LinkCounterRecord r;
  r.sweep_id = "s";
  r.round = 1;
  r.switch_name = "leaf07";
  r.switch_guid = 7;
  r.port = 12;
  r.link = "leaf07[12] <-> spine02[7]";
  r.counter = fabric::kSymbolErrorCounter;
  r.delta = delta;
  r.seconds = seconds;
  return r;
}

TEST(JudgeCounters, RatesAreJudgedOverTheWindowNeverAnyError) {
  const auto thresholds = defaultCounterThresholds();
  // 1,234 symbol errors in 1,000 s = 4,442/h: over 120/h.
  auto over = judgeCounters({symbolRow(1234, 1000)}, thresholds);
  ASSERT_EQ(over.size(), 1U);
  EXPECT_EQ(over[0].text,
            "1,234 symbol errors on leaf07[12] during round 1 = 4,442/h (threshold 120/h)");
  // 3 in 10 minutes = 18/h: under.
  EXPECT_TRUE(judgeCounters({symbolRow(3, 600)}, thresholds).empty());
  // Link error recovery: 5 a minute.
  LinkCounterRecord rec = symbolRow(6, 120);
  rec.counter = fabric::kLinkErrorRecoveryCounter;
  EXPECT_TRUE(judgeCounters({rec}, thresholds).empty());  // 3/min
  rec.delta = 12;
  rec.seconds = 60;
  EXPECT_EQ(judgeCounters({rec}, thresholds).size(), 1U);  // 12/min
  // LinkDowned: any increase.
  LinkCounterRecord down = symbolRow(1, 3600);
  down.counter = fabric::kLinkDownedCounter;
  ASSERT_EQ(judgeCounters({down}, thresholds).size(), 1U);
  // Per window: PortRcvErrors above 10.
  LinkCounterRecord rcv = symbolRow(10, 1);
  rcv.counter = fabric::kPortRcvErrors;
  EXPECT_TRUE(judgeCounters({rcv}, thresholds).empty());
  rcv.delta = 11;
  EXPECT_EQ(judgeCounters({rcv}, thresholds).size(), 1U);
  // A data counter has no threshold.
  LinkCounterRecord data = symbolRow(1'000'000'000, 1);
  data.counter = fabric::kPortXmitData;
  EXPECT_TRUE(judgeCounters({data}, thresholds).empty());
  // A saturated count says so.
  LinkCounterRecord sat = symbolRow(65535, 10);
  sat.at_least = true;
  over = judgeCounters({sat}, thresholds);
  ASSERT_EQ(over.size(), 1U);
  EXPECT_EQ(over[0].text.rfind(">= 65,535 symbol errors", 0), 0U) << over[0].text;
}

TEST(CounterThresholds, TheConfigSyntaxIsACountPerPeriodOrPerRound) {
  auto t = parseCounterThreshold("SymbolErrorCounter", "120/h", "f");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->count, 120);
  EXPECT_EQ(t->per_seconds, 3600);
  EXPECT_EQ(thresholdText(*t), "120/h");
  t = parseCounterThreshold("LinkErrorRecoveryCounter", "5/min", "f");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->per_seconds, 60);
  t = parseCounterThreshold("PortRcvErrors", "10", "f");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->per_seconds, 0);
  EXPECT_EQ(thresholdText(*t), "10 per round");
  auto bad = parseCounterThreshold("PortRcvErrors", "ten", "fabric_thresholds.PortRcvErrors");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("fabric_thresholds.PortRcvErrors"), std::string::npos);
  EXPECT_FALSE(parseCounterThreshold("PortRcvErrors", "10/fortnight", "f").ok());
  EXPECT_FALSE(parseCounterThreshold("PortRcvErrors", "-1", "f").ok());
}

TEST(RoundCounterPorts, EveryHopsInAndOutPortBothWays) {
  const SweepFabric fab(twoLevelTree(2, 2, 2),
                        {{"h0", "h01"}, {"h1", "h02"}, {"h2", "h03"}, {"h3", "h04"}}, "t");
  std::vector<WorkerStatus> workers(4);
  for (int i = 0; i < 4; ++i) {
    workers[static_cast<size_t>(i)].name = "h" + std::to_string(i);
    workers[static_cast<size_t>(i)].state = "online";
  }
  const fabric::HostMatch m = fab.match(workers);
  EndpointSelector a, b;
  a.worker = "h0";
  b.worker = "h3";  // other leaf: leaf01 -> spine -> leaf02, and back
  size_t untraced = 0;
  const auto ports = roundCounterPorts(fab, m, {{a, b}}, &untraced);
  EXPECT_EQ(untraced, 0U);
  // Forward: leaf01 in 1 out up, spine in/out, leaf02 in/out 2; and the reverse path.
  std::set<std::pair<uint64_t, int>> seen;
  for (const auto& p : ports) seen.emplace(p.guid, p.port);
  EXPECT_TRUE(seen.count({0x1001, 1}));  // h01's leaf port
  EXPECT_TRUE(seen.count({0x1002, 2}));  // h04's leaf port
  EXPECT_GE(ports.size(), 6U);
  for (const auto& p : ports) EXPECT_NE(p.lid, 0) << "a switch's LID addresses its ports";
  EndpointSelector nobody;
  nobody.worker = "nobody";
  (void)roundCounterPorts(fab, m, {{a, nobody}}, &untraced);
  EXPECT_EQ(untraced, 1U);
}

TEST(CableOf, NamedFromTheSmallerEndBothWays) {
  const fabric::Fabric f = twoLevelTree(2, 2, 2);
  EXPECT_EQ(cableOf(f, 0x1001, 3).name, "leaf01[3] <-> spine01[1]");
  EXPECT_EQ(cableOf(f, 0x2001, 1).name, "leaf01[3] <-> spine01[1]");
}

LinkVerdictRecord linkVerdict(const std::string& link, const std::string& verdict,
                              std::vector<std::string> evidence = {}) {
  LinkVerdictRecord v;
  v.sweep_id = "s";
  v.link = link;
  v.verdict = verdict;
  v.evidence = std::move(evidence);
  return v;
}

TEST(JudgeSweepLinks, ALinkWithErrorsFailsThePassingSweepNamingBothEndsAndTheEvidence) {
  SweepVerdict v;  // every pair passed
  judgeSweepLinks({linkVerdict("leaf01[3] <-> spine01[1]", "ok"),
                   linkVerdict("leaf01[5] <-> spine01[2]", "errors",
                               {"1,234 symbol errors on leaf01[5] during round 0 = 4,442/h "
                                "(threshold 120/h)",
                                "ends: ..."}),
                   linkVerdict("leaf02[3] <-> spine02[2]", "not_covered")},
                  &v);
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(v.reason,
            "link leaf01[5] <-> spine01[2]: errors: 1,234 symbol errors on leaf01[5] during "
            "round 0 = 4,442/h (threshold 120/h)");
}

TEST(JudgeSweepLinks, TheWorstLinkIsNamedFirstAndTheOthersCountedBeforeAnEarlierReason) {
  SweepVerdict v;
  v.pass = false;
  v.reason = "outlier host h3";
  judgeSweepLinks({linkVerdict("a[1] <-> b[1]", "slow_pairs", {"3 of 4 slow pairs crossed it"}),
                   linkVerdict("c[1] <-> d[1]", "errors,slow_pairs", {"12 link downed"}),
                   linkVerdict("e[1] <-> f[1]", "errors")},
                  &v);
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(v.reason,
            "link c[1] <-> d[1]: errors,slow_pairs: 12 link downed (and 2 more links not ok); "
            "outlier host h3");
  // Slow pairs alone fail it too, and name the link.
  SweepVerdict slow;
  judgeSweepLinks({linkVerdict("a[1] <-> b[1]", "slow_pairs", {"3 of 4 slow pairs crossed it"})},
                  &slow);
  EXPECT_FALSE(slow.pass);
  EXPECT_EQ(slow.reason, "link a[1] <-> b[1]: slow_pairs: 3 of 4 slow pairs crossed it");
}

TEST(JudgeSweepLinks, OkAndUncoveredLinksLeaveTheVerdictAsItWas) {
  SweepVerdict v;
  v.notes = {"n"};
  judgeSweepLinks({linkVerdict("a[1] <-> b[1]", "ok"), linkVerdict("c[1] <-> d[1]", "not_covered")},
                  &v);
  EXPECT_TRUE(v.pass);
  EXPECT_EQ(v.reason, "");
  SweepVerdict failed;
  failed.pass = false;
  judgeSweepLinks({}, &failed);
  EXPECT_FALSE(failed.pass);
  EXPECT_EQ(failed.reason, "");
  EXPECT_EQ(fabric::linkVerdictSeverity("errors,slow_pairs"), 4);
  EXPECT_GT(fabric::linkVerdictSeverity("errors"), fabric::linkVerdictSeverity("slow_pairs"));
  EXPECT_GT(fabric::linkVerdictSeverity("slow_pairs"), fabric::linkVerdictSeverity("not_covered"));
  EXPECT_GT(fabric::linkVerdictSeverity("not_covered"), fabric::linkVerdictSeverity("ok"));
}

TEST(JudgeLinks, ACableNoTestCrossedEitherWayIsNotCoveredAndTheWorstComeFirst) {
  const SweepFabric fab(twoLevelTree(2, 2, 2), {}, "t");
  // leaf01[3] <-> spine01[1] read; leaf02[4] <-> spine02[2] crossed neither way; leaf01[4] <->
  // spine02[1] crossed one way only (still covered); leaf02[3] <-> spine01[2] has errors.
  LinkCounterRecord row;
  row.sweep_id = "s";
  row.switch_name = "leaf02";
  row.switch_guid = 0x1002;
  row.port = 3;
  row.link = cableOf(fab.fabric(), 0x1002, 3).name;
  row.counter = fabric::kSymbolErrorCounter;
  row.delta = 1234;
  row.seconds = 1;
  CounterExcess e;
  e.row = row;
  e.text = "1,234 symbol errors";
  const std::vector<DirectedLink> never{{0x1002, 4}, {0x2002, 2}, {0x1001, 4}};
  const LinkJudgement j = judgeLinks(fab, "s", {{0x1001, 3}, {0x1002, 3}}, {e}, {}, never);
  std::map<std::string, std::string> verdict;
  for (const auto& v : j.verdicts) verdict[v.link] = v.verdict;
  EXPECT_EQ(verdict[cableOf(fab.fabric(), 0x1001, 3).name], "ok");
  EXPECT_EQ(verdict[cableOf(fab.fabric(), 0x1002, 3).name], "errors");
  EXPECT_EQ(verdict[cableOf(fab.fabric(), 0x1002, 4).name], "not_covered");
  EXPECT_EQ(verdict.count(cableOf(fab.fabric(), 0x1001, 4).name), 0U);
  ASSERT_EQ(j.verdicts.size(), 3U);
  EXPECT_EQ(j.verdicts.front().verdict, "errors");
  EXPECT_EQ(j.verdicts.back().verdict, "ok");
}

// Without a fabric_reader, a cable the slow pairs share is still judged: slow_pairs from the
// paths alone, its evidence link_blame's plus that no counters were read, and it fails the sweep
// with a reason naming it by both ends.
TEST(LinkVerdictsFromPaths, ACableTheSlowPairsShareIsSlowPairsAndSaysNoCountersWereRead) {
  const SweepFabric fab(twoLevelTree(2, 2, 2), {}, "t");
  BlamedLink b;
  b.suspect.kind = "link";
  b.suspect.name = cableOf(fab.fabric(), 0x1001, 3).name;
  b.suspect.evidence = {"4 of 4 slow or failed pairs crossed it"};
  b.links = {{0x1001, 3}, {0x2001, 1}};
  EXPECT_TRUE(linkVerdictsFromPaths(fab, "s", {}).empty()) << "nothing blamed, nothing judged";
  const std::vector<LinkVerdictRecord> links = linkVerdictsFromPaths(fab, "s", {b});
  ASSERT_EQ(links.size(), 1U);
  EXPECT_EQ(links[0].link, "leaf01[3] <-> spine01[1]");
  EXPECT_EQ(links[0].verdict, "slow_pairs");
  EXPECT_EQ(links[0].sweep_id, "s");
  ASSERT_EQ(links[0].evidence.size(), 2U);
  EXPECT_EQ(links[0].evidence[0], "4 of 4 slow or failed pairs crossed it");
  EXPECT_EQ(links[0].evidence[1], kNoCountersEvidence);
  SweepVerdict v;
  v.pass = false;
  v.reason = "4 of 12 pairs failed";
  judgeSweepLinks(links, &v);
  EXPECT_EQ(v.reason,
            "link leaf01[3] <-> spine01[1]: slow_pairs: 4 of 4 slow or failed pairs crossed it; "
            "4 of 12 pairs failed");
}

}  // namespace
}  // namespace gdrmesh::testing
