// Runs the cluster config's schedules: one Clock timer per schedule, armed for its next run
// (cron.h: nextRun, with its daylight-saving rules). Every due time leaves one ScheduleRun:
//
//   started          the sweep was started; sweep_id names it (detail says when it was a
//                    catch-up)
//   failed           starting it returned an error; detail holds it
//   skipped-overlap  another sweep was running at the due time. Scheduled sweeps never overlap
//                    and are never queued: this run is skipped, the next one is kept.
//   missed           the coordinator was not running at the due time (found by start(), which
//                    compares the last recorded run with the due times since), or the timer
//                    came more than kLateToleranceMs late (suspended host, clock stepped).
//                    A missed run is never started late, but for a catch-up (below). At most
//                    kMaxMissedRecorded missed runs are recorded per catch-up (the most
//                    recent); their detail says how many were missed in all.
//
// Every due time at or before start() that is after the last recorded run was missed: the
// coordinator was down then, and its workers have not reconnected yet, so a sweep started at
// once would find none (issue #22). With `catch_up` the newest of them is held instead and
// started once every worker the sweep expects is online (SweepStarter::workersNotOnline,
// checked every kCatchUpPollMs on the clock), if that happens within the schedule's grace of
// start(); otherwise, or when the next due time comes first, it is recorded missed with the
// reason. A schedule with no recorded run starts fresh (nothing is counted as missed before
// its first run). While running, a timer less than kLateToleranceMs late still fires.
//
// A schedule whose cron or time zone does not parse is never armed; list() shows why, and
// validate() reports it when the config is loaded.
//
// Thread contract: all methods are thread-safe. Timer callbacks run on the clock's thread;
// they call SweepStarter and ScheduleLog (both must return promptly) without holding the
// lock that list() takes, so either may call list(). Neither may call start() or stop(),
// which wait for a firing in progress. Firings are serialised: two schedules due at the same
// minute see each other's sweep (the second is skipped-overlap).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/lifeline.h"
#include "common/result.h"
#include "common/status.h"
#include "common/sync/mutex.h"
#include "coordinator/orchestrator/cluster_config.h"
#include "coordinator/orchestrator/cron.h"
#include "coordinator/store/store.h"

namespace gdrmesh {

// Starts sweeps for the scheduler (the coordinator's sweep manager).
class SweepStarter {
 public:
  virtual ~SweepStarter() = default;
  // True while a sweep (scheduled or not) is running.
  virtual bool sweepRunning() const = 0;
  // Starts the schedule's sweep and returns its id at once (the sweep runs elsewhere).
  // After it returns, sweepRunning() is true until that sweep ends.
  virtual Result<std::string> startScheduledSweep(const ScheduleConfig& schedule) = 0;
  // The workers the schedule's sweep expects (its hosts, else every worker the coordinator
  // knows, less its excluded ones) that are not online now; empty when all are.
  virtual std::vector<std::string> workersNotOnline(const ScheduleConfig& schedule) const = 0;
};

// Where schedule runs are kept (the coordinator adapts SweepStore).
class ScheduleLog {
 public:
  virtual ~ScheduleLog() = default;
  virtual Status record(const ScheduleRun& run) = 0;
  // The newest run of the schedule by due_ms; nullopt if it never ran.
  virtual Result<std::optional<ScheduleRun>> last(const std::string& schedule) = 0;
};

struct ScheduleStatus {
  std::string name;
  std::string cron;
  std::string timezone;                 // "" = UTC
  int64_t next_run_ms = 0;              // unix ms; 0 = not armed (stopped, or error says why)
  std::optional<ScheduleRun> last_run;  // the newest run recorded (or found at start())
  uint64_t missed = 0;                  // runs counted as missed since start()
  int64_t catch_up_due_ms = 0;          // a missed run waiting for its workers (0 = none)
  std::string error;                    // why the schedule is not armed ("" = armed or stopped)
  std::string log_error;                // the latest failure to read or write the log ("" = none)
};

// A schedule as its readers see it (`gdrmesh schedules`): its status and last run, a started
// run followed to its sweep's state and verdict now.
struct ScheduleSummary {
  std::string name;
  std::string cron;
  std::string timezone;
  int64_t next_run_ms = 0;
  int64_t last_run_ms = 0;  // the last run's due time; 0 = never ran
  std::string last_sweep_id;
  std::string last_state;  // started | failed | missed | skipped-overlap
  uint32_t missed = 0;
  std::string last_detail;
  std::string last_sweep_state;  // a started run's sweep now: running, finished, ...
  std::string last_sweep_verdict;
  int64_t catch_up_due_ms = 0;
};

// One line for the coordinator's log: "schedule 'nightly' run due 2026-...Z: missed: ...".
std::string describeScheduleRun(const ScheduleRun& run);

class Scheduler {
 public:
  static constexpr int64_t kLateToleranceMs = 60'000;
  static constexpr size_t kMaxMissedRecorded = 100;
  static constexpr int64_t kCatchUpPollMs = 1'000;

  Scheduler(Clock& clock, SweepStarter& starter, ScheduleLog& log,
            std::vector<ScheduleConfig> schedules,
            const std::string& zoneinfo_dir = TimeZone::kDefaultZoneinfoDir);
  ~Scheduler();  // stop()
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Checks names (non-empty, unique), cron expressions and time zones; the first error names
  // the schedule ("schedules[1] 'nightly': cron ...").
  static Status validate(const std::vector<ScheduleConfig>& schedules,
                         const std::string& zoneinfo_dir = TimeZone::kDefaultZoneinfoDir);

  // Records the runs missed since each schedule's last run, then arms every valid schedule.
  // Reads and writes the log on the calling thread. A second start() does nothing.
  void start();
  // Cancels every timer; returns once a firing in progress (if any) has finished.
  void stop();
  std::vector<ScheduleStatus> list() const;

 private:
  struct Entry {
    ScheduleConfig config;
    std::optional<CronExpr> cron;
    std::optional<TimeZone> zone;
    // Guarded by mu_:
    std::string error;
    std::string log_error;
    int64_t next_ms = 0;
    std::optional<Clock::TimerId> timer;
    std::optional<ScheduleRun> last_run;
    uint64_t missed = 0;
    // A catch-up waiting for its workers: the due time it stands for, and until when it waits.
    int64_t catch_up_due_ms = 0;
    int64_t catch_up_until_ms = 0;
    std::optional<Clock::TimerId> catch_up_timer;
  };

  void onTimer(size_t i, uint64_t generation, int64_t due_ms);
  void onCatchUpTimer(size_t i, uint64_t generation);
  // Starts (or skips) the run due at `due_ms`; `note` goes into a started run's detail.
  // Needs fire_mu_.
  void fire(size_t i, int64_t due_ms, int64_t now_ms, const std::string& note = "")
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(fire_mu_);
  // Records as missed every due time in (from_ms, boundary_ms], then arms the first due time
  // after that. With `hold_newest`, the newest of them is held for a catch-up instead of
  // recorded. Needs fire_mu_.
  void catchUp(size_t i, int64_t from_ms, int64_t boundary_ms, int64_t now_ms,
               const std::string& why, bool hold_newest = false)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(fire_mu_);
  // Records the held catch-up run as missed with `why`, and forgets it. Needs fire_mu_.
  void dropCatchUp(size_t i, int64_t now_ms, const std::string& why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(fire_mu_);
  // Arms the catch-up's next look at the workers, `delay_ms` from now. Needs mu_.
  void armCatchUpLocked(size_t i, int64_t delay_ms) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void record(size_t i, const ScheduleRun& run);
  // Arms the timer for the first due time after `after_ms`. Needs mu_.
  void armLocked(size_t i, int64_t after_ms) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void armAtLocked(size_t i, int64_t due_ms) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Clock& clock_;
  SweepStarter& starter_;
  ScheduleLog& log_;
  Mutex fire_mu_;     // serialises start() and firings (the calls to starter_ and log_)
  mutable Mutex mu_;  // guards Entry's guarded fields and all below
  std::condition_variable idle_cv_;
  std::vector<Entry> entries_;  // fixed after construction
  bool running_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t generation_ ABSL_GUARDED_BY(mu_) =
      0;                                    // bumped by start() and stop(); stale timers do nothing
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;  // timer callbacks between entry and exit
  Lifeline line_;  // the timers' way back to this object, closed when it goes
};

}  // namespace gdrmesh
