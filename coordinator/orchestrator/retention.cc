#include "coordinator/orchestrator/retention.h"

#include <chrono>
#include <cstdio>
#include <string>
#include <utility>

#include "common/log.h"
#include "common/sync/mutex.h"

namespace gdrmesh {

namespace {
constexpr int64_t kDayMs = 86'400'000;
}  // namespace

Status validateRetention(const RetentionOptions& o) {
  if (o.days > 36500) {
    return invalidArgument("retention days " + std::to_string(o.days) + " is out of range",
                           "give 0 (keep every raw row) or 1 to 36500 days");
  }
  if (!(o.interval_seconds >= 1 && o.interval_seconds <= 7 * 86400.0)) {
    return invalidArgument(
        "retention interval " + std::to_string(o.interval_seconds) + " s is out of range",
        "give an interval from 1s to 7 days (e.g. 1h)");
  }
  if (o.batch_rows < 1 || o.batch_rows > 100000) {
    return invalidArgument(
        "retention batch " + std::to_string(o.batch_rows) + " rows is out of range",
        "give 1 to 100000 rows per batch (2000 keeps each pause short)");
  }
  if (o.max_batches < 1) {
    return invalidArgument("retention max_batches is 0", "allow at least one batch per pass");
  }
  return Status();
}

Retention::Retention(Clock& clock, SweepAggregates& sweeps, ResultRetention& results,
                     RetentionOptions options, FabricHistory* fabric)
    : clock_(clock), sweeps_(sweeps), results_(results), options_(options), fabric_(fabric) {}

Retention::~Retention() {
  line_.close();  // a timer the clock has taken already finds nobody (it cannot be cancelled)
  stop();
}

void Retention::start() {
  if (options_.days == 0) return;
  MutexLock lock(mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  due_ = true;  // the first pass now
  thread_ = std::thread([this] { loop(); });
}

void Retention::stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
    if (timer_ != 0) clock_.cancel(timer_);
    timer_ = 0;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

void Retention::scheduleNext() {
  timer_ = clock_.schedule(clock_.after(options_.interval_seconds), [this, ref = line_.ref()] {
    ref.run([this] {
      MutexLock lock(mu_);
      timer_ = 0;
      due_ = true;
      cv_.notify_all();
    });
  });
}

void Retention::loop() {
  UniqueLock lock(mu_);
  while (!stopping_) {
    cv_.wait(lock.native(),
             [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return due_ || stopping_; });
    if (stopping_) break;
    due_ = false;
    lock.unlock();
    RetentionPass p = pass();
    if (!p.status.ok()) {
      ComponentLog("coordinator", &clock_).error("retention: " + p.status.toString());
    }
    lock.lock();
    // The next pass is scheduled before this one is counted: whoever sees the count can move
    // the clock to the next one.
    if (!stopping_) scheduleNext();
    ++passes_;
    last_ = p;
    cv_.notify_all();
  }
}

RetentionPass Retention::runOnce() {
  RetentionPass p = pass();
  MutexLock lock(mu_);
  ++passes_;
  last_ = p;
  cv_.notify_all();
  return p;
}

RetentionPass Retention::pass() {
  MutexLock pass_lock(pass_mu_);
  RetentionPass p;
  p.cutoff_ms = clock_.unixMs() - static_cast<int64_t>(options_.days) * kDayMs;
  if (options_.days == 0) {
    p.status = failedPrecondition("retention is off (days 0)", "set retention days >= 1");
  }
  // 1. Aggregates first: a sweep whose rows are about to go keeps its per-pair figures.
  while (p.status.ok()) {
    auto pending = sweeps_.sweepsWithoutAggregates(p.cutoff_ms, 64);
    if (!pending.ok()) {
      p.status = pending.status().withContext("retention: listing sweeps to aggregate");
      break;
    }
    for (const SweepRecord& s : *pending) {
      Status st = sweeps_.aggregateSweep(s.id, s.tests_total);
      if (!st.ok()) {
        p.status = st.withContext("retention");
        break;
      }
      ++p.sweeps_aggregated;
    }
    if (pending->size() < 64) break;
  }
  // 2. Raw rows, oldest first, one short transaction per batch: result writes interleave.
  while (p.status.ok() && p.batches < options_.max_batches) {
    {
      MutexLock lock(mu_);
      if (stopping_) break;
    }
    auto n = results_.deleteResultsBefore(p.cutoff_ms, options_.batch_rows);
    if (!n.ok()) {
      p.status =
          n.status().withContext("retention: deleting rows before " + std::to_string(p.cutoff_ms));
      break;
    }
    ++p.batches;
    p.rows_deleted += *n;
    if (*n < options_.batch_rows) break;
  }
  // 3. Fabric snapshot documents (large: every LFT), the same way.
  while (fabric_ != nullptr && p.status.ok() && p.batches < options_.max_batches) {
    {
      MutexLock lock(mu_);
      if (stopping_) break;
    }
    auto n = fabric_->dropFabricSnapshotsBefore(p.cutoff_ms, options_.batch_rows);
    if (!n.ok()) {
      p.status = n.status().withContext("retention: dropping fabric snapshots before " +
                                        std::to_string(p.cutoff_ms));
      break;
    }
    ++p.batches;
    p.fabric_documents_dropped += *n;
    if (*n < options_.batch_rows) break;
  }
  return p;
}

uint64_t Retention::passes() const {
  MutexLock lock(mu_);
  return passes_;
}

RetentionPass Retention::lastPass() const {
  MutexLock lock(mu_);
  return last_;
}

void Retention::waitForPasses(uint64_t n) const {
  UniqueLock lock(mu_);
  cv_.wait(lock.native(), [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return passes_ >= n; });
}

}  // namespace gdrmesh
