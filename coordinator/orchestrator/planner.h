// The sweep planner: a pattern and the workers' inventories -> rounds of pair tests that share
// no resource. Pure and deterministic (the random pattern is seeded): no clock, no I/O.
//
// Host selection: online workers only, narrowed by spec.hosts (a name that is no worker is an
// error; a named worker that is offline is left out with a note), spec.exclude and spec.select
// (every KEY=VALUE label must match). Hosts are taken in name order.
//
// Patterns (docs/config.md describes them for operators):
//   pairs      spec.pairs as given, packed first-fit into rounds.
//   all-pairs  circle method: N hosts -> N-1 rounds (N rounds for odd N, one host sits out per
//              round), each unordered pair once, no host twice in a round. direction both adds
//              the reverse tests in a second set of rounds (2(N-1) in all); bidir makes each
//              test bidirectional.
//   rails      an all-pairs per NIC index i (NICs sorted by name on each host), device = the
//              host's i-th NIC, rail = "rail<i>"; rail i and rail j of one round run together.
//              With cuda memory each side uses the GPU whose nearest NIC is that NIC; a host
//              without one skips the rail (noted), as does a host with fewer NICs.
//   loopback   inside each host: NIC k -> NIC k+1 on host memory (one NIC: to itself), then
//              one test per GPU on cuda memory through its nearest NIC (both sides that GPU).
//              A host's j-th test runs in round j, every host in parallel.
//   random     spec.random_rounds seeded perfect matchings (std::mt19937_64 with spec.seed, or
//              a seed from std::random_device when 0, returned in plan.seed); odd N: one host
//              sits out per round. Same seed, same hosts: same plan on every platform.
//   cover      spec.cover_rounds as given (the cover planner's rounds over the coordinator's
//              fabric, filled by the sweep's run: sweep_fabric.h), each pair in its round; pairs
//              of a host not selected are left out (noted) and empty rounds close up. direction
//              applies as for all-pairs. No rounds: an error naming the fix (--fabric).
//   bisection  spec.cover_rounds as for cover: the bisection planner's one round (half the
//              hosts to the other half across the fabric's top level: common/fabric/bisection.h).
//
// Sizes: every pair slot becomes one test per size (spec.sizes, or spec.test.message_size),
// with round = slot_round * n_sizes + size_index. plan.tests is grouped by slot round
// (round / n_sizes never decreases) and the tests of one slot are consecutive, smallest size
// first as listed; within a round no resource (see resourcesOf) is used twice.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/inventory.h"
#include "common/status.h"
#include "coordinator/orchestrator/sweep_types.h"

namespace gdrmesh {

Result<SweepPlan> planSweep(const SweepSpec& spec, const std::vector<WorkerStatus>& workers);

// The resources one side of a test holds: "h1/mlx5_0" for a named NIC, plus "h1/gpu:N" for
// cuda memory (gpu -1 means GPU 0); "h1/*" (the whole host) when no NIC is named, since the
// worker then picks it. Sorted, without duplicates.
std::vector<std::string> resourcesOf(const EndpointSelector& side);
// Both sides of a planned test (a loopback test holds both of its NICs).
std::vector<std::string> resourcesOf(const PlannedTest& test);

// Whether two resources exclude each other: equal, or on the same host with one being "h/*".
bool conflicts(const std::string& a, const std::string& b);
bool conflicts(const std::vector<std::string>& a, const std::vector<std::string>& b);
bool conflicts(const PlannedTest& a, const PlannedTest& b);

// The resources held at one moment (a round being packed, or the tests the executor is
// running), answering "can this test start now?" in O(resources of the test).
class ResourceSet {
 public:
  bool canTake(const std::vector<std::string>& resources) const;
  void take(const std::vector<std::string>& resources);
  void release(const std::vector<std::string>& resources);
  bool empty() const { return held_.empty(); }

 private:
  std::map<std::string, int> held_;     // resource -> holders
  std::map<std::string, int> by_host_;  // host -> resources held on it
};

}  // namespace gdrmesh
