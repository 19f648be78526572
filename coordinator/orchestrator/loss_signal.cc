#include "coordinator/orchestrator/loss_signal.h"

#include "common/sync/mutex.h"

namespace gdrmesh {

class LossSignal::Subscription final : public LossSubscription {
 public:
  Subscription(std::shared_ptr<State> state, uint64_t id) : state_(std::move(state)), id_(id) {}
  ~Subscription() override {
    if (!state_) return;
    UniqueLock lock(state_->mu);
    state_->waiting.erase(id_);
    // Running on another thread: wait until it has returned. On this thread: the callback is
    // unsubscribing itself, and it is already running, so there is nothing to wait for.
    state_->cv.wait(lock.native(), [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_->mu) {
      return state_->running_id != id_ || state_->running_thread == std::this_thread::get_id();
    });
  }

 private:
  std::shared_ptr<State> state_;  // null: the callback ran inline at subscribe()
  const uint64_t id_;
};

LossSignal::LossSignal() : state_(std::make_shared<State>()) {}

LossSignal::~LossSignal() = default;

std::unique_ptr<LossSubscription> LossSignal::subscribe(Callback on_lost) {
  std::string reason;
  {
    MutexLock lock(state_->mu);
    if (!state_->fired) {
      const uint64_t id = state_->next_id++;
      state_->waiting.emplace(id, std::move(on_lost));
      return std::make_unique<Subscription>(state_, id);
    }
    reason = state_->reason;
  }
  on_lost(reason);  // already lost: the subscriber hears of it now, without the lock
  return std::make_unique<Subscription>(nullptr, 0);
}

bool LossSignal::fire(const std::string& reason) {
  UniqueLock lock(state_->mu);
  if (state_->fired) return false;
  state_->fired = true;
  state_->reason = reason;
  // One at a time, each taken out under the lock: a subscription destroyed before its turn is
  // never called, one destroyed during its call waits for it.
  while (!state_->waiting.empty()) {
    auto it = state_->waiting.begin();
    const uint64_t id = it->first;
    Callback cb = std::move(it->second);
    state_->waiting.erase(it);
    state_->running_id = id;
    state_->running_thread = std::this_thread::get_id();
    lock.unlock();
    cb(reason);
    cb = nullptr;  // what it captured goes before its unsubscriber may return
    lock.lock();
    state_->running_id = 0;
    state_->running_thread = std::thread::id();
    state_->cv.notify_all();
  }
  return true;
}

bool LossSignal::fired() const {
  MutexLock lock(state_->mu);
  return state_->fired;
}

size_t LossSignal::subscribers() const {
  MutexLock lock(state_->mu);
  return state_->waiting.size();
}

}  // namespace gdrmesh
