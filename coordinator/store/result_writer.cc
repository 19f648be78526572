#include "coordinator/store/result_writer.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <future>
#include <iterator>
#include <memory>
#include <string>
#include <utility>

#include "common/log.h"
#include "common/sync/mutex.h"

namespace gdrmesh {
namespace {

// A refusal that a retry cannot cure: the row itself is wrong (empty or duplicate test_id, ...).
bool refusedForGood(const Status& s) {
  return s.code() == Code::kInvalidArgument;
}

// Appends `row` to the spool, or says why it is not durable.
Status spoolRow(ResultSpool* spool, const TestResult& row) {
  if (spool == nullptr) {
    return failedPrecondition("an in-memory database has no spool file",
                              "use a database file (--db PATH)");
  }
  return spool->append(row);
}

}  // namespace

ResultWriter::ResultWriter(ResultRecords& store, Clock& clock, Options options)
    : store_(store), clock_(clock), options_(std::move(options)) {
  thread_ = std::thread(&ResultWriter::run, this);
}

ResultWriter::~ResultWriter() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  wake_writer_.notify_one();
  thread_.join();
}

void ResultWriter::submit(TestResult result, OnStored on_stored) {
  bool wake;
  {
    MutexLock lock(mu_);
    queue_.push_back(Item{std::move(result), std::move(on_stored), clock_.now()});
    ++submitted_;
    // The writer waits either for a first row or for a full batch; nothing else needs it.
    wake = queue_.size() == 1 || queue_.size() == std::max<size_t>(options_.max_batch, 1);
  }
  if (wake) wake_writer_.notify_one();
}

Result<int64_t> ResultWriter::write(TestResult result, OnStored on_stored) {
  // The first of: stored or refused (on_stored), or held (on_held) answers the caller.
  struct Answer {
    std::promise<Result<int64_t>> promise;
    std::atomic<bool> given{false};
    void give(Result<int64_t> r) {
      if (!given.exchange(true)) promise.set_value(std::move(r));
    }
  };
  auto answer = std::make_shared<Answer>();
  auto future = answer->promise.get_future();
  Item item{std::move(result),
            [answer, on_stored = std::move(on_stored)](Result<int64_t> r) {
              if (on_stored) on_stored(r);  // before the answer: the caller sees its effects
              answer->give(std::move(r));
            },
            clock_.now()};
  item.on_held = [answer](const Status& error, bool spooled) {
    answer->give(Status(
        error.code(),
        error.message() +
            (spooled ? "; the result is durable in the spool (synced), and stored in the database "
                       "once it takes writes again"
                     : "; the spool failed too: the result is NOT durable yet, held in the "
                       "coordinator's memory and lost if it is killed before the disk takes "
                       "writes again"),
        error.fix()));
  };
  {
    MutexLock lock(mu_);
    queue_.push_back(std::move(item));
    ++submitted_;
    flush_target_ = std::max(flush_target_, submitted_);
    urgent_ = true;
  }
  wake_writer_.notify_one();
  return future.get();
}

std::vector<TestResult> ResultWriter::held() const {
  MutexLock lock(mu_);
  std::vector<TestResult> rows(in_flight_held_.begin(), in_flight_held_.end());
  for (const Item& item : queue_) {
    if (item.held) rows.push_back(item.row);
  }
  return {rows.rbegin(), rows.rend()};
}

void ResultWriter::flush() {
  if (std::this_thread::get_id() == thread_.get_id()) return;  // from on_stored: would deadlock
  (void)waitForFlush(nullptr);
}

bool ResultWriter::flushFor(std::chrono::milliseconds timeout) {
  if (std::this_thread::get_id() == thread_.get_id()) return false;
  const Clock::TimePoint deadline = clock_.now() + timeout;
  return waitForFlush(&deadline);
}

bool ResultWriter::waitForFlush(const Clock::TimePoint* deadline) {
  UniqueLock lock(mu_);
  const uint64_t target = submitted_;
  if (resolved_ >= target) return true;
  flush_target_ = std::max(flush_target_, target);
  wake_writer_.notify_one();
  const auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return resolved_ >= target; };
  if (deadline == nullptr) {
    wake_flushers_.wait(lock.native(), done);
    return true;
  }
  return waitUntil(clock_, lock.native(), wake_flushers_, *deadline, done);
}

size_t ResultWriter::pending() const {
  MutexLock lock(mu_);
  return queue_.size() + in_flight_;
}

Status ResultWriter::lastError() const {
  MutexLock lock(mu_);
  return last_error_;
}

void ResultWriter::run() {
  const size_t max_batch = std::max<size_t>(options_.max_batch, 1);
  const auto max_delay = std::chrono::milliseconds(std::max(options_.max_delay_ms, 0));
  Clock::TimePoint stop_deadline;  // set when stopping_ is first seen

  UniqueLock lock(mu_);
  for (;;) {
    if (queue_.empty()) {
      if (stopping_) return;
      wake_writer_.wait(lock.native(), [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || !queue_.empty();
      });
      continue;
    }
    if (stopping_ && stop_deadline == Clock::TimePoint()) {
      stop_deadline = clock_.now() + std::chrono::milliseconds(options_.shutdown_grace_ms);
    }

    // Gather: a full batch, the oldest row's delay spent, a flush, or a stop.
    const auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return stopping_ || queue_.size() >= max_batch || flush_target_ > resolved_;
    };
    if (!ready()) {
      (void)waitUntil(clock_, lock.native(), wake_writer_, queue_.front().queued_at + max_delay,
                      ready);
    }

    // Back off after a failure; a stop shortens the wait to the stop deadline, and a caller of
    // write() waiting for its answer ends it.
    const Clock::TimePoint now = clock_.now();
    const bool past_stop_deadline = stopping_ && now >= stop_deadline;
    if (now < retry_at_ && !past_stop_deadline && !urgent_) {
      const Clock::TimePoint until = stopping_ ? std::min(retry_at_, stop_deadline) : retry_at_;
      const bool was_stopping = stopping_;
      (void)waitUntil(clock_, lock.native(), wake_writer_, until,
                      [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
                        return stopping_ != was_stopping || urgent_;
                      });
      continue;
    }
    urgent_ = false;

    const size_t n = std::min(max_batch, queue_.size());
    std::vector<Item> batch;
    batch.reserve(n);
    std::move(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n),
              std::back_inserter(batch));
    queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
    in_flight_ = n;
    for (const Item& item : batch) {
      if (item.held) in_flight_held_.push_back(item.row);
    }

    lock.unlock();
    Outcome out = attempt(std::move(batch), past_stop_deadline);
    lock.lock();

    finishAttempt(std::move(out));
  }
}

// After an attempt (mu_ held by run()'s lock, released around callbacks and the replay): its
// error and the backoff, the spool's replay once nothing spooled waits, rows resolved and
// requeued, then the callbacks of rows newly held and of the failed batch.
void ResultWriter::finishAttempt(Outcome out) {
  in_flight_ = 0;
  in_flight_held_.clear();
  // The attempt's error and backoff are set before its rows count as resolved (below): a
  // flush() that returns sees lastError() of the same attempt.
  if (out.error.ok()) {
    last_error_ = Status();
    backoff_ms_ = 0;
    retry_at_ = Clock::TimePoint();
  } else {
    last_error_ = out.error;
    backoff_ms_ = backoff_ms_ == 0
                      ? std::max(options_.min_backoff_ms, 1)
                      : std::min(backoff_ms_ * 2, std::max(options_.max_backoff_ms, 1));
    retry_at_ = clock_.now() + std::chrono::milliseconds(backoff_ms_);
  }
  const bool had_spooled = spooled_waiting_ > 0;
  spooled_waiting_ += out.newly_spooled;
  spooled_waiting_ -= std::min(spooled_waiting_, out.spooled_resolved);
  if (had_spooled && spooled_waiting_ == 0 && out.error.ok() && options_.spool != nullptr) {
    // Every spooled row is stored: the spool has nothing left that only it holds.
    mu_.unlock();
    auto replay = options_.spool->replay(store_);
    if (!replay.ok()) {
      ComponentLog("coordinator", &clock_).error(replay.status().toString());
    }
    mu_.lock();
  }
  // Resolved only now, after the replay: a flush() that returns finds the spool gone.
  resolved_ += out.resolved;
  queue_.insert(queue_.begin(), std::make_move_iterator(out.requeue.begin()),
                std::make_move_iterator(out.requeue.end()));
  if (out.resolved > 0) wake_flushers_.notify_all();
  if (!out.held_calls.empty()) {
    // After the requeue: a caller told "held" finds its row in held().
    mu_.unlock();
    for (auto& call : out.held_calls) call();
    mu_.lock();
  }
  if (!out.error.ok() && options_.on_batch_error) {
    const size_t waiting = queue_.size();
    mu_.unlock();
    options_.on_batch_error(out.error, waiting);
    mu_.lock();
  }
}

ResultWriter::Outcome ResultWriter::attempt(std::vector<Item> batch, bool give_up) {
  Outcome out;
  std::vector<TestResult> rows;
  rows.reserve(batch.size());
  for (Item& item : batch) rows.push_back(std::move(item.row));

  Result<std::vector<int64_t>> ids = store_.insertResults(rows);
  if (ids.ok() && ids->size() == rows.size()) {
    for (size_t i = 0; i < batch.size(); ++i) {
      if (batch[i].on_stored) batch[i].on_stored((*ids)[i]);
      out.spooled_resolved += batch[i].spooled ? 1 : 0;
    }
    out.resolved = batch.size();
    return out;
  }
  Status failure = ids.ok()
                       ? internalError("insertResults returned " + std::to_string(ids->size()) +
                                       " ids for " + std::to_string(rows.size()) + " rows")
                       : ids.status();

  // A row refused for good fails the whole transaction: store the batch row by row so that only
  // the bad row is dropped (with its reason), in order.
  size_t i = 0;
  if (refusedForGood(failure)) {
    failure = Status();
    for (; i < batch.size(); ++i) {
      Result<int64_t> id = store_.insertResult(rows[i]);
      if (!id.ok() && !refusedForGood(id.status())) {
        failure = id.status();
        break;
      }
      if (batch[i].on_stored) batch[i].on_stored(std::move(id));
      out.spooled_resolved += batch[i].spooled ? 1 : 0;
      ++out.resolved;
    }
    if (failure.ok()) return out;
  }

  // Rows i.. were not stored for a reason that may pass.
  out.error = failure;
  for (; i < batch.size(); ++i) {
    if (!batch[i].spooled) {
      // Durable before it waits in memory: a kill -9 from here on loses nothing.
      Status spooled = spoolRow(options_.spool, rows[i]);
      batch[i].spooled = spooled.ok();
      out.newly_spooled += spooled.ok() ? 1 : 0;
      if (!spooled.ok()) {
        ComponentLog("coordinator", &clock_).error(spooled.toString(), {{"test", rows[i].test_id}});
      }
    }
    if (give_up) {
      // A spooled row stays in the spool: the next start replays it.
      if (batch[i].on_stored) {
        batch[i].on_stored(failure.withContext(
            "result " + rows[i].test_id + " was not stored before the result writer stopped" +
            (batch[i].spooled ? " (it is in the spool; the next start stores it)" : "")));
      }
      out.spooled_resolved += batch[i].spooled ? 1 : 0;
      ++out.resolved;
    } else {
      batch[i].row = std::move(rows[i]);
      batch[i].held = true;
      if (batch[i].on_held) {
        out.held_calls.emplace_back([f = std::move(batch[i].on_held), failure,
                                     spooled = batch[i].spooled] { f(failure, spooled); });
        batch[i].on_held = nullptr;
      }
      out.requeue.push_back(std::move(batch[i]));
    }
  }
  return out;
}

}  // namespace gdrmesh
