// In-process fakes of the orchestrator's seams: FakeWorkerChannel answers every command from
// a script (figures, failures, silence) after a delay on the injected clock, and
// FakeDirectory holds the fake workers. Used by every orchestrator unit test; no process, no
// socket, no sleep.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "coordinator/orchestrator/worker_channel.h"

namespace gdrmesh::testing {

// How a fake worker behaves.
struct FakeBehaviour {
  double command_seconds = 0.0001;  // reply delay of prepare/release/connect/verify
  double run_seconds = 0.01;        // the simulated transfer
  double bandwidth_gbps = 100;
  double latency_us = 2;
  bool mute = false;           // never answers (deadlines must end the test)
  std::set<std::string> hold;  // these commands ("prepare", "start", ...) are never answered
  // A channel that breaks WorkerChannel's contract: held commands are not failed at their
  // deadline either (their callback never runs).
  bool ignore_deadlines = false;
  Status fail_prepare;       // non-OK: prepare fails with this
  Status fail_run;           // non-OK: start/run fails with this
  uint64_t wrong_bytes = 0;  // the destination reports this many wrong bytes
  // A destination that never received the data yet claims it did: it reports a digest it made
  // up (sealed tests) and, after a reveal, no wrong byte.
  bool forge_digest = false;
  // A destination that answers a sealed test as an old or forged worker would: "checked, no
  // wrong byte", no digest.
  bool claim_check = false;
  // Rogue claims (docs/results-trust.md): every start/finish reply carries an integrity report
  // whether asked or not (a digest of this side's own pattern: what a rogue source can always
  // compute), and a target's finish carries figures at claim_gbps (> 0) although a target
  // measures nothing in a one-way test.
  bool claim_integrity = false;
  double claim_gbps = 0;
  // A prepare reply that describes other memory or another registration path than was asked.
  std::optional<MemoryKind> claim_memory;
  std::optional<RegPath> claim_reg;
  // What discoverFabric answers; unset: no InfiniBand device (kFailedPrecondition).
  std::function<fabric::DiscoverOutcome(const fabric::DiscoverRequest&)> discover;
  // What readPortCounters answers; unset: no InfiniBand device (kFailedPrecondition).
  std::function<fabric::CounterReadOutcome(const fabric::CounterReadRequest&)> read_counters;
};

class FakeWorkerChannel final : public WorkerChannel {
 public:
  FakeWorkerChannel(std::string name, Clock& clock) : name_(std::move(name)), clock_(clock) {}

  FakeBehaviour behaviour;
  // "prepare t-1 +peer +arm", "start t-1", ... in call order.
  std::vector<std::string> log() const;

  const std::string& worker() const override { return name_; }
  bool lost() const override { return lost_; }
  std::unique_ptr<LossSubscription> onLost(LossSignal::Callback on_lost) override {
    return lost_signal_.subscribe(std::move(on_lost));
  }
  // Declares the worker lost, as the gRPC link does when its stream ends (WorkerLink::fail):
  // every call still waiting for its reply fails with kUnavailable "worker lost", every later
  // call fails at once, then the loss's subscribers are told, on this thread
  // (tests/integration/channel checks the fake and the real link against one contract).
  void lose(const std::string& reason = "(lost, fake)");
  size_t lossSubscribers() const { return lost_signal_.subscribers(); }
  int inFlight() const;
  int maxInFlight() const;  // prepared sessions at once, highest seen
  int reveals() const;      // sealed tests: seeds revealed to this worker

  void prepare(const PrepareCommand& c, Deadline deadline, Done<EndpointDesc> done) override;
  void prepareFinishing(const PrepareCommand& c, Deadline deadline, Done<EndpointDesc> done,
                        Deadline finish_deadline, Done<SideOutcome> finished) override;
  void connect(const std::string& test_id, const EndpointDesc& peer, Deadline deadline,
               Done<SideOutcome> done) override;
  void run(const std::string& test_id, const RunSpec& spec, Deadline deadline,
           Done<SideOutcome> done) override;
  void verify(const std::string& test_id, uint64_t length, uint64_t reveal_seed, Deadline deadline,
              Done<SideOutcome> done) override;
  void release(const std::string& test_id, const std::string& reason, Deadline deadline,
               Done<bool> done) override;
  void start(const StartCommand& c, Deadline deadline, Done<SideOutcome> done) override;
  void finish(const FinishCommand& c, Deadline deadline, Done<SideOutcome> done) override;
  void discoverFabric(const fabric::DiscoverRequest& request, Deadline deadline,
                      Done<fabric::DiscoverOutcome> done) override;
  void readPortCounters(const fabric::CounterReadRequest& request, Deadline deadline,
                        Done<fabric::CounterReadOutcome> done) override;

 private:
  template <typename T>
  void reply(const char* command, double after_seconds, Deadline deadline, Done<T> done,
             std::function<Result<T>()> f);
  SideOutcome measured(const RunSpec& spec) const;
  void note(const std::string& line);
  // The initiator's run of `test_id` ended with an end signal: its target's finish answers.
  static void signalEnd(const std::string& test_id);
  void open(const std::string& test_id);
  void close(const std::string& test_id);
  // What the destination of `id` reports about `len` landed bytes: a digest in a sealed test
  // (withheld seed), else a check.
  IntegrityReport landed(const std::string& id, uint64_t len, const FakeBehaviour& b);
  // Adds the rogue claims of `b` to a reply of session `id` (start or finish).
  void claim(const std::string& id, uint64_t len, const FakeBehaviour& b, SideOutcome* o);

  // A call waiting for its reply, as lose() ends it; returns the key for untrack().
  uint64_t track(std::function<void(const Status&)> fail);
  void untrack(uint64_t key);

  const std::string name_;
  Clock& clock_;
  std::atomic<bool> lost_{false};
  std::mutex calls_mu_;  // guards calls_ and next_call_
  std::map<uint64_t, std::function<void(const Status&)>> calls_;
  uint64_t next_call_ = 1;
  LossSignal lost_signal_;
  mutable std::mutex mu_;
  std::vector<std::string> log_;
  std::set<std::string> sessions_;
  std::map<std::string, RunSpec> armed_;
  std::map<std::string, SideSpec> sides_;  // every prepared side, by session id
  std::map<std::string, uint64_t> kept_;   // sealed: landed data kept for a reveal (its seed)
  // Targets prepared with their finish: a release answers the finish (aborted), by session id.
  std::map<std::string, std::function<void()>> aborts_;
  int reveals_ = 0;
  int max_in_flight_ = 0;
};

class FakeDirectory final : public WorkerDirectory {
 public:
  explicit FakeDirectory(Clock& clock) : clock_(clock) {}
  // Adds an online worker with `nics` NICs (mlx5_0..) on the emulated transport.
  FakeWorkerChannel& add(const std::string& name, int nics = 1);
  // Registration and loss: each is a WorkerDirectory event (watch()), as the registry's are.
  void setOffline(const std::string& name);
  void setOnline(const std::string& name);  // the worker registers again
  void setTransports(const std::string& name, std::vector<std::string> transports);
  FakeWorkerChannel& fake(const std::string& name) { return *channels_.at(name); }
  // Edits a worker's registration (as a re-registration would).
  void edit(const std::string& name, const std::function<void(WorkerStatus&)>& f);

  std::vector<WorkerStatus> list() const override;
  std::shared_ptr<const WorkerStatus> get(const std::string& name) const override;
  std::shared_ptr<WorkerChannel> channel(const std::string& name) const override;

 private:
  void setState(const std::string& name, const char* state);
  Clock& clock_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<WorkerStatus>> status_;
  std::map<std::string, std::shared_ptr<FakeWorkerChannel>> channels_;
};

}  // namespace gdrmesh::testing
