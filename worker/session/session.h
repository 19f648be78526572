// Pair-test sessions on a worker: one per test id. A session owns the buffer (and the host
// mirror of the staged path), the transport endpoint, the data pattern and the verification.
// The transports only move bytes; everything a result claims about integrity and about the
// data path is decided here.
//
// Two protocols drive a session:
//   classic (rdma_cm):  prepare, connect, run..., verify, release; each a command of its own.
//   lean (two round trips per side):
//     target:     prepare(spec, {peer, arm})  connects, then arm() starts its share of the run
//                                             on a thread owned by the session
//                 finish(id, ...)             waits for the armed run, verifies, releases (sent
//                                             with the prepare when the run has end_signal: the
//                                             worker agent runs it right after the prepare, and
//                                             the initiator's end signal ends the armed run)
//     initiator:  prepare(spec)
//                 start(id, peer, run, ...)   connects, runs, verifies, releases
// Nothing outlives its test: the armed thread is joined by release(), abortAll(), finish() or,
// at the latest, by the session's destruction; start() and finish() release on every outcome.
//
// Thread contract: all SessionManager methods are thread-safe. Commands of one test arrive in
// order, but release/abortAll may arrive while a run (or an armed run, or a finish waiting for
// it) is in progress on another thread: they abort the endpoint and the run returns kAborted.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "common/status.h"
#include "common/sync/mutex.h"
#include "common/types.h"
#include "worker/memory/buffer.h"
#include "worker/transport/transport.h"

namespace gdrmesh {

// Allocates test buffers. The worker's provider serves host memory always and GPU memory
// when the CUDA driver is present.
class MemoryProvider {
 public:
  virtual ~MemoryProvider() = default;
  virtual Result<std::unique_ptr<Buffer>> allocate(MemoryKind kind, int gpu, size_t size,
                                                   int numa_node) = 0;
};

// Host memory only (a worker without CUDA).
class HostMemoryProvider final : public MemoryProvider {
 public:
  Result<std::unique_ptr<Buffer>> allocate(MemoryKind kind, int gpu, size_t size,
                                           int numa_node) override;
};

// A side spec plus where this worker places host buffers.
struct SessionSpec : SideSpec {
  int numa_node = -1;
};

struct PreparedEndpoint {
  EndpointDesc desc;
  std::string buffer;                 // "host", "gpu:0"
  RegPath reg_path = RegPath::kHost;  // as it ran, staged included
};

struct VerifyOutcome {
  IntegrityReport integrity;
  double staging_seconds = 0;  // GPU <- host mirror copy on the staged path
};

// Lean protocol, target: what prepare does beyond preparing.
struct PrepareExtras {
  std::optional<EndpointDesc> peer;  // connect to it before returning
  std::optional<RunSpec> arm;        // then start this side's run in the background (needs peer)
};

// Lean protocol, initiator: one round trip.
struct StartSpec {
  EndpointDesc peer;
  RunSpec run;
  bool verify = false;  // the initiator is the destination (READ)
  uint64_t verify_length = 0;
};

// Lean protocol, target: one round trip.
struct FinishSpec {
  bool verify = false;
  uint64_t verify_length = 0;
  double timeout_seconds = kDefaultRunTimeoutSeconds;  // how long to wait for the armed run
};

class SessionManager {
 public:
  struct Options {
    bool allow_fault_injection = false;
    size_t max_sessions = 64;
    // Sealed tests: landed buffers kept after finish/start for a reveal (oldest dropped).
    size_t max_parked = 4;
  };
  SessionManager(MemoryProvider& memory, Options options);
  ~SessionManager();

  // Registers a transport; a kind may be registered once.
  void addTransport(std::unique_ptr<Transport> transport);
  // Transports that are viable here, and the reasons of the others.
  std::vector<TransportKind> viableTransports(std::vector<std::string>* notes) const;
  // The capabilities of each of `kinds` that was added (in that order).
  std::vector<TransportCapabilities> capabilities(const std::vector<TransportKind>& kinds) const;

  // Prepares a session; with `extras`, also connects and arms it (lean protocol, target). When
  // connecting or arming fails the session is released and the error returned.
  Result<PreparedEndpoint> prepare(const SessionSpec& spec, const PrepareExtras& extras = {});
  Result<uint32_t> connect(const std::string& test_id, const EndpointDesc& peer);
  Result<Measurement> run(const std::string& test_id, const RunSpec& spec);
  // Checks the landed data. In a sealed test whose seed is withheld, reports its digest
  // instead; `reveal_seed` != 0 then checks against the revealed seed (the open session, or the
  // buffer kept after start/finish: see reveal()).
  Result<VerifyOutcome> verify(const std::string& test_id, uint64_t length,
                               uint64_t reveal_seed = 0);

  // Starts this side's run on a thread owned by the session (after connect). A session is
  // armed at most once, and an armed session refuses run().
  Status arm(const std::string& test_id, const RunSpec& spec);
  // Waits up to spec.timeout_seconds for the armed run, verifies when asked, and releases the
  // session whatever the outcome. kDeadlineExceeded when the run did not end in time (the run is
  // aborted), the run's own error when it failed, kAborted when released meanwhile.
  // Outcome: measurement when the run produced figures; staging_seconds is every host<->GPU
  // copy this side made (source and destination).
  Result<SideOutcome> finish(const std::string& test_id, const FinishSpec& spec);
  // Connects, runs, verifies when asked, and releases the session whatever the outcome.
  Result<SideOutcome> start(const std::string& test_id, const StartSpec& spec);
  // Sealed test, after start/finish reported a digest: checks the kept landed data against the
  // revealed seed (counts and locates wrong bytes), then frees it. kNotFound when not kept.
  Result<IntegrityReport> reveal(const std::string& test_id, uint64_t seed);
  // Aborts and frees a session. Unknown ids are fine (already released).
  void release(const std::string& test_id);
  // Aborts every session (coordinator lost).
  void abortAll();
  size_t active() const;

 private:
  struct Session;
  std::shared_ptr<Session> find(const std::string& test_id) const;
  Result<PreparedEndpoint> prepareOnly(const SessionSpec& spec);
  // Aborts the endpoint and joins the armed thread, if any.
  static void stop(Session& s);
  // Sealed test: keeps the landed buffer of a released session that reported a digest. Its
  // endpoint (queue pairs, registrations) is destroyed with the session; only memory is kept.
  void park(const std::string& test_id, Session& s, const Result<SideOutcome>& outcome);
  struct Parked {
    std::unique_ptr<Buffer> buffer;
    uint64_t length = 0;
  };
  // Removes `s` (if the id still names it) and stops it.
  void drop(const std::string& test_id, const std::shared_ptr<Session>& s);
  Result<std::pair<std::shared_ptr<Session>, PreparedEndpoint>> prepareReserved(
      const SessionSpec& spec);

  MemoryProvider& memory_;
  const Options options_;
  std::map<std::string, Parked> parked_;  // guarded by mu_
  std::deque<std::string> parked_order_;  // oldest first
  std::map<TransportKind, std::unique_ptr<Transport>> transports_;
  mutable Mutex mu_;
  std::map<std::string, std::shared_ptr<Session>> sessions_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gdrmesh
