#include "coordinator/orchestrator/sweep_board.h"

#include <algorithm>
#include <chrono>

#include "common/sync/mutex.h"

namespace gdrmesh {

void PlanIndexSet::insert(int i) {
  if (i < 0) return;
  const auto k = static_cast<size_t>(i);
  if (k >= bits_.size()) bits_.resize(std::max(k + 1, bits_.size() * 2));
  if (!bits_[k]) ++size_;
  bits_[k] = true;
}

SweepState SweepBoard::visibleState(const LiveSweep& s) {
  return s.state;
}

SweepProgress SweepBoard::snapshot(const LiveSweep& s) const {
  SweepProgress p;
  p.id = s.id;
  p.state = visibleState(s);
  p.pattern = s.spec.pattern_from_config ? "config" : toString(s.spec.pattern);
  p.name = s.spec.name;
  p.created_ms = s.created_ms;
  p.started_ms = s.started_ms;
  p.finished_ms = s.finished_ms;
  p.tests_total = s.needs_plan ? s.stored_total : static_cast<uint32_t>(s.plan.size());
  p.tests_done = static_cast<uint32_t>(s.done.size());
  p.tests_failed = s.failed;
  p.tests_skipped = s.skipped;
  p.tests_running = static_cast<uint32_t>(s.in_flight.size());
  p.rounds_total = static_cast<uint32_t>(s.rounds);
  p.retests = s.retests;
  // Ended and judged, its report read from memory until its rows are stored.
  p.report_pending = s.report_pending;
  p.reason = s.reason;
  p.verdict = s.verdict;
  p.verdict_counts = s.verdict_counts;
  if (s.state == SweepState::kRunning) {
    p.elapsed_seconds = std::chrono::duration<double>(clock_.now() - s.started_at).count();
    if (p.tests_done > 0 && p.tests_total > p.tests_done) {
      p.eta_seconds = p.elapsed_seconds / p.tests_done * (p.tests_total - p.tests_done);
    } else if (p.tests_total == p.tests_done) {
      p.eta_seconds = 0;
    }
  } else if (s.finished_ms > 0 && s.started_ms > 0) {
    p.elapsed_seconds = static_cast<double>(s.finished_ms - s.started_ms) / 1000.0;
    p.eta_seconds = 0;
  }
  return p;
}

void SweepBoard::publish(LiveSweep& s) {
  // A sweep of 10k tests/s must not send 10k progress messages a second.
  ++s.version;
  const auto now = clock_.now();
  const SweepState visible = visibleState(s);
  if (visible != s.notified_state || s.report_pending != s.notified_pending ||
      now - s.notified_at >= std::chrono::milliseconds(100)) {
    s.notified_state = visible;
    s.notified_pending = s.report_pending;
    s.notified_at = now;
    cv.notify_all();
  }
}

std::shared_ptr<LiveSweep> SweepBoard::find(const std::string& id) {
  MutexLock lock(mu);
  auto it = recent.find(id);
  return it == recent.end() ? nullptr : it->second;
}

bool SweepBoard::awaitResultsStored(const std::string& id, Clock::TimePoint deadline) {
  UniqueLock lock(mu);
  auto it = recent.find(id);
  if (it == recent.end()) return true;
  const std::shared_ptr<LiveSweep> s = it->second;
  return waitUntil(clock_, lock.native(), cv, deadline, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return !s->results_pending || stopping;
  });
}

uint64_t SweepBoard::startingTests() {
  MutexLock lock(mu);
  uint64_t n = 0;
  for (const auto& [id, s] : recent) n += s->starting_tests ? 1 : 0;
  return n;
}

std::pair<SweepProgress, uint64_t> SweepBoard::waitForChange(const std::shared_ptr<LiveSweep>& s,
                                                             uint64_t version,
                                                             Clock::TimePoint deadline) {
  UniqueLock lock(mu);
  // `deadline` (on the clock) bounds the wait for the caller's stream.
  (void)waitUntil(clock_, lock.native(), cv, deadline, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return s->version != version || stopping;
  });
  return {snapshot(*s), s->version};
}

}  // namespace gdrmesh
