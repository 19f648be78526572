#include "coordinator/orchestrator/scheduler.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <set>
#include <utility>

#include "common/sync/mutex.h"
#include "common/units.h"

namespace gdrmesh {

namespace {

// A catch-up counts at most this many due times one by one; beyond that it counts only the
// last 31 days (an every-minute schedule down for years would otherwise take seconds).
constexpr uint64_t kMaxCounted = 1'000'000;
constexpr int64_t kRecentWindowMs = int64_t{31} * 86400 * 1000;

std::string prefix(size_t i, const ScheduleConfig& s) {
  return "schedules[" + std::to_string(i) + "] '" + s.name + "'";
}

// A grace as the config writes it: "15m", "1h", "90s".
std::string formatSecondsShort(double seconds) {
  const auto s = static_cast<int64_t>(seconds);
  if (s > 0 && s % 3600 == 0) return std::to_string(s / 3600) + "h";
  if (s > 0 && s % 60 == 0) return std::to_string(s / 60) + "m";
  return std::to_string(s) + "s";
}

// "a, b, c" (at most 10 names, then how many more).
std::string commaList(const std::vector<std::string>& names) {
  std::string out;
  for (size_t k = 0; k < names.size() && k < 10; ++k) out += (k ? ", " : "") + names[k];
  if (names.size() > 10) out += " and " + std::to_string(names.size() - 10) + " more";
  return out;
}

}  // namespace

std::string describeScheduleRun(const ScheduleRun& run) {
  std::string line =
      "schedule '" + run.schedule + "', run due " + formatRfc3339(run.due_ms) + ": " + run.state;
  if (!run.sweep_id.empty()) line += " sweep " + run.sweep_id;
  if (!run.detail.empty()) line += " (" + run.detail + ")";
  return line;
}

Status Scheduler::validate(const std::vector<ScheduleConfig>& schedules,
                           const std::string& zoneinfo_dir) {
  std::set<std::string> names;
  for (size_t i = 0; i < schedules.size(); ++i) {
    const ScheduleConfig& s = schedules[i];
    if (s.name.empty()) {
      return invalidArgument("schedules[" + std::to_string(i) + "]: name is empty",
                             "give every schedule a unique name, e.g. 'nightly'");
    }
    if (!names.insert(s.name).second) {
      return invalidArgument(prefix(i, s) + ": the name is used by an earlier schedule",
                             "give every schedule a unique name");
    }
    auto cron = parseCron(s.cron);
    if (!cron.ok()) return cron.status().withContext(prefix(i, s));
    auto zone = TimeZone::load(s.timezone, zoneinfo_dir);
    if (!zone.ok()) return zone.status().withContext(prefix(i, s));
  }
  return Status::okStatus();
}

Scheduler::Scheduler(Clock& clock, SweepStarter& starter, ScheduleLog& log,
                     std::vector<ScheduleConfig> schedules, const std::string& zoneinfo_dir)
    : clock_(clock), starter_(starter), log_(log) {
  std::set<std::string> names;
  entries_.resize(schedules.size());
  for (size_t i = 0; i < schedules.size(); ++i) {
    Entry& e = entries_[i];
    e.config = std::move(schedules[i]);
    if (e.config.name.empty() || !names.insert(e.config.name).second) {
      e.error = e.config.name.empty() ? "the schedule has no name"
                                      : "the name is used by an earlier schedule";
      continue;
    }
    auto cron = parseCron(e.config.cron);
    auto zone = TimeZone::load(e.config.timezone, zoneinfo_dir);
    if (!cron.ok()) {
      e.error = cron.status().toString();
    } else if (!zone.ok()) {
      e.error = zone.status().toString();
    } else {
      e.cron = std::move(cron).value();
      e.zone = std::move(zone).value();
    }
  }
}

Scheduler::~Scheduler() {
  line_.close();  // a timer the clock has taken already finds nobody (it cannot be cancelled)
  stop();
}

void Scheduler::start() {
  {
    MutexLock lock(mu_);
    if (running_) return;
    running_ = true;
    ++generation_;
  }
  MutexLock fire_lock(fire_mu_);
  const int64_t now = clock_.unixMs();
  for (size_t i = 0; i < entries_.size(); ++i) {
    Entry& e = entries_[i];
    if (!e.cron || !e.zone) continue;
    auto last = log_.last(e.config.name);
    if (!last.ok()) {
      MutexLock lock(mu_);
      e.log_error =
          "reading the last run failed, so runs missed while the coordinator was down "
          "are not recorded: " +
          last.status().toString();
      armLocked(i, now);
      continue;
    }
    if (!last->has_value()) {
      // Never ran: it starts fresh from now.
      MutexLock lock(mu_);
      armLocked(i, now);
      continue;
    }
    {
      MutexLock lock(mu_);
      e.last_run = **last;
    }
    // Every due time up to now passed while the coordinator was down (no tolerance here: the
    // workers reconnect only after this start, so a sweep started now would find none).
    catchUp(i, (*last)->due_ms, now, now, "the coordinator was not running", e.config.catch_up);
  }
}

void Scheduler::stop() {
  UniqueLock lock(mu_);
  if (running_) {
    running_ = false;
    ++generation_;
    for (Entry& e : entries_) {
      if (e.timer) clock_.cancel(*e.timer);
      e.timer.reset();
      e.next_ms = 0;
      if (e.catch_up_timer) clock_.cancel(*e.catch_up_timer);
      e.catch_up_timer.reset();
      e.catch_up_due_ms = 0;  // not recorded: the next start counts it as missed again
    }
  }
  idle_cv_.wait(lock.native(),
                [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return in_flight_ == 0; });
}

std::vector<ScheduleStatus> Scheduler::list() const {
  MutexLock lock(mu_);
  std::vector<ScheduleStatus> out;
  out.reserve(entries_.size());
  for (const Entry& e : entries_) {
    ScheduleStatus s;
    s.name = e.config.name;
    s.cron = e.config.cron;
    s.timezone = e.config.timezone;
    s.next_run_ms = e.next_ms;
    s.last_run = e.last_run;
    s.missed = e.missed;
    s.catch_up_due_ms = e.catch_up_due_ms;
    s.error = e.error;
    s.log_error = e.log_error;
    out.push_back(std::move(s));
  }
  return out;
}

void Scheduler::onTimer(size_t i, uint64_t generation, int64_t due_ms) {
  {
    MutexLock lock(mu_);
    if (!running_ || generation != generation_) return;
    entries_[i].timer.reset();
    ++in_flight_;
  }
  {
    MutexLock fire_lock(fire_mu_);
    bool current = false;
    {
      MutexLock lock(mu_);
      current = running_ && generation == generation_;
    }
    if (current) {
      const int64_t now = clock_.unixMs();
      if (now < due_ms) {
        // Wall time runs behind the monotonic timer (clock stepped back): wait for the due time.
        MutexLock lock(mu_);
        armAtLocked(i, due_ms);
      } else {
        // A catch-up still waiting for its workers gives way to the run due now.
        dropCatchUp(i, now,
                    "missed: the coordinator was not running at the due time; its catch-up was "
                    "still waiting for the workers when the next run came due");
        if (now - due_ms > kLateToleranceMs) {
          catchUp(i, due_ms - 1, now - kLateToleranceMs, now,
                  "the timer came " + std::to_string((now - due_ms) / 1000) +
                      " s late (host suspended or wall clock stepped)");
        } else {
          fire(i, due_ms, now);
          catchUp(i, due_ms, now - kLateToleranceMs, now,
                  "the previous run held the scheduler past the due time");
        }
      }
    }
  }
  MutexLock lock(mu_);
  --in_flight_;
  idle_cv_.notify_all();
}

void Scheduler::onCatchUpTimer(size_t i, uint64_t generation) {
  {
    MutexLock lock(mu_);
    if (!running_ || generation != generation_) return;
    entries_[i].catch_up_timer.reset();
    ++in_flight_;
  }
  {
    MutexLock fire_lock(fire_mu_);
    int64_t due = 0, until = 0;
    {
      MutexLock lock(mu_);
      if (running_ && generation == generation_) {
        due = entries_[i].catch_up_due_ms;
        until = entries_[i].catch_up_until_ms;
      }
    }
    if (due != 0) {
      const ScheduleConfig& config = entries_[i].config;
      const int64_t now = clock_.unixMs();
      const std::vector<std::string> missing = starter_.workersNotOnline(config);
      if (missing.empty()) {
        {
          MutexLock lock(mu_);
          entries_[i].catch_up_due_ms = 0;
        }
        fire(i, due, now,
             "catch-up: missed while the coordinator was down; started once the sweep's "
             "workers were online");
      } else if (now >= until) {
        dropCatchUp(
            i, now,
            "missed: the coordinator was not running at the due time, and its catch-up "
            "waited " +
                formatSecondsShort(config.catch_up_grace_seconds) +
                " after the restart for workers that did not come back: " + commaList(missing));
      } else {
        MutexLock lock(mu_);
        armCatchUpLocked(i, kCatchUpPollMs);
      }
    }
  }
  MutexLock lock(mu_);
  --in_flight_;
  idle_cv_.notify_all();
}

void Scheduler::dropCatchUp(size_t i, int64_t now_ms, const std::string& why) {
  int64_t due = 0;
  {
    MutexLock lock(mu_);
    Entry& e = entries_[i];
    due = e.catch_up_due_ms;
    e.catch_up_due_ms = 0;
    if (e.catch_up_timer) clock_.cancel(*e.catch_up_timer);
    e.catch_up_timer.reset();
    if (due != 0) ++e.missed;
  }
  if (due == 0) return;
  ScheduleRun run;
  run.schedule = entries_[i].config.name;
  run.due_ms = due;
  run.state = "missed";
  run.recorded_ms = now_ms;
  run.detail = why;
  record(i, run);
}

void Scheduler::armCatchUpLocked(size_t i, int64_t delay_ms) {
  Entry& e = entries_[i];
  if (!running_ || e.catch_up_due_ms == 0) return;
  if (e.catch_up_timer) clock_.cancel(*e.catch_up_timer);
  const uint64_t generation = generation_;
  e.catch_up_timer = clock_.schedule(clock_.now() + std::chrono::milliseconds(delay_ms),
                                     [this, ref = line_.ref(), i, generation] {
                                       ref.run([&] { onCatchUpTimer(i, generation); });
                                     });
}

void Scheduler::fire(size_t i, int64_t due_ms, int64_t now_ms, const std::string& note) {
  const Entry& e = entries_[i];
  ScheduleRun run;
  run.schedule = e.config.name;
  run.due_ms = due_ms;
  run.recorded_ms = now_ms;
  if (starter_.sweepRunning()) {
    run.state = "skipped-overlap";
    run.detail =
        "another sweep was running at the due time; scheduled sweeps never overlap and are not "
        "queued, so this run was skipped and the next one is kept";
  } else {
    auto id = starter_.startScheduledSweep(e.config);
    if (id.ok()) {
      run.state = "started";
      run.sweep_id = *id;
      run.detail = note;
    } else {
      run.state = "failed";
      run.detail = "starting the sweep failed: " + id.status().toString();
    }
  }
  record(i, run);
}

void Scheduler::catchUp(size_t i, int64_t from_ms, int64_t boundary, int64_t now_ms,
                        const std::string& why, bool hold_newest) {
  const Entry& e = entries_[i];
  std::deque<int64_t> recent;  // the newest kMaxMissedRecorded due times
  uint64_t count = 0;
  bool more = false;  // counting stopped at kMaxCounted
  int64_t first = 0;
  int64_t t = from_ms;
  Status error;
  while (t < boundary) {
    auto due = nextRun(*e.cron, *e.zone, t);
    if (!due.ok()) {
      error = due.status();
      break;
    }
    if (*due > boundary) break;
    if (count == 0) first = *due;
    ++count;
    recent.push_back(*due);
    if (recent.size() > kMaxMissedRecorded) recent.pop_front();
    t = *due;
    if (count == kMaxCounted && !more && t < boundary - kRecentWindowMs) {
      more = true;
      recent.clear();
      t = boundary - kRecentWindowMs;
    }
  }
  // The newest missed run waits for its workers instead (catch_up).
  int64_t held = 0;
  if (hold_newest && !recent.empty() && error.ok()) {
    held = recent.back();
    recent.pop_back();
    --count;
  }
  std::string detail;
  if (count > 0) {
    const std::string total = (more ? "more than " : "") + std::to_string(count);
    detail = "missed: " + why + " at the due time; not run late";
    if (count > 1 && !recent.empty()) {
      detail += " (" + total + " runs missed from " + formatRfc3339(first) + " to " +
                formatRfc3339(recent.back()) + ")";
    }
    if (count > recent.size()) {
      detail += "; only the most recent " + std::to_string(recent.size()) + " are recorded";
    }
    if (held != 0) {
      detail += "; the run due " + formatRfc3339(held) + " is caught up instead";
    }
  }
  for (int64_t due : recent) {
    ScheduleRun run;
    run.schedule = e.config.name;
    run.due_ms = due;
    run.state = "missed";
    run.recorded_ms = now_ms;
    run.detail = detail;
    record(i, run);
  }
  MutexLock lock(mu_);
  entries_[i].missed += count;
  if (!error.ok()) {
    entries_[i].error = error.toString();
    entries_[i].next_ms = 0;
    return;
  }
  if (held != 0) {
    entries_[i].catch_up_due_ms = held;
    entries_[i].catch_up_until_ms =
        now_ms + static_cast<int64_t>(entries_[i].config.catch_up_grace_seconds * 1000);
    armCatchUpLocked(i, 0);
  }
  armLocked(i, std::max(from_ms, boundary));
}

void Scheduler::record(size_t i, const ScheduleRun& run) {
  const Status s = log_.record(run);
  MutexLock lock(mu_);
  Entry& e = entries_[i];
  if (!e.last_run || run.due_ms >= e.last_run->due_ms) e.last_run = run;
  if (!s.ok()) {
    e.log_error = "recording the " + run.state + " run due " + formatRfc3339(run.due_ms) +
                  " failed: " + s.toString();
  }
}

void Scheduler::armLocked(size_t i, int64_t after_ms) {
  Entry& e = entries_[i];
  if (!running_) return;
  auto due = nextRun(*e.cron, *e.zone, after_ms);
  if (!due.ok()) {
    e.error = due.status().toString();
    e.next_ms = 0;
    return;
  }
  armAtLocked(i, *due);
}

void Scheduler::armAtLocked(size_t i, int64_t due_ms) {
  Entry& e = entries_[i];
  if (!running_) return;
  if (e.timer) clock_.cancel(*e.timer);
  e.next_ms = due_ms;
  const int64_t delay_ms = std::max<int64_t>(0, due_ms - clock_.unixMs());
  const uint64_t generation = generation_;
  e.timer = clock_.schedule(clock_.now() + std::chrono::milliseconds(delay_ms),
                            [this, ref = line_.ref(), i, generation, due_ms] {
                              ref.run([&] { onTimer(i, generation, due_ms); });
                            });
}

}  // namespace gdrmesh
