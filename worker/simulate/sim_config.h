// Configuration of simulated workers (`gdrmesh worker --simulate N`): how many, what they
// claim to own, the figures they report, and the faults they play. Domain terms only; no
// protobuf, no gRPC.
//
// Simulated workers move no bytes. Every figure they report is configured here and is labelled
// TRANSPORT_SIMULATED end to end: never RDMA, never GPUDirect. They exist to load the
// coordinator (registry, dispatch, sweeps) with hundreds of workers from one process.
//
// Fault specs (`--sim-fault`, repeatable; `fault:` lines in a config file):
//   slow:WORKER[/NIC]:FACTOR  bandwidth x FACTOR and latency / FACTOR on every test touching it
//   fail:WORKER[/NIC]         runs touching it fail: FAILED_PRECONDITION with the reason
//   flap:WORKER:P             each test touching it fails (UNAVAILABLE) with probability P; the
//                             draw is seeded by (seed, test id, worker) so both sides agree
//   mute:WORKER[:AFTER_N]     answers its first AFTER_N commands (default 0), then none; keeps
//                             heartbeating, so only the coordinator's per-phase timeout ends it
//   drop:WORKER:AFTER_N       answers AFTER_N commands, then closes its stream on the next one
//                             and stays away
//   link:WORKER[/NIC]:WORKER[/NIC]:FACTOR
//                             bandwidth x FACTOR (latency / FACTOR) on every test between the
//                             two, in either direction: one bad link (cable, port, switch path)
//   port:SWITCH[PORT]:FACTOR  with --sim-fabric FILE: bandwidth x FACTOR (latency / FACTOR) on
//                             every test whose data path, traced from the snapshot's LFTs,
//                             crosses the switch's port either way: one bad cable in the fabric
//   glitch:WORKER:WORKER:FACTOR[:N]
//                             the first N (default 1) tests between the two run at FACTOR, the
//                             rest at full speed: one noisy sample, which a repeat does not show
// `noise: F` (a --sim-config key) scales each test's figures by a factor drawn uniformly
// from [1 - F, 1 + F], seeded by (seed, test id): the spread of a healthy fabric.
// WORKER is a full simulated name ("sim-0003"); NIC a device name ("mlx5_1").
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "security/policy.h"
#include "worker/simulate/sim_fabric.h"

namespace gdrmesh {

struct SimFault {
  enum class Kind { kSlow, kFail, kFlap, kMute, kDrop, kLink, kGlitch, kPort };
  Kind kind = Kind::kSlow;
  std::string worker;
  std::string nic;          // "" = every NIC of the worker
  std::string peer;         // link, glitch: the other end's worker
  std::string peer_nic;     // link: "" = every NIC of the peer
  double factor = 1;        // slow, link, glitch
  double probability = 0;   // flap
  uint64_t after_n = 0;     // mute, drop: commands answered first; glitch: tests slowed
  std::string switch_name;  // port: the switch (node description) and its port
  int port = 0;
  std::string text;  // the spec as given, quoted in reasons
};

// Parses one fault spec (grammar above). Errors name the spec and the field.
Result<SimFault> parseSimFault(std::string_view spec);

struct SimConfig {
  std::string coordinator;  // HOST:PORT
  int count = 1;            // simulated workers in this process
  std::string name_prefix = "sim";
  // Inventory each worker claims.
  int nics = 1;                // mlx5_0 .. mlx5_{nics-1}, one ACTIVE InfiniBand port each
  double nic_rate_gbps = 400;  // port rate
  int gpus = 0;                // GPU i's nearest NIC is mlx5_{i % nics}
  // Figures of every simulated test (before faults).
  double test_ms = 10;  // how long a run takes, on the wall clock
  double bandwidth_gbps = 100;
  double latency_us = 2;
  double noise = 0;   // each test's figures x U[1 - noise, 1 + noise]; 0..0.5
  uint64_t seed = 1;  // flap and noise draws
  // TCP connections to the coordinator, the workers spread over them round robin;
  // 0 = one per worker, as separate hosts would have.
  int connections = 0;
  bool reconnect = true;    // redial (backoff 0.2 s .. 5 s) after a stream ends, except drop
  int heartbeat_ms = 1000;  // used when the coordinator's Registered does not say
  // The workers signal the end of a run over their (simulated) data path, as current workers
  // do: a pair test takes three commands. false: they claim no end signal, as workers from
  // before it (four commands per test), for mixed-version runs and before/after benchmarks.
  bool end_signal = true;
  std::map<std::string, std::string> labels;  // sent by every worker (`--label rack=r12`)
  std::vector<SimFault> faults;
  // `--sim-fabric FILE` (sim_fabric.h): the workers are named after the snapshot's hosts
  // (`names`, count of them) and port faults slow the tests whose paths cross them. null: none.
  std::shared_ptr<const SimFabric> fabric;
  std::vector<std::string> names;
  // A simulator certificate (role simulator, CN = name_prefix), its key and the cluster CA:
  // every worker's stream is TLS with it. nullopt: plaintext (--insecure).
  std::optional<TlsMaterial> tls;
};

// Checks ranges and that every fault names a worker of this configuration.
Status validateSimConfig(const SimConfig& config);

// Reads a small config: one `key: value` (or `key = value`) per line, `#` comments, keys
// count, name_prefix, nics, nic_rate_gbps, gpus, test_ms, bandwidth_gbps, latency_us, noise, seed,
// connections, coordinator, end_signal (true|false), and `fault: SPEC` (repeatable; also as `-
// SPEC` items under a `faults:` line). Values override those already in `config`.
Status parseSimConfigText(std::string_view text, SimConfig* config);
Status loadSimConfigFile(const std::string& path, SimConfig* config);

// "sim-0007": the prefix, a dash and the index zero-padded to max(4, digits of count - 1).
std::string simWorkerName(const std::string& prefix, int index, int count);
// The workers' names: config.names where set (a fabric's hosts), else simWorkerName's.
std::vector<std::string> simWorkerNames(const SimConfig& config);

}  // namespace gdrmesh
