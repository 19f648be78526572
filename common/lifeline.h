// A callback scheduled somewhere else (a clock's timer, another object's thread) that must reach
// its owner only while the owner is alive. Clock::cancel() cannot stop a callback the clock has
// already taken, so an owner that cancels and then dies can still be called a moment later.
// The callback captures a Lifeline::Ref and runs its body through it; the owner calls close()
// before it goes: close() waits for a body running now, and every later one is skipped.
//
// Rules: close() must not be called while holding a lock the body takes, nor from a body.
#pragma once

#include <memory>
#include <utility>

#include "common/sync/mutex.h"

namespace gdrmesh {

class Lifeline {
 public:
  class Ref {
   public:
    // Runs `body` if the owner is open, holding the line while it runs; false when closed.
    template <typename F>
    bool run(F&& body) const {
      MutexLock lock(state_->mu);
      if (!state_->open) return false;
      std::forward<F>(body)();
      return true;
    }

   private:
    friend class Lifeline;
    struct State {
      Mutex mu;
      bool open ABSL_GUARDED_BY(mu) = true;
    };
    explicit Ref(std::shared_ptr<State> s) : state_(std::move(s)) {}
    std::shared_ptr<State> state_;
  };

  Lifeline() : state_(std::make_shared<Ref::State>()) {}
  ~Lifeline() { close(); }
  Lifeline(const Lifeline&) = delete;
  Lifeline& operator=(const Lifeline&) = delete;

  Ref ref() const { return Ref(state_); }
  // After it returns no body runs again; waits for one running now.
  void close() {
    MutexLock lock(state_->mu);
    state_->open = false;
  }

 private:
  std::shared_ptr<Ref::State> state_;
};

}  // namespace gdrmesh
