// The Scheduler with a ManualClock: firing across DST, missed runs, overlap, failures, stop.
#include "coordinator/orchestrator/scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "tests/unit/scheduler/test_util.h"

namespace gdrmesh {
namespace {

using testing::iso;
using testing::utcMs;

class FakeStarter : public SweepStarter {
 public:
  explicit FakeStarter(const Clock& clock) : clock_(clock) {}
  bool sweepRunning() const override { return running; }
  Result<std::string> startScheduledSweep(const ScheduleConfig& s) override {
    if (on_start) on_start();
    if (!fail.empty()) return unavailable(fail, "start a worker");
    started.push_back(s.name);
    started_at.push_back(clock_.unixMs());
    if (stay_running) running = true;
    return "s-" + std::to_string(started.size());
  }
  std::vector<std::string> workersNotOnline(const ScheduleConfig& /*s*/) const override {
    ++asked;
    return missing;
  }

  bool running = false;       // a sweep is running now
  bool stay_running = false;  // a started sweep keeps running (until the test clears `running`)
  std::string fail;           // non-empty: starting fails with this message
  std::function<void()> on_start;
  std::vector<std::string> missing;  // expected workers not online now
  mutable int asked = 0;
  std::vector<std::string> started;
  std::vector<int64_t> started_at;  // wall time of each start

 private:
  const Clock& clock_;
};

class FakeLog : public ScheduleLog {
 public:
  Status record(const ScheduleRun& run) override {
    if (fail_record) return unavailable("database is locked", "retry");
    runs.push_back(run);
    return Status::okStatus();
  }
  Result<std::optional<ScheduleRun>> last(const std::string& schedule) override {
    if (fail_last) return unavailable("database is locked", "retry");
    std::optional<ScheduleRun> best;
    for (const auto& r : runs) {
      if (r.schedule == schedule && (!best || r.due_ms > best->due_ms)) best = r;
    }
    return best;
  }
  std::vector<ScheduleRun> of(const std::string& state) const {
    std::vector<ScheduleRun> out;
    for (const auto& r : runs) {
      if (r.state == state) out.push_back(r);
    }
    return out;
  }
  std::vector<std::string> dues(const std::string& state) const {
    std::vector<std::string> out;
    for (const auto& r : of(state)) out.push_back(iso(r.due_ms));
    return out;
  }

  bool fail_record = false;
  bool fail_last = false;
  std::vector<ScheduleRun> runs;
};

ScheduleConfig schedule(const std::string& name, const std::string& cron,
                        const std::string& tz = "") {
  ScheduleConfig s;
  s.name = name;
  s.cron = cron;
  s.timezone = tz;
  return s;
}

ScheduleRun pastRun(const std::string& name, int64_t due) {
  ScheduleRun r;
  r.schedule = name;
  r.due_ms = due;
  r.state = "started";
  r.sweep_id = "s-old";
  r.recorded_ms = due;
  return r;
}

std::vector<std::string> isos(const std::vector<int64_t>& v) {
  std::vector<std::string> out;
  for (int64_t ms : v) out.push_back(iso(ms));
  return out;
}

struct Harness {
  explicit Harness(int64_t now_ms) : clock(now_ms), starter(clock) {}
  ManualClock clock;
  FakeStarter starter;
  FakeLog log;
};

TEST(Scheduler, FiresAt0200BerlinAcrossSpringForward) {
  GDR_REQUIRE_ZONEINFO();
  Harness h(utcMs(2024, 3, 29, 12));
  Scheduler s(h.clock, h.starter, h.log, {schedule("nightly", "0 2 * * *", "Europe/Berlin")});
  s.start();
  EXPECT_EQ(iso(s.list()[0].next_run_ms), iso(utcMs(2024, 3, 30, 1)));
  h.clock.advance(std::chrono::hours(24 * 4));
  // 02:00 CET, then 03:00 CEST (02:00 does not exist on 2024-03-31), then 02:00 CEST.
  const std::vector<int64_t> want = {utcMs(2024, 3, 30, 1), utcMs(2024, 3, 31, 1),
                                     utcMs(2024, 4, 1, 0), utcMs(2024, 4, 2, 0)};
  EXPECT_EQ(isos(h.starter.started_at), isos(want));
  ASSERT_EQ(h.log.runs.size(), 4u);
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(h.log.runs[i].state, "started");
    EXPECT_EQ(h.log.runs[i].due_ms, want[i]);
    EXPECT_EQ(h.log.runs[i].sweep_id, "s-" + std::to_string(i + 1));
    EXPECT_EQ(h.log.runs[i].recorded_ms, want[i]);
  }
  EXPECT_EQ(iso(s.list()[0].next_run_ms), iso(utcMs(2024, 4, 3, 0)));
  EXPECT_EQ(h.clock.pendingTimers(), 1u);
}

TEST(Scheduler, FiresOnceOnFallBackDay) {
  GDR_REQUIRE_ZONEINFO();
  Harness h(utcMs(2024, 10, 26, 12));
  Scheduler s(h.clock, h.starter, h.log, {schedule("nightly", "30 2 * * *", "Europe/Berlin")});
  s.start();
  h.clock.advance(std::chrono::hours(48));
  // 02:30 CEST on 2024-10-27 (the first of two 02:30s), then 02:30 CET.
  EXPECT_EQ(isos(h.starter.started_at),
            isos({utcMs(2024, 10, 27, 0, 30), utcMs(2024, 10, 28, 1, 30)}));
}

TEST(Scheduler, RunsMissedWhileDownAreRecordedNotRun) {
  Harness h(utcMs(2024, 3, 4, 12));
  h.log.runs.push_back(pastRun("nightly", utcMs(2024, 3, 1, 2)));
  Scheduler s(h.clock, h.starter, h.log, {schedule("nightly", "0 2 * * *")});
  s.start();
  EXPECT_TRUE(h.starter.started.empty());
  EXPECT_EQ(h.log.dues("missed"),
            (std::vector<std::string>{iso(utcMs(2024, 3, 2, 2)), iso(utcMs(2024, 3, 3, 2)),
                                      iso(utcMs(2024, 3, 4, 2))}));
  const ScheduleRun missed = h.log.of("missed").back();
  EXPECT_EQ(missed.recorded_ms, utcMs(2024, 3, 4, 12));
  EXPECT_EQ(missed.detail,
            "missed: the coordinator was not running at the due time; not run late (3 runs "
            "missed from 2024-03-02T02:00:00.000Z to 2024-03-04T02:00:00.000Z)");
  const ScheduleStatus st = s.list()[0];
  EXPECT_EQ(st.missed, 3u);
  ASSERT_TRUE(st.last_run.has_value());
  EXPECT_EQ(st.last_run->state, "missed");
  EXPECT_EQ(st.last_run->due_ms, utcMs(2024, 3, 4, 2));
  EXPECT_EQ(iso(st.next_run_ms), iso(utcMs(2024, 3, 5, 2)));
  // The schedule goes on normally.
  h.clock.advance(std::chrono::hours(24));
  EXPECT_EQ(isos(h.starter.started_at), isos({utcMs(2024, 3, 5, 2)}));
}

TEST(Scheduler, AtMostTheLast100MissedAreRecordedAndTheCountIsSaid) {
  // Down from 00:00 to 00:00:30 the next day; every 5 minutes. 00:00 itself passed while the
  // coordinator was down: missed too.
  Harness h(utcMs(2024, 5, 2, 0, 0, 30));
  h.log.runs.push_back(pastRun("often", utcMs(2024, 5, 1)));
  Scheduler s(h.clock, h.starter, h.log, {schedule("often", "*/5 * * * *")});
  s.start();
  const auto missed = h.log.of("missed");
  ASSERT_EQ(missed.size(), 100u);
  EXPECT_EQ(iso(missed.front().due_ms), iso(utcMs(2024, 5, 1, 15, 45)));
  EXPECT_EQ(iso(missed.back().due_ms), iso(utcMs(2024, 5, 2)));
  EXPECT_EQ(missed.back().detail,
            "missed: the coordinator was not running at the due time; not run late (288 runs "
            "missed from 2024-05-01T00:05:00.000Z to 2024-05-02T00:00:00.000Z); only the most "
            "recent 100 are recorded");
  EXPECT_EQ(s.list()[0].missed, 288u);
  EXPECT_EQ(iso(s.list()[0].next_run_ms), iso(utcMs(2024, 5, 2, 0, 5)));
  h.clock.advance(std::chrono::seconds(0));
  EXPECT_TRUE(h.starter.started.empty());
  h.clock.advance(std::chrono::minutes(5));
  EXPECT_EQ(h.starter.started.size(), 1u);
  EXPECT_EQ(h.log.runs.back().state, "started");
  EXPECT_EQ(h.log.runs.back().due_ms, utcMs(2024, 5, 2, 0, 5));
}

// Issue #22: a run due while the coordinator was down started the moment it came back (20 s
// after the due time, inside the old tolerance), before any worker had reconnected, and
// failed. It is missed, counted, and says why.
TEST(Scheduler, ARunDueWhileDownIsMissedEvenJustAfterTheRestart) {
  Harness h(utcMs(2024, 3, 5, 2, 0, 20));
  h.log.runs.push_back(pastRun("nightly", utcMs(2024, 3, 4, 2)));
  h.starter.missing = {"w1", "w2"};  // nobody has reconnected yet
  Scheduler s(h.clock, h.starter, h.log, {schedule("nightly", "0 2 * * *")});
  s.start();
  h.clock.advance(std::chrono::seconds(30));
  EXPECT_TRUE(h.starter.started.empty()) << "started before its workers were back";
  ASSERT_EQ(h.log.runs.size(), 2u);
  EXPECT_EQ(h.log.runs[1].state, "missed");
  EXPECT_EQ(h.log.runs[1].due_ms, utcMs(2024, 3, 5, 2));
  EXPECT_EQ(h.log.runs[1].detail,
            "missed: the coordinator was not running at the due time; not run late");
  const ScheduleStatus st = s.list()[0];
  EXPECT_EQ(st.missed, 1u);
  ASSERT_TRUE(st.last_run.has_value());
  EXPECT_EQ(st.last_run->state, "missed");
  EXPECT_EQ(iso(st.next_run_ms), iso(utcMs(2024, 3, 6, 2)));
  EXPECT_EQ(describeScheduleRun(h.log.runs[1]),
            "schedule 'nightly', run due 2024-03-05T02:00:00.000Z: missed (missed: the "
            "coordinator was not running at the due time; not run late)");
}

ScheduleConfig catchingUp(const std::string& name, const std::string& cron, double grace_s) {
  ScheduleConfig s = schedule(name, cron);
  s.catch_up = true;
  s.catch_up_grace_seconds = grace_s;
  return s;
}

// catch_up: the newest run missed while down runs once, when the workers are back.
TEST(Scheduler, ACatchUpRunsOnceWhenTheWorkersAreBack) {
  Harness h(utcMs(2024, 3, 6, 2, 0, 20));
  h.log.runs.push_back(pastRun("nightly", utcMs(2024, 3, 4, 2)));
  h.starter.missing = {"w1"};
  Scheduler s(h.clock, h.starter, h.log, {catchingUp("nightly", "0 2 * * *", 600)});
  s.start();
  // 03-05 is missed; 03-06 (the newest) waits for w1.
  EXPECT_EQ(h.log.dues("missed"), (std::vector<std::string>{iso(utcMs(2024, 3, 5, 2))}));
  EXPECT_NE(h.log.runs.back().detail.find("the run due 2024-03-06T02:00:00.000Z is caught up"),
            std::string::npos)
      << h.log.runs.back().detail;
  h.clock.advance(std::chrono::seconds(5));
  EXPECT_TRUE(h.starter.started.empty());
  EXPECT_GT(h.starter.asked, 0);
  EXPECT_EQ(s.list()[0].catch_up_due_ms, utcMs(2024, 3, 6, 2));
  EXPECT_EQ(s.list()[0].missed, 1u);
  h.starter.missing.clear();  // w1 reconnected
  h.clock.advance(std::chrono::seconds(1));
  ASSERT_EQ(h.starter.started.size(), 1u);
  const ScheduleRun& run = h.log.runs.back();
  EXPECT_EQ(run.state, "started");
  EXPECT_EQ(run.due_ms, utcMs(2024, 3, 6, 2));
  EXPECT_EQ(run.sweep_id, "s-1");
  EXPECT_EQ(run.detail,
            "catch-up: missed while the coordinator was down; started once the sweep's workers "
            "were online");
  EXPECT_EQ(s.list()[0].catch_up_due_ms, 0);
  h.clock.advance(std::chrono::minutes(30));
  EXPECT_EQ(h.starter.started.size(), 1u) << "a catch-up runs once";
  EXPECT_EQ(iso(s.list()[0].next_run_ms), iso(utcMs(2024, 3, 7, 2)));
}

TEST(Scheduler, ACatchUpWhoseWorkersDoNotComeBackIsMissedWithThem) {
  Harness h(utcMs(2024, 3, 5, 3));
  h.log.runs.push_back(pastRun("nightly", utcMs(2024, 3, 4, 2)));
  h.starter.missing = {"w1", "w3"};
  Scheduler s(h.clock, h.starter, h.log, {catchingUp("nightly", "0 2 * * *", 900)});
  s.start();
  EXPECT_TRUE(h.log.of("missed").empty());
  h.clock.advance(std::chrono::seconds(899));
  EXPECT_TRUE(h.log.of("missed").empty());
  h.clock.advance(std::chrono::seconds(2));
  EXPECT_TRUE(h.starter.started.empty());
  ASSERT_EQ(h.log.of("missed").size(), 1u);
  const ScheduleRun run = h.log.of("missed")[0];
  EXPECT_EQ(run.due_ms, utcMs(2024, 3, 5, 2));
  EXPECT_EQ(run.detail,
            "missed: the coordinator was not running at the due time, and its catch-up waited "
            "15m after the restart for workers that did not come back: w1, w3");
  EXPECT_EQ(s.list()[0].missed, 1u);
  EXPECT_EQ(s.list()[0].catch_up_due_ms, 0);
}

TEST(Scheduler, ACatchUpStillWaitingGivesWayToTheNextRun) {
  Harness h(utcMs(2024, 3, 5, 0, 3));
  h.log.runs.push_back(pastRun("often", utcMs(2024, 3, 4, 23, 55)));
  h.starter.missing = {"w1"};
  Scheduler s(h.clock, h.starter, h.log, {catchingUp("often", "*/5 * * * *", 3600)});
  s.start();
  EXPECT_EQ(s.list()[0].catch_up_due_ms, utcMs(2024, 3, 5));
  // w1 is not back by the next due time: that run starts, the catch-up is missed.
  h.clock.setUnixMs(utcMs(2024, 3, 5, 0, 5));
  ASSERT_EQ(h.log.of("missed").size(), 1u);
  EXPECT_EQ(h.log.of("missed")[0].due_ms, utcMs(2024, 3, 5));
  EXPECT_NE(h.log.of("missed")[0].detail.find("when the next run came due"), std::string::npos);
  EXPECT_EQ(isos(h.starter.started_at), isos({utcMs(2024, 3, 5, 0, 5)}));
}

TEST(Scheduler, AScheduleWithoutHistoryStartsFresh) {
  Harness h(utcMs(2024, 3, 4, 12));
  Scheduler s(h.clock, h.starter, h.log, {schedule("nightly", "0 2 * * *")});
  s.start();
  EXPECT_TRUE(h.log.runs.empty());
  EXPECT_EQ(s.list()[0].missed, 0u);
  EXPECT_EQ(iso(s.list()[0].next_run_ms), iso(utcMs(2024, 3, 5, 2)));
}

TEST(Scheduler, DueWhileASweepRunsIsSkippedOverlap) {
  Harness h(utcMs(2024, 3, 4, 12));
  Scheduler s(h.clock, h.starter, h.log, {schedule("nightly", "0 2 * * *")});
  s.start();
  h.starter.running = true;  // e.g. an acceptance run started by hand
  h.clock.advance(std::chrono::hours(24));
  EXPECT_TRUE(h.starter.started.empty());
  ASSERT_EQ(h.log.runs.size(), 1u);
  EXPECT_EQ(h.log.runs[0].state, "skipped-overlap");
  EXPECT_EQ(h.log.runs[0].due_ms, utcMs(2024, 3, 5, 2));
  EXPECT_EQ(h.log.runs[0].sweep_id, "");
  EXPECT_NE(h.log.runs[0].detail.find("never overlap"), std::string::npos);
  // Not queued: the sweep ending does not start it; the next due time does.
  h.starter.running = false;
  h.clock.advance(std::chrono::hours(12));
  EXPECT_TRUE(h.starter.started.empty());
  h.clock.advance(std::chrono::hours(12));
  EXPECT_EQ(isos(h.starter.started_at), isos({utcMs(2024, 3, 6, 2)}));
}

TEST(Scheduler, TwoSchedulesDueTogetherDoNotOverlap) {
  Harness h(utcMs(2024, 3, 4, 12));
  h.starter.stay_running = true;
  Scheduler s(h.clock, h.starter, h.log, {schedule("a", "0 2 * * *"), schedule("b", "0 2 * * *")});
  s.start();
  h.clock.advance(std::chrono::hours(24));
  EXPECT_EQ(h.starter.started, (std::vector<std::string>{"a"}));
  ASSERT_EQ(h.log.runs.size(), 2u);
  EXPECT_EQ(h.log.runs[0].schedule, "a");
  EXPECT_EQ(h.log.runs[0].state, "started");
  EXPECT_EQ(h.log.runs[1].schedule, "b");
  EXPECT_EQ(h.log.runs[1].state, "skipped-overlap");
}

TEST(Scheduler, AStartErrorIsRecordedAsFailed) {
  Harness h(utcMs(2024, 3, 4, 12));
  h.starter.fail = "no workers online";
  Scheduler s(h.clock, h.starter, h.log, {schedule("nightly", "0 2 * * *")});
  s.start();
  h.clock.advance(std::chrono::hours(24));
  ASSERT_EQ(h.log.runs.size(), 1u);
  EXPECT_EQ(h.log.runs[0].state, "failed");
  EXPECT_EQ(h.log.runs[0].detail,
            "starting the sweep failed: UNAVAILABLE: no workers online (fix: start a worker)");
  EXPECT_EQ(iso(s.list()[0].next_run_ms), iso(utcMs(2024, 3, 6, 2)));
}

TEST(Scheduler, StopCancelsTimersAndARestartCountsTheGap) {
  Harness h(utcMs(2024, 3, 4, 12));
  auto s = std::make_unique<Scheduler>(h.clock, h.starter, h.log,
                                       std::vector<ScheduleConfig>{schedule("n", "0 2 * * *")});
  s->start();
  h.clock.advance(std::chrono::hours(24));  // runs 03-05 02:00
  EXPECT_EQ(h.starter.started.size(), 1u);
  EXPECT_EQ(h.clock.pendingTimers(), 1u);
  s->stop();
  EXPECT_EQ(h.clock.pendingTimers(), 0u);
  EXPECT_EQ(s->list()[0].next_run_ms, 0);
  h.clock.advance(std::chrono::hours(72));  // 03-06, 03-07, 03-08 pass while stopped
  EXPECT_EQ(h.starter.started.size(), 1u);
  s = std::make_unique<Scheduler>(h.clock, h.starter, h.log,
                                  std::vector<ScheduleConfig>{schedule("n", "0 2 * * *")});
  s->start();
  EXPECT_EQ(h.log.dues("missed"),
            (std::vector<std::string>{iso(utcMs(2024, 3, 6, 2)), iso(utcMs(2024, 3, 7, 2)),
                                      iso(utcMs(2024, 3, 8, 2))}));
  s.reset();  // the destructor stops
  EXPECT_EQ(h.clock.pendingTimers(), 0u);
}

TEST(Scheduler, StartTwiceDoesNothingMore) {
  Harness h(utcMs(2024, 3, 4, 12));
  Scheduler s(h.clock, h.starter, h.log, {schedule("n", "0 2 * * *")});
  s.start();
  s.start();
  EXPECT_EQ(h.clock.pendingTimers(), 1u);
}

// A clock whose wall time runs `skew_ms` away from its monotonic time (suspend, NTP step).
class SkewedClock : public Clock {
 public:
  explicit SkewedClock(ManualClock& inner) : inner_(inner) {}
  TimePoint now() const override { return inner_.now(); }
  int64_t unixMs() const override { return inner_.unixMs() + skew_ms; }
  TimerId schedule(TimePoint when, std::function<void()> fn) override {
    return inner_.schedule(when, std::move(fn));
  }
  bool cancel(TimerId id) override { return inner_.cancel(id); }
  int64_t skew_ms = 0;

 private:
  ManualClock& inner_;
};

TEST(Scheduler, ALateTimerIsRecordedAsMissed) {
  ManualClock manual(utcMs(2024, 3, 4, 12));
  SkewedClock clock(manual);
  FakeStarter starter(clock);
  FakeLog log;
  Scheduler s(clock, starter, log, {schedule("n", "0 2 * * *")});
  s.start();
  clock.skew_ms = 2 * 3600 * 1000;  // the host slept two hours the timer did not see
  manual.advance(std::chrono::hours(14));
  EXPECT_TRUE(starter.started.empty());
  ASSERT_EQ(log.runs.size(), 1u);
  EXPECT_EQ(log.runs[0].state, "missed");
  EXPECT_EQ(log.runs[0].due_ms, utcMs(2024, 3, 5, 2));
  EXPECT_EQ(log.runs[0].detail,
            "missed: the timer came 7200 s late (host suspended or wall clock stepped) at the due "
            "time; not run late");
  EXPECT_EQ(iso(s.list()[0].next_run_ms), iso(utcMs(2024, 3, 6, 2)));
}

TEST(Scheduler, AnEarlyTimerWaitsForTheWallClock) {
  ManualClock manual(utcMs(2024, 3, 4, 12));
  SkewedClock clock(manual);
  FakeStarter starter(clock);
  FakeLog log;
  Scheduler s(clock, starter, log, {schedule("n", "0 2 * * *")});
  s.start();
  clock.skew_ms = -3600 * 1000;  // wall clock stepped back an hour
  manual.advance(std::chrono::hours(14));
  EXPECT_TRUE(starter.started.empty());
  EXPECT_EQ(iso(s.list()[0].next_run_ms), iso(utcMs(2024, 3, 5, 2)));
  manual.advance(std::chrono::hours(1));
  EXPECT_EQ(isos(starter.started_at), isos({utcMs(2024, 3, 5, 2)}));
}

TEST(Scheduler, InvalidSchedulesAreShownAndNotArmed) {
  Harness h(utcMs(2024, 3, 4, 12));
  const std::vector<ScheduleConfig> configs = {
      schedule("good", "0 2 * * *"), schedule("bad-cron", "0 25 * * *"),
      schedule("bad-zone", "0 2 * * *", "Mars/Olympus_Mons"), schedule("good", "0 3 * * *")};
  Scheduler s(h.clock, h.starter, h.log, configs);
  s.start();
  const auto st = s.list();
  ASSERT_EQ(st.size(), 4u);
  EXPECT_EQ(st[0].error, "");
  EXPECT_NE(st[0].next_run_ms, 0);
  EXPECT_EQ(st[1].error, "INVALID_ARGUMENT: cron '0 25 * * *': hour '25' is out of range 0-23");
  EXPECT_EQ(st[1].next_run_ms, 0);
  EXPECT_NE(st[2].error.find("time zone 'Mars/Olympus_Mons'"), std::string::npos);
  EXPECT_EQ(st[2].next_run_ms, 0);
  EXPECT_EQ(st[3].error, "the name is used by an earlier schedule");
  EXPECT_EQ(h.clock.pendingTimers(), 1u);

  const Status v = Scheduler::validate(configs);
  EXPECT_EQ(v.message(),
            "schedules[1] 'bad-cron': cron '0 25 * * *': hour '25' is out of range 0-23");
  EXPECT_EQ(Scheduler::validate({configs[0], configs[3]}).message(),
            "schedules[1] 'good': the name is used by an earlier schedule");
  EXPECT_EQ(Scheduler::validate({schedule("", "0 2 * * *")}).message(),
            "schedules[0]: name is empty");
  EXPECT_TRUE(Scheduler::validate({configs[0]}).ok());
}

TEST(Scheduler, LogFailuresAreShownAndTheScheduleGoesOn) {
  Harness h(utcMs(2024, 3, 4, 12));
  h.log.fail_last = true;
  Scheduler s(h.clock, h.starter, h.log, {schedule("n", "0 2 * * *")});
  s.start();
  EXPECT_NE(s.list()[0].log_error.find("reading the last run failed"), std::string::npos);
  EXPECT_EQ(iso(s.list()[0].next_run_ms), iso(utcMs(2024, 3, 5, 2)));
  h.log.fail_record = true;
  h.clock.advance(std::chrono::hours(24));
  EXPECT_EQ(h.starter.started.size(), 1u);
  const ScheduleStatus st = s.list()[0];
  EXPECT_EQ(st.log_error,
            "recording the started run due 2024-03-05T02:00:00.000Z failed: UNAVAILABLE: "
            "database is locked (fix: retry)");
  ASSERT_TRUE(st.last_run.has_value());
  EXPECT_EQ(st.last_run->sweep_id, "s-1");
}

TEST(Scheduler, ListShowsEverySchedule) {
  GDR_REQUIRE_ZONEINFO();
  Harness h(utcMs(2024, 3, 4, 12, 30));
  Scheduler s(h.clock, h.starter, h.log,
              {schedule("a", "0 2 * * *", "Europe/Berlin"), schedule("b", "@hourly")});
  s.start();
  const auto st = s.list();
  ASSERT_EQ(st.size(), 2u);
  EXPECT_EQ(st[0].name, "a");
  EXPECT_EQ(st[0].cron, "0 2 * * *");
  EXPECT_EQ(st[0].timezone, "Europe/Berlin");
  EXPECT_EQ(iso(st[0].next_run_ms), iso(utcMs(2024, 3, 5, 1)));
  EXPECT_FALSE(st[0].last_run.has_value());
  EXPECT_EQ(st[1].name, "b");
  EXPECT_EQ(st[1].timezone, "");
  EXPECT_EQ(iso(st[1].next_run_ms), iso(utcMs(2024, 3, 4, 13)));
}

TEST(Scheduler, TheStarterMayCallListDuringAFiring) {
  Harness h(utcMs(2024, 3, 4, 12));
  Scheduler s(h.clock, h.starter, h.log, {schedule("n", "0 2 * * *")});
  size_t seen = 0;
  h.starter.on_start = [&] { seen = s.list().size(); };
  s.start();
  h.clock.advance(std::chrono::hours(24));
  EXPECT_EQ(seen, 1u);
  EXPECT_EQ(h.starter.started.size(), 1u);
}

}  // namespace
}  // namespace gdrmesh
