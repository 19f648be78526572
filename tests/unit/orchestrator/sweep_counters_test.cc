// Port counters around a sweep's rounds (docs/fabric.md, "Counters"): the fabric reader (a fake
// worker) is asked for every switch port on each round's paths before and after the round; the
// changes are rows per link and round, judged as rates over the window the ManualClock measured,
// and a link over its threshold gets the verdict "errors" and is the top suspect, named by both
// ends, with the counters' evidence. A reader that is not there is a note; the sweep goes on.
// Fake workers and a ManualClock (sweep_rig.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "coordinator/orchestrator/link_counters.h"
#include "tests/support/fabric_trees.h"
#include "tests/unit/orchestrator/sweep_rig.h"

namespace gdrmesh::testing {
namespace {

// The rig's workers h0..h3 on the four HCAs of a two-leaf, two-spine tree.
std::shared_ptr<const SweepFabric> counterRigFabric() {
  return std::make_shared<const SweepFabric>(
      twoLevelTree(2, 2, 2),
      std::map<std::string, std::string>{
          {"h0", "h01"}, {"h1", "h02"}, {"h2", "h03"}, {"h3", "h04"}},
      "tree.json");
}

// A fabric whose port leaf01[3] (the cable to spine01[1]) counts `per_read` symbol errors more
// at every read; every other port counts data only. Ports in `silent` do not answer.
struct FakeCounters {
  std::atomic<int> reads{0};
  std::atomic<size_t> ports_asked{0};
  uint64_t per_read = 1000;
  uint64_t data_per_read = 1000;  // PortXmitData's growth a read (0: no counter moves)
  std::set<std::pair<uint64_t, int>> silent;

  fabric::CounterReadOutcome read(const fabric::CounterReadRequest& req) {
    const int n = ++reads;
    ports_asked = req.ports.size();
    fabric::CounterReadOutcome out;
    for (const auto& p : req.ports) {
      fabric::PortCounterValues v;
      v.port = p;
      if (silent.count({p.guid, p.port}) != 0) {
        v.status = unavailable("port " + std::to_string(p.port) + " did not answer", "");
        out.ports.push_back(std::move(v));
        continue;
      }
      v.extended = true;
      const bool bad = p.guid == 0x1001 && p.port == 3;
      v.values[fabric::kSymbolErrorCounter] = bad ? per_read * static_cast<uint64_t>(n) : 0;
      v.values[fabric::kLinkDownedCounter] = 0;
      v.values[fabric::kPortXmitData] = data_per_read * static_cast<uint64_t>(n);
      out.ports.push_back(std::move(v));
    }
    return out;
  }
};

class CounterRunThread {
 public:
  CounterRunThread(RigCoordinator& c, std::shared_ptr<LiveSweep> s)
      : thread_([&c, s = std::move(s)] { c.runner.run(s); }) {}
  ~CounterRunThread() { thread_.join(); }

 private:
  std::thread thread_;
};

struct CounterSweep {
  std::string id;
  int rounds = 0;
  size_t tests = 0;
  std::vector<std::string> notes;
  std::vector<SuspectRecord> suspects;
  std::string verdict, reason;  // as stored: what `sweep show` reads after a restart
};

CounterSweep runCounterSweep(SweepRig& rig, SweepManagerOptions options) {
  RigCoordinator& c = rig.start(std::move(options));
  CounterSweep out;
  auto planned = c.runner.plan(rigAllPairs());
  EXPECT_TRUE(planned.ok()) << planned.status().toString();
  if (!planned.ok()) return out;
  std::shared_ptr<LiveSweep> s = *planned;
  {
    MutexLock lock(c.board.mu);
    EXPECT_TRUE(rig.store->createSweep(c.runner.recordOf(*s)).ok());
    c.board.recent[s->id] = s;
  }
  out.id = s->id;
  out.rounds = s->rounds;
  out.tests = s->plan.size();
  {
    CounterRunThread run(c, s);
    EXPECT_EQ(rig.finish(c, s->id).state, SweepState::kFinished);
  }
  auto stored = rig.store->getSweep(s->id);
  EXPECT_TRUE(stored.ok() && stored->has_value());
  if (stored.ok() && stored->has_value()) {
    out.verdict = (*stored)->verdict;
    out.reason = (*stored)->reason;
  }
  auto summary = rig.store->sweepReportSummary(s->id);
  EXPECT_TRUE(summary.ok() && summary->has_value());
  if (summary.ok() && summary->has_value()) {
    out.notes = (*summary)->notes;
    out.suspects = (*summary)->suspects;
  }
  return out;
}

bool hasNote(const std::vector<std::string>& notes, const std::string& part) {
  return std::any_of(notes.begin(), notes.end(),
                     [&](const std::string& n) { return n.find(part) != std::string::npos; });
}

std::string allNotes(const std::vector<std::string>& notes) {
  std::string out;
  for (const auto& n : notes) out += n + "\n";
  return out;
}

TEST(SweepCounters, ALinkWhoseErrorsCrossTheirRateIsTheTopSuspectNamedByBothEnds) {
  SweepRig rig;
  auto counters = std::make_shared<FakeCounters>();
  rig.workers.fake("h0").behaviour.read_counters = [counters](const auto& req) {
    return counters->read(req);
  };
  SweepManagerOptions options;
  options.fabric = counterRigFabric();
  options.paths = rig.store.get();
  options.link_counters = rig.store.get();
  options.counters.reader = "h0";
  const CounterSweep sweep = runCounterSweep(rig, options);
  // Before and after each round of the all-pairs sweep.
  ASSERT_GT(sweep.rounds, 1);
  EXPECT_EQ(counters->reads.load(), 2 * sweep.rounds);
  EXPECT_GT(counters->ports_asked.load(), 0U);

  auto rows = rig.store->sweepLinkCounters(sweep.id);
  ASSERT_TRUE(rows.ok()) << rows.status().toString();
  size_t symbol_rows = 0;
  for (const LinkCounterRecord& r : *rows) {
    EXPECT_GT(r.seconds, 0) << "the window is the ManualClock's time between the reads";
    if (r.counter != fabric::kSymbolErrorCounter) continue;
    ++symbol_rows;
    EXPECT_EQ(r.switch_name, "leaf01");
    EXPECT_EQ(r.port, 3);
    EXPECT_EQ(r.link, "leaf01[3] <-> spine01[1]");
    EXPECT_EQ(r.delta, 1000U);  // one read's growth: before -> after of one round
    EXPECT_FALSE(r.at_least);
  }
  EXPECT_GE(symbol_rows, 1U);

  auto verdicts = rig.store->sweepLinkVerdicts(sweep.id);
  ASSERT_TRUE(verdicts.ok());
  ASSERT_FALSE(verdicts->empty());
  size_t errors = 0, ok = 0;
  for (const LinkVerdictRecord& v : *verdicts) {
    if (v.link == "leaf01[3] <-> spine01[1]") {
      EXPECT_EQ(v.verdict, "errors");
      EXPECT_EQ(v.switch_guid, 0x1001U);
      EXPECT_EQ(v.remote_name, "spine01");
      EXPECT_EQ(v.remote_port, 1);
      ASSERT_FALSE(v.evidence.empty());
      EXPECT_NE(v.evidence.front().find("1,000 symbol errors on leaf01[3] during round"),
                std::string::npos)
          << v.evidence.front();
      ++errors;
    } else {
      EXPECT_EQ(v.verdict, "ok") << v.link;
      ++ok;
    }
  }
  EXPECT_EQ(errors, 1U);
  EXPECT_GT(ok, 0U);

  ASSERT_FALSE(sweep.suspects.empty()) << allNotes(sweep.notes);
  const SuspectRecord& top = sweep.suspects.front();
  EXPECT_EQ(top.kind, "link");
  EXPECT_EQ(top.name, "leaf01[3] <-> spine01[1]");
  ASSERT_GE(top.evidence.size(), 2U);
  EXPECT_NE(top.evidence.front().find("/h (threshold 120/h)"), std::string::npos)
      << top.evidence.front();
  EXPECT_TRUE(std::any_of(top.evidence.begin(), top.evidence.end(), [](const std::string& e) {
    return e.find("leaf01 port 3 (0x0000000000001001)") != std::string::npos &&
           e.find("spine01 port 1 (0x0000000000002001)") != std::string::npos;
  }));
  EXPECT_TRUE(hasNote(sweep.notes, "1 of ")) << allNotes(sweep.notes);
  // Every pair passed; the link fails the sweep, named by both ends with its evidence.
  EXPECT_EQ(sweep.verdict, "FAIL");
  EXPECT_EQ(sweep.reason.rfind("link leaf01[3] <-> spine01[1]: errors: 1,000 symbol errors on "
                               "leaf01[3] during round",
                               0),
            0U)
      << sweep.reason;
}

TEST(SweepCounters, ErrorsBelowTheirRateAreNotAVerdict) {
  SweepRig rig;
  auto counters = std::make_shared<FakeCounters>();
  counters->per_read = 1;  // 1 symbol error a round: far below 120/h only over a long window
  rig.workers.fake("h0").behaviour.read_counters = [counters](const auto& req) {
    return counters->read(req);
  };
  SweepManagerOptions options;
  options.fabric = counterRigFabric();
  options.link_counters = rig.store.get();
  options.counters.reader = "h0";
  // 1 error in a round of well under a second is above 120/h: this test's threshold is per
  // round instead (the config's "10").
  options.counters.thresholds = {{fabric::kSymbolErrorCounter, 10, 0, "test"}};
  const CounterSweep sweep = runCounterSweep(rig, options);
  auto verdicts = rig.store->sweepLinkVerdicts(sweep.id);
  ASSERT_TRUE(verdicts.ok());
  ASSERT_FALSE(verdicts->empty());
  for (const LinkVerdictRecord& v : *verdicts) {
    EXPECT_TRUE(v.verdict == "ok" || v.verdict == "not_covered") << v.link << ": " << v.verdict;
  }
  for (const SuspectRecord& s : sweep.suspects) EXPECT_NE(s.kind, "link") << s.name;
  // Ok links leave the sweep's verdict to its pairs.
  EXPECT_EQ(sweep.verdict, "PASS") << sweep.reason;
  EXPECT_EQ(sweep.reason, "");
}

TEST(SweepCounters, AResumedSweepIsJudgedWithTheCountersReadBeforeTheRestart) {
  SweepRig rig;
  auto counters = std::make_shared<FakeCounters>();
  counters->per_read = 0;  // no errors from now on
  rig.workers.fake("h0").behaviour.read_counters = [counters](const auto& req) {
    return counters->read(req);
  };
  SweepManagerOptions options;
  options.fabric = counterRigFabric();
  options.link_counters = rig.store.get();
  options.counters.reader = "h0";
  // A clean sweep, then the same spec as a coordinator that died before it ran left it,
  // with the 1,234 symbol errors its first round read on leaf01[3] stored.
  RigCoordinator& first = rig.start(options);
  auto started = first.queue.start(rigAllPairs());
  ASSERT_TRUE(started.ok()) << started.status().toString();
  const SweepProgress clean = rig.finish(first, started->id);
  EXPECT_EQ(clean.verdict, "PASS") << clean.reason;
  auto rec = rig.store->getSweep(started->id);
  ASSERT_TRUE(rec.ok() && rec->has_value());
  SweepRecord crashed = **rec;
  crashed.id = started->id + "-crashed";
  crashed.state = "running";
  crashed.finished_ms = 0;
  crashed.verdict.clear();
  crashed.reason.clear();
  crashed.verdicts_pass = crashed.verdicts_fail = crashed.verdicts_skip = 0;
  ASSERT_TRUE(rig.store->createSweep(crashed).ok());
  LinkCounterRecord row;
  row.sweep_id = crashed.id;
  row.round = 0;
  row.link = "leaf01[3] <-> spine01[1]";
  row.switch_name = "leaf01";
  row.switch_guid = 0x1001;
  row.port = 3;
  row.counter = fabric::kSymbolErrorCounter;
  row.delta = 1234;
  row.seconds = 2;
  ASSERT_TRUE(rig.store->putLinkCounters({row}).ok());

  RigCoordinator& restarted = rig.start(options);
  restarted.queue.resumeInterrupted();
  const SweepProgress p = rig.finish(restarted, crashed.id);
  EXPECT_EQ(p.state, SweepState::kFinished) << p.reason;
  EXPECT_EQ(p.verdict, "FAIL");
  EXPECT_EQ(p.reason.rfind("link leaf01[3] <-> spine01[1]: errors: 1,234 symbol errors on "
                           "leaf01[3] during round 0",
                           0),
            0U)
      << p.reason;
  auto verdicts = rig.store->sweepLinkVerdicts(crashed.id);
  ASSERT_TRUE(verdicts.ok());
  const auto bad = std::find_if(verdicts->begin(), verdicts->end(),
                                [](const auto& v) { return v.link == "leaf01[3] <-> spine01[1]"; });
  ASSERT_NE(bad, verdicts->end());
  EXPECT_EQ(bad->verdict, "errors");
  // `sweep judge` over the stored rows and links gives the same verdict.
  auto judged = restarted.reports.judge(crashed.id, "", "", VerdictFilter::kNone, {});
  ASSERT_TRUE(judged.ok()) << judged.status().toString();
  EXPECT_EQ(judged->progress.verdict, "FAIL");
  EXPECT_EQ(judged->progress.reason.rfind("link leaf01[3] <-> spine01[1]: errors", 0), 0U)
      << judged->progress.reason;
}

// Ports read before a restart whose counters did not move are judged ok after it, as without
// the restart: each left a row of 0 (before the fix they left none, and their cables had no
// verdict once the resumed sweep could not read them again).
TEST(SweepCounters, AResumedSweepJudgesThePortsReadCleanBeforeTheRestartOk) {
  SweepRig rig;
  auto counters = std::make_shared<FakeCounters>();
  counters->per_read = 0;
  counters->data_per_read = 0;  // nothing moves: no change to store but the read itself
  rig.workers.fake("h0").behaviour.read_counters = [counters](const auto& req) {
    return counters->read(req);
  };
  SweepManagerOptions options;
  options.fabric = counterRigFabric();
  options.link_counters = rig.store.get();
  options.counters.reader = "h0";
  RigCoordinator& first = rig.start(options);
  auto started = first.queue.start(rigAllPairs());
  ASSERT_TRUE(started.ok()) << started.status().toString();
  const SweepProgress clean = rig.finish(first, started->id);
  EXPECT_EQ(clean.verdict, "PASS") << clean.reason;
  auto clean_links = rig.store->sweepLinkVerdicts(started->id);
  ASSERT_TRUE(clean_links.ok());
  std::set<std::string> ok_links;
  for (const auto& v : *clean_links) {
    if (v.verdict == "ok") ok_links.insert(v.link);
  }
  ASSERT_FALSE(ok_links.empty());
  auto rows = rig.store->sweepLinkCounters(started->id);
  ASSERT_TRUE(rows.ok());
  ASSERT_FALSE(rows->empty()) << "the ports read leave rows even when nothing moved";
  for (const auto& r : *rows) EXPECT_EQ(r.delta, 0U) << r.link << " " << r.counter;

  // The same sweep as a coordinator that died after its rounds left it, its rows stored; the
  // restarted coordinator's reader is gone, so only the rows before the restart are judged.
  auto rec = rig.store->getSweep(started->id);
  ASSERT_TRUE(rec.ok() && rec->has_value());
  SweepRecord crashed = **rec;
  crashed.id = started->id + "-crashed";
  crashed.state = "running";
  crashed.finished_ms = 0;
  crashed.verdict.clear();
  crashed.reason.clear();
  crashed.verdicts_pass = crashed.verdicts_fail = crashed.verdicts_skip = 0;
  ASSERT_TRUE(rig.store->createSweep(crashed).ok());
  std::vector<LinkCounterRecord> before = *rows;
  for (auto& r : before) r.sweep_id = crashed.id;
  ASSERT_TRUE(rig.store->putLinkCounters(before).ok());
  SweepManagerOptions restarted_options = options;
  restarted_options.counters.reader = "gone";
  RigCoordinator& restarted = rig.start(restarted_options);
  restarted.queue.resumeInterrupted();
  const SweepProgress p = rig.finish(restarted, crashed.id);
  EXPECT_EQ(p.state, SweepState::kFinished) << p.reason;
  auto verdicts = rig.store->sweepLinkVerdicts(crashed.id);
  ASSERT_TRUE(verdicts.ok());
  std::map<std::string, std::string> got;
  for (const auto& v : *verdicts) got[v.link] = v.verdict;
  for (const auto& link : ok_links) EXPECT_EQ(got[link], "ok") << link;
}

TEST(SweepCounters, APortThatDoesNotAnswerIsAFindingAndTheRestIsJudged) {
  SweepRig rig;
  auto counters = std::make_shared<FakeCounters>();
  counters->silent = {{0x2001, 1}};  // spine01[1]
  rig.workers.fake("h0").behaviour.read_counters = [counters](const auto& req) {
    return counters->read(req);
  };
  SweepManagerOptions options;
  options.fabric = counterRigFabric();
  options.link_counters = rig.store.get();
  options.counters.reader = "h0";
  const CounterSweep sweep = runCounterSweep(rig, options);
  EXPECT_TRUE(hasNote(sweep.notes, "spine01[1] not read: UNAVAILABLE")) << allNotes(sweep.notes);
  ASSERT_FALSE(sweep.suspects.empty());
  EXPECT_EQ(sweep.suspects.front().name, "leaf01[3] <-> spine01[1]");
}

TEST(SweepCounters, AReaderThatIsNotThereIsANoteAndTheSweepGoesOn) {
  SweepRig rig;
  SweepManagerOptions options;
  options.fabric = counterRigFabric();
  options.link_counters = rig.store.get();
  options.counters.reader = "gone";
  const CounterSweep sweep = runCounterSweep(rig, options);
  EXPECT_TRUE(hasNote(sweep.notes, "fabric_reader gone is not online")) << allNotes(sweep.notes);
  auto results = rig.store->queryResults([&] {
    ResultQuery q;
    q.run_id = sweep.id;
    return q;
  }());
  ASSERT_TRUE(results.ok());
  EXPECT_EQ(results->size(), sweep.tests);  // every test of the sweep ran
}

TEST(SweepCounters, AReaderThatNeverAnswersHoldsTheRoundOnlyUntilItsDeadline) {
  SweepRig rig;
  // h0's commands take longer than the read's deadline: the clock ends the wait.
  rig.workers.fake("h0").behaviour.read_counters = [](const auto&) {
    return fabric::CounterReadOutcome{};
  };
  rig.workers.fake("h0").behaviour.command_seconds = 1000;
  SweepManagerOptions options;
  options.fabric = counterRigFabric();
  options.counters.reader = "h0";
  options.counters.read_timeout_seconds = 0.5;
  RigCoordinator& c = rig.start(options);
  auto planned = c.runner.plan(rigAllPairs());
  ASSERT_TRUE(planned.ok());
  std::shared_ptr<LiveSweep> s = *planned;
  {
    MutexLock lock(c.board.mu);
    ASSERT_TRUE(rig.store->createSweep(c.runner.recordOf(*s)).ok());
    c.board.recent[s->id] = s;
  }
  {
    CounterRunThread run(c, s);
    // The tests themselves stall on h0 too; the sweep still ends, bounded by the clock.
    const SweepProgress p = rig.finish(c, s->id);
    EXPECT_EQ(p.state, SweepState::kFinished);
  }
  auto summary = rig.store->sweepReportSummary(s->id);
  ASSERT_TRUE(summary.ok() && summary->has_value());
  EXPECT_TRUE(hasNote((*summary)->notes, "not read before it: ")) << allNotes((*summary)->notes);
}

TEST(SweepCounters, AReaderThatBreaksItsDeadlineHoldsTheRoundOnlyUntilTheClockPassesIt) {
  SweepRig rig;
  // h0's channel drops the read: no reply, no deadline error. The sweep's wait is on the clock
  // (issue #19), so moving the ManualClock past the read's deadline ends it.
  rig.workers.fake("h0").behaviour.hold = {"read_port_counters"};
  rig.workers.fake("h0").behaviour.ignore_deadlines = true;
  SweepManagerOptions options;
  options.fabric = counterRigFabric();
  options.counters.reader = "h0";
  options.counters.read_timeout_seconds = 0.5;
  const CounterSweep sweep = runCounterSweep(rig, options);
  EXPECT_TRUE(hasNote(sweep.notes, "not read before it: DEADLINE_EXCEEDED"))
      << allNotes(sweep.notes);
  EXPECT_TRUE(hasNote(sweep.notes, "fabric_reader h0 did not answer the counter read"))
      << allNotes(sweep.notes);
}

}  // namespace
}  // namespace gdrmesh::testing
