#include "coordinator/orchestrator/lldp_survey.h"

#include <cstdio>
#include <deque>
#include <future>
#include <memory>
#include <utility>

#include "common/sync/mutex.h"

namespace gdrmesh {
namespace {

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

// One survey: its replies, the workers not asked yet and the asks in flight. Shared by the
// channels' callbacks and the deadline's timer; whichever settles the last reply (or the timer)
// finishes it.
class Survey final : public std::enable_shared_from_this<Survey> {
 public:
  Survey(Clock& clock, LldpSurveyOptions options, LldpSurveyDone done)
      : clock_(clock), options_(std::move(options)), done_(std::move(done)) {
    request_.lldp = true;
    request_.ca = options_.ca;
    deadline_ = clock_.after(options_.deadline_seconds);
  }

  void start(WorkerDirectory& directory) {
    {
      MutexLock lock(mu_);
      for (const WorkerStatus& w : directory.list()) {
        LldpWorkerReply r;
        r.worker = w.name;
        auto channel = w.state == "online" ? directory.channel(w.name) : nullptr;
        r.online = channel != nullptr;
        if (r.online) queue_.push_back(replies_.size());
        replies_.push_back(std::move(r));
        channels_.push_back(std::move(channel));
      }
      settled_.assign(replies_.size(), false);
      pending_ = queue_.size();
      if (pending_ > 0) {
        timer_ = clock_.schedule(deadline_, [self = shared_from_this()] { self->expire(); });
      }
    }
    if (!finishIfDone()) launch();
  }

 private:
  // Sends the asks the bound allows. One thread at a time sends (`launching_`); an answer that
  // frees a slot while another thread sends is picked up by that thread's next round, so a
  // channel that answers inline (a lost worker) does not recurse.
  void launch() {
    {
      MutexLock lock(mu_);
      if (launching_) return;
      launching_ = true;
    }
    for (;;) {
      std::vector<size_t> batch;
      {
        MutexLock lock(mu_);
        while (!finished_ && !queue_.empty() &&
               (options_.max_concurrency == 0 || in_flight_ < options_.max_concurrency)) {
          batch.push_back(queue_.front());
          queue_.pop_front();
          ++in_flight_;
        }
        if (batch.empty()) {
          launching_ = false;
          return;
        }
      }
      for (size_t i : batch) {
        channels_[i]->discoverFabric(
            request_, deadline_, [self = shared_from_this(), i](Result<fabric::DiscoverOutcome> r) {
              self->answered(i, std::move(r));
            });
      }
    }
  }

  void answered(size_t i, Result<fabric::DiscoverOutcome> r) {
    {
      MutexLock lock(mu_);
      if (finished_ || settled_[i]) return;
      settled_[i] = true;
      --in_flight_;
      --pending_;
      if (r.ok()) {
        replies_[i].outcome = std::move(r).value();
      } else {
        replies_[i].call = r.status();
      }
    }
    if (!finishIfDone()) launch();
  }

  // The deadline: every reply still missing is past it, asked or not.
  void expire() {
    {
      MutexLock lock(mu_);
      if (finished_) return;
      timer_ = 0;
      const std::string within = " within " + seconds(options_.deadline_seconds) + " s";
      for (size_t i = 0; i < replies_.size(); ++i) {
        if (!replies_[i].online || settled_[i]) continue;
        settled_[i] = true;
        replies_[i].call = Status(
            Code::kDeadlineExceeded, "worker " + replies_[i].worker + " did not answer" + within,
            "check the worker's log; lldpcli answers within 10 s on a healthy host");
      }
      for (size_t i : queue_) {
        replies_[i].call = Status(Code::kDeadlineExceeded,
                                  "not asked" + within + ": the workers before it took longer",
                                  "raise --deadline or --max-concurrency");
      }
      queue_.clear();
      pending_ = 0;
    }
    finishIfDone();
  }

  // Runs `done` once every reply is in; true when the survey is (or was) finished.
  bool finishIfDone() {
    LldpSurveyDone done;
    std::vector<LldpWorkerReply> out;
    Clock::TimerId timer = 0;
    {
      MutexLock lock(mu_);
      if (finished_) return true;
      if (pending_ > 0) return false;
      finished_ = true;
      done = std::move(done_);
      out = std::move(replies_);
      timer = timer_;
    }
    if (timer != 0) clock_.cancel(timer);
    done(std::move(out));
    return true;
  }

  Clock& clock_;
  const LldpSurveyOptions options_;
  fabric::DiscoverRequest request_;
  Clock::TimePoint deadline_;
  // Set in start() before any ask, read-only after.
  std::vector<std::shared_ptr<WorkerChannel>> channels_;

  Mutex mu_;
  LldpSurveyDone done_ ABSL_GUARDED_BY(mu_);
  std::vector<LldpWorkerReply> replies_ ABSL_GUARDED_BY(mu_);
  std::vector<bool> settled_ ABSL_GUARDED_BY(mu_);  // replied, or past the deadline
  std::deque<size_t> queue_ ABSL_GUARDED_BY(mu_);   // online, not asked yet
  size_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  size_t pending_ ABSL_GUARDED_BY(mu_) = 0;  // online workers without a reply
  bool launching_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  Clock::TimerId timer_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace

void startLldpSurvey(WorkerDirectory& directory, Clock& clock, const LldpSurveyOptions& options,
                     LldpSurveyDone done) {
  std::make_shared<Survey>(clock, options, std::move(done))->start(directory);
}

std::vector<LldpWorkerReply> surveyLldp(WorkerDirectory& directory, Clock& clock,
                                        const LldpSurveyOptions& options) {
  // Shared: the promise outlives a set_value that wakes this thread.
  auto replies = std::make_shared<std::promise<std::vector<LldpWorkerReply>>>();
  auto result = replies->get_future();
  startLldpSurvey(directory, clock, options,
                  [replies](std::vector<LldpWorkerReply> r) { replies->set_value(std::move(r)); });
  return result.get();
}

}  // namespace gdrmesh
