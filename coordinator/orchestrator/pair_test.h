// One pair test across two workers, driven over two WorkerChannels without a thread of its own:
// each phase is an asynchronous call, the next phase starts from the previous one's callback.
//
// Lean protocol (every transport but rdma_cm): three commands in sequence when both workers'
// transport signals the end of a run over the data path (capability end_signal), four when not.
//   1. initiator.prepare                          -> initiator description
//   2. target.prepare(peer, arm[, finish])         -> target description; target connected and
//                                                     running its share in the background
//   3. initiator.start(peer, run, verify if READ) -> figures (+ integrity for READ); its run
//                                                     ends by signalling the target
//   4. target.finish(verify unless READ)           -> integrity (+ staging time): with the end
//                                                     signal, sent in 2 and answered by the
//                                                     worker when the signal arrives (in either
//                                                     order with 3's reply); else sent after 3
// Classic protocol (rdma_cm, whose connect is a handshake both sides must be in at once):
// prepare both, connect both, run both, verify the destination, release both.
//
// What counts of each reply (docs/results-trust.md): integrity only from the destination, and
// only from the reply that asked it to verify; figures only from the side that measured (the
// initiator; the target too for its own direction of a bidirectional test); an endpoint's
// memory, registration path and NIC only as asked (auto: the worker's pick). A reply that claims
// anything else is a protocol violation: ignored, the test FAILED naming the worker, and
// PairTestOptions::on_violation told.
//
// Every fabric failure becomes a FAILED/SKIPPED result with the phase, the worker and the
// reason; a lost worker is named as such, and ends the test as soon as it is declared lost
// (WorkerChannel::onLost), whichever side the test is waiting on. Both sides are released on
// every path.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/clock.h"
#include "common/inventory.h"
#include "common/pair_spec.h"
#include "common/result.h"
#include "common/status.h"
#include "coordinator/orchestrator/worker_channel.h"

namespace gdrmesh {

struct PairTestOptions {
  double command_timeout_seconds = 10;  // prepare, connect, verify, release
  // After a transport error, how long to wait for a lost stream to show before blaming the
  // transport (a peer that died often shows first as the other side's I/O error).
  // A loss shown meanwhile ends the test at once. (A running test hears of either worker's
  // loss through WorkerChannel::onLost, whatever it is waiting on: nothing polls.)
  double lost_grace_seconds = 2;
  // Told of every protocol violation (a reply that claims what its side was not asked, or a
  // prepared endpoint that is not what was asked: docs/results-trust.md), once per violation,
  // before the test's `done`, from any thread, without the test's lock held: `worker` is the
  // worker that sent it, `what` names the field and the claim. The test itself is FAILED with
  // the violation in its reason. Unset: the reason is the only record.
  std::function<void(const std::string& worker, const std::string& what)> on_violation;
};

// A finished pair test: the row to store, and whether a retry may help (transient errors:
// worker lost, deadline, resources; never an integrity failure or a refusal).
struct PairTestOutcome {
  TestResult result;
  bool transient = false;
};

// Everything the pair test needs to know about its two workers.
struct PairEndpoints {
  std::shared_ptr<const WorkerStatus> initiator;  // null: unknown worker
  std::shared_ptr<const WorkerStatus> target;
  std::shared_ptr<WorkerChannel> initiator_channel;  // null: offline
  std::shared_ptr<WorkerChannel> target_channel;
};

// Checks the request against the two workers' inventories: unknown NIC, GPU index out of
// range, an option the chosen transport cannot honour. Errors name the field and the fix.
Status checkPairAgainstInventory(const PairTestSpec& spec, const WorkerStatus& initiator,
                                 const WorkerStatus& target);

// The transport a test would use: as asked, or the best both sides have (verbs, then
// simulated, then emulated). nullopt when they share none.
std::optional<TransportKind> chooseTransport(const PairTestSpec& spec, const Inventory& initiator,
                                             const Inventory& target);

// The row a pair test starts from: what was asked (op, mode, size, iterations, QPs), both
// endpoints as asked (worker, host, NIC, memory, GPU, registration path) and the transport it
// will use. runPairTest fills in the rest; RunTest stores it as the test's started marker
// (a coordinator killed mid-test records it as interrupted at its next start).
TestResult startedResult(const PairTestSpec& spec, const PairEndpoints& endpoints,
                         std::string test_id, int64_t started_ms);

// Runs one pair test; `done` is called exactly once, from any thread.
void runPairTest(const PairTestSpec& spec, const PairEndpoints& endpoints, Clock& clock,
                 const PairTestOptions& options, std::string test_id, uint64_t seed,
                 std::function<void(PairTestOutcome)> done);

// "t-20261123T020000-1a2b3c4d"
std::string newTestId(int64_t unix_ms);
uint64_t newSeed();

}  // namespace gdrmesh
