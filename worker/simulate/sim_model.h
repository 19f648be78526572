// What a simulated worker claims and answers, in domain terms: its inventory, its pair-test
// sessions, the figures of its runs and the faults it plays. The gRPC layer
// (sim_workers.h) only converts to and from the wire and writes each answer at the time the
// model gives; everything a simulated result says is decided here.
//
// A simulated test moves no bytes: its endpoints are TRANSPORT_SIMULATED, its figures come from
// SimConfig (x the slow factors of both ends), and its integrity check says where="simulated".
// It is never RDMA and never GPUDirect, whatever memory or registration path was asked for.
//
// The peer of a test is known from its EndpointDesc: a simulated endpoint carries its worker's
// name and the NIC it plays (SimulatedDesc), so faults apply to every test touching a faulty
// worker or NIC, on both sides.
//
// Thread contract: SimFaults is shared by every worker and thread-safe (its one mutable part, the
// tests a glitch has slowed so far, is guarded). SimWorkerModel methods are
// thread-safe (the stream's reactor calls the commands, the heartbeat timer reads
// activeTests()).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/endpoint.h"
#include "common/inventory.h"
#include "common/status.h"
#include "common/sync/mutex.h"
#include "worker/simulate/sim_config.h"

namespace gdrmesh {

// The fault table of one process of simulated workers.
class SimFaults {
 public:
  // `noise`: SimConfig::noise; `fabric`: SimConfig::fabric (port faults), may be null.
  SimFaults(std::vector<SimFault> faults, uint64_t seed, double noise = 0,
            std::shared_ptr<const SimFabric> fabric = nullptr);

  // Product of the slow factors on (worker, nic): < 1 is slower.
  double slowFactor(const std::string& worker, const std::string& nic) const;
  // The factor of test `test_id` between the two endpoints beyond their own slow factors: the
  // link faults between them, a glitch while it lasts (the first N distinct test ids between
  // the two), and the noise draw. Both sides of a test get the same answer.
  double pairFactor(const std::string& test_id, const std::string& worker, const std::string& nic,
                    const std::string& peer, const std::string& peer_nic) const;
  // The port faults the data path from (src, src_nic) to (dst, dst_nic) crosses (--sim-fabric).
  double pathFactor(const std::string& src, const std::string& src_nic, const std::string& dst,
                    const std::string& dst_nic) const;
  // Why a test touching these endpoints fails (fail, then flap), or OK.
  Status testFault(const std::string& test_id, const std::string& worker,
                   const std::string& nic) const;
  // The mute or drop fault of a worker, nullptr when none.
  const SimFault* streamFault(const std::string& worker, SimFault::Kind kind) const;

 private:
  std::vector<SimFault> faults_;
  uint64_t seed_;
  double noise_;
  std::shared_ptr<const SimFabric> fabric_;
  mutable Mutex mu_;
  mutable std::map<size_t, std::vector<std::string>> glitched_
      ABSL_GUARDED_BY(mu_);  // fault index -> test ids
};

// What a worker claims: NICs mlx5_0.. (one ACTIVE InfiniBand port at nic_rate_gbps), GPUs whose
// nearest NIC is mlx5_{gpu % nics}, and the simulated transport only.
Inventory simInventory(const SimConfig& config, const std::string& name, int index);

// An answer and the time it is due (runs take SimConfig::test_ms).
template <typename T>
struct SimAnswer {
  Clock::TimePoint at;
  Result<T> value;
};

class SimWorkerModel {
 public:
  // `config`, `faults` and `clock` outlive the model.
  SimWorkerModel(const SimConfig& config, const SimFaults& faults, const Clock& clock,
                 std::string name, int index);
  SimWorkerModel(const SimWorkerModel&) = delete;
  SimWorkerModel& operator=(const SimWorkerModel&) = delete;

  const std::string& name() const { return name_; }
  const Inventory& inventory() const { return inventory_; }

  // What to do with the next command from the coordinator (counts it).
  enum class Fate { kAnswer, kMute, kDrop };
  Fate nextCommand();

  // Classic protocol, and the lean initiator's prepare.
  Result<EndpointDesc> prepare(const SideSpec& spec);
  Result<uint32_t> connect(const std::string& test_id, const EndpointDesc& peer);  // path MTU
  SimAnswer<Measurement> run(const std::string& test_id, const RunSpec& run);
  Result<IntegrityReport> verify(const std::string& test_id, uint64_t length);
  void release(const std::string& test_id);

  // Lean protocol. Target: prepare, connect to `peer`, arm `arm` now (when set).
  Result<EndpointDesc> prepareArmed(const SideSpec& spec, const EndpointDesc& peer,
                                    const std::optional<RunSpec>& arm);
  // Initiator: connect, run, verify when asked, release.
  SimAnswer<SideOutcome> start(const std::string& test_id, const EndpointDesc& peer,
                               const RunSpec& run, bool verify, uint64_t verify_length);
  // Target: wait for the armed run (at most timeout_seconds), verify when asked, release.
  SimAnswer<SideOutcome> finish(const std::string& test_id, bool verify, uint64_t verify_length,
                                double timeout_seconds);

  // A stream ended: every test is gone, as on a real worker.
  void abortAll();
  size_t activeTests() const;

 private:
  struct Session {
    SideSpec spec;
    EndpointDesc local;
    std::optional<EndpointDesc> peer;
    // Lean target: the armed run's outcome and when it completes.
    bool armed = false;
    Clock::TimePoint armed_done;
    std::optional<Result<Measurement>> armed_result;
  };

  Result<Measurement> measure(const std::string& test_id, const Session& s,
                              const RunSpec& run) const;
  IntegrityReport integrity(const Session& s, uint64_t length) const;
  Result<Session*> find(const std::string& test_id, const char* command)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const SimConfig& config_;
  const SimFaults& faults_;
  const Clock& clock_;
  const std::string name_;
  const Inventory inventory_;
  mutable Mutex mu_;
  std::map<std::string, Session> sessions_ ABSL_GUARDED_BY(mu_);
  uint64_t commands_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace gdrmesh
