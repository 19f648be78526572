#include "worker/service/command_pool.h"

#include <system_error>
#include <utility>

#include "common/sync/mutex.h"

namespace gdrmesh {
namespace {

CommandPool::Options normalised(CommandPool::Options o) {
  if (o.max_threads == 0) o.max_threads = 1;
  return o;
}

}  // namespace

CommandPool::CommandPool(Options options) : options_(normalised(options)) {}

CommandPool::~CommandPool() {
  join();
}

bool CommandPool::submit(std::function<void()> task) {
  MutexLock lock(mu_);
  if (closed_ || queue_.size() >= options_.max_queued) return false;
  queue_.push_back(std::move(task));
  // Every queued task beyond the idle threads wants a thread of its own, up to the bound.
  if (queue_.size() > idle_ && threads_.size() < options_.max_threads) {
    try {
      threads_.emplace_back([this] { loop(); });
    } catch (const std::system_error&) {
      if (threads_.empty()) {
        queue_.pop_back();
        return false;
      }
      // The running threads will get to it.
    }
  }
  cv_.notify_one();
  return true;
}

void CommandPool::loop() {
  UniqueLock lock(mu_);
  for (;;) {
    ++idle_;
    cv_.wait(lock.native(),
             [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return closed_ || !queue_.empty(); });
    --idle_;
    if (closed_) return;
    std::function<void()> task = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    task();
    task = nullptr;  // what the task captured goes before the next one starts
    lock.lock();
  }
}

size_t CommandPool::stop() {
  std::deque<std::function<void()>> dropped;
  {
    MutexLock lock(mu_);
    closed_ = true;
    dropped.swap(queue_);
  }
  cv_.notify_all();
  return dropped.size();
}

void CommandPool::join() {
  stop();
  std::vector<std::thread> threads;
  {
    MutexLock lock(mu_);
    threads.swap(threads_);
  }
  for (auto& t : threads) t.join();
}

size_t CommandPool::queued() const {
  MutexLock lock(mu_);
  return queue_.size();
}

size_t CommandPool::threads() const {
  MutexLock lock(mu_);
  return threads_.size();
}

}  // namespace gdrmesh
