// Hooks: the coordinator tells other tools about verdicts. Each configured hook (`hooks:` in the
// cluster config, docs/config.md) is a command (an argv, no shell; the event's JSON on its
// stdin, exit 0 = delivered) or a webhook (a POST of the JSON, Content-Type application/json,
// `Authorization: Bearer <token>` read from token_file at each send; 2xx = delivered). Events:
//   sweep-end          every sweep that ends (finished, cancelled, interrupted, failed)
//   suspect-appeared   a suspect (host, NIC or link) that the previous finished sweep did not name
//   suspect-cleared    a suspect of the previous finished sweep that this one, having tested
//                      its hosts, does not name
// Each carries {"event", "sweep": {id, state, verdict, reason, hosts, suspects, actions}} and,
// for suspect events, "suspect": {kind, name, score, evidence}. What "previous" means (the
// suspects last announced) is kept in a HookStateStore when one is given (the coordinator's
// database): after a restart a standing suspect does not appear again, and one that cleared
// while the coordinator was down clears at the first sweep that tests its hosts.
//
// Never blocking a sweep: onSweepEnd() only queues. One thread per Hooks sends, in order; a
// failed try is retried after backoff (doubling) on the injected Clock, at most `attempts`
// tries, then dropped and logged; a hook with queue_limit events waiting drops new ones (logged).
//
// Thread contract: onSweepEnd() and waitIdle() may be called from any thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/lifeline.h"
#include "common/status.h"
#include "common/sync/mutex.h"
#include "coordinator/actions/action_options.h"
#include "coordinator/actions/command_runner.h"
#include "coordinator/orchestrator/sweep_types.h"
#include "coordinator/store/store.h"

namespace gdrmesh {

// One try at delivering one event to one hook.
class HookTransport {
 public:
  virtual ~HookTransport() = default;
  virtual Status deliver(const HookOptions& hook, const std::string& json) = 0;
};

// Commands through a CommandRunner, webhooks with cpp-httplib.
class DefaultHookTransport final : public HookTransport {
 public:
  explicit DefaultHookTransport(CommandRunner& runner) : runner_(runner) {}
  Status deliver(const HookOptions& hook, const std::string& json) override;

 private:
  CommandRunner& runner_;
};

// The events of one ended sweep, as JSON texts (`previous`: the suspect names of the previous
// finished sweep, updated to this one's when it finished).
std::vector<std::string> hookEvents(const SweepEnding& end, const std::vector<std::string>& actions,
                                    std::set<std::string>* previous);

class Hooks {
 public:
  using Logger = std::function<void(const std::string& line)>;
  // `log` gets each line about delivery trouble (the coordinator's log when empty). `state`
  // (may be nullptr: memory only) holds the suspects last announced; read here, written after
  // each finished sweep that changes them.
  Hooks(std::vector<HookOptions> hooks, HookTransport& transport, Clock& clock, Logger log = {},
        HookStateStore* state = nullptr);
  ~Hooks();  // stops the thread; events still waiting are dropped (logged)
  Hooks(const Hooks&) = delete;
  Hooks& operator=(const Hooks&) = delete;

  // Queues the sweep's events for every hook; returns at once.
  void onSweepEnd(const SweepEnding& end, const std::vector<std::string>& actions);
  // Tests: block until nothing is queued, sending or waiting for a retry. An event (each change
  // wakes it), with no real-time bound: the test's own timeout bounds a hang.
  void waitIdle();

  struct Counters {
    uint64_t delivered = 0, retried = 0, dropped = 0;
  };
  Counters counters() const;
  // Tests: block until `pred(counters)` holds (a retry is waiting on the clock: retried grows
  // when it is scheduled).
  void waitCounters(const std::function<bool(const Counters&)>& pred);

 private:
  struct Item {
    size_t hook = 0;
    std::string json;
    int tries = 0;
  };
  void loop();
  void push(Item item) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::vector<HookOptions> hooks_;
  HookTransport& transport_;
  Clock& clock_;
  Logger log_;
  HookStateStore* const state_;

  Lifeline line_;  // retry timers reach this object only while it is open

  mutable Mutex mu_;  // guards everything below
  std::condition_variable cv_;
  std::deque<Item> ready_ ABSL_GUARDED_BY(mu_);
  std::vector<size_t> waiting_
      ABSL_GUARDED_BY(mu_);               // per hook: events queued or waiting for a retry
  size_t busy_ ABSL_GUARDED_BY(mu_) = 0;  // being sent, or waiting on a retry timer
  std::set<Clock::TimerId> timers_ ABSL_GUARDED_BY(mu_);  // retries waiting on the clock
  std::set<std::string> previous_
      ABSL_GUARDED_BY(mu_);  // suspect names of the previous finished sweep
  Counters counters_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace gdrmesh
