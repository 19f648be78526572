// The coordinator's fabric (`gdrmesh coordinator --fabric FILE`, the config's `fabric:`): a
// snapshot saved by `gdrmesh fabric discover --save`, the optional `fabric_hosts:` mapping, and
// what a sweep derives from them: which worker sits behind which HCA (common/fabric/host_match.h),
// the path of every test between two matched workers in both directions, read from the switches'
// LFTs (fabric::tracePath, never LID arithmetic), the directed inter-switch links each test
// crossed, and the sweep's coverage of those links. Pure: no I/O, no clock, no protobuf.
//
// Thread contract: immutable once made; share it (shared_ptr<const SweepFabric>) between sweeps.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/fabric/fabric.h"
#include "common/fabric/host_match.h"
#include "common/inventory.h"
#include "coordinator/orchestrator/judge_row.h"
#include "coordinator/orchestrator/sweep_types.h"
#include "coordinator/store/store.h"

namespace gdrmesh {

// A directed inter-switch link: the one that leaves switch `guid` by port `port`.
struct DirectedLink {
  uint64_t guid = 0;
  int port = 0;
  bool operator<(const DirectedLink& o) const {
    return guid != o.guid ? guid < o.guid : port < o.port;
  }
  bool operator==(const DirectedLink& o) const { return guid == o.guid && port == o.port; }
};

// The paths of a sweep's rows (JudgeRows order).
struct RowPaths {
  std::vector<bool> known;  // both directions traced
  std::vector<std::vector<fabric::Hop>> forward, reverse;
  // The directed inter-switch links of each row's forward and reverse path, sorted.
  std::vector<std::vector<DirectedLink>> forward_links, reverse_links;
  size_t untraced = 0;  // rows between matched workers whose path could not be traced
  std::string first_error;
};

// Which directed inter-switch links a sweep's tests crossed, and how often.
struct FabricCoverage {
  size_t directed_links = 0;                // inter-switch links of the fabric, per direction
  std::map<DirectedLink, size_t> tests_on;  // link -> tests (sweep's own, not retests) crossing it
  std::vector<DirectedLink> never;          // links no test crossed, in order
  size_t tests_traced = 0;
};

class SweepFabric {
 public:
  // `hosts`: the `fabric_hosts:` mapping (worker -> node description or host name).
  SweepFabric(fabric::Fabric fabric, std::map<std::string, std::string> hosts, std::string source);
  // The index points into fabric_: neither copied nor moved.
  SweepFabric(const SweepFabric&) = delete;
  SweepFabric& operator=(const SweepFabric&) = delete;

  const fabric::Fabric& fabric() const { return fabric_; }
  const std::map<std::string, std::string>& hostMapping() const { return hosts_; }
  const std::string& source() const { return source_; }

  fabric::HostMatch match(const std::vector<WorkerStatus>& workers) const;
  // Traces both directions of every row whose two workers are matched (a row's NIC picks among
  // a worker's HCAs); the same pair is traced once. `only` (row order; null: every row): the
  // rows to trace, the others are left unknown and uncounted (a sweep whose fabric changed
  // traces each row through the snapshot current when its test started).
  RowPaths paths(const JudgeRows& rows, const fabric::HostMatch& match,
                 const std::vector<bool>* only = nullptr) const;
  // The rows' hops as the store keeps them (TestPathStore), for the rows with known paths.
  std::vector<PathHopRecord> hopRecords(const JudgeRows& rows, const RowPaths& paths,
                                        const std::string& sweep_id) const;
  FabricCoverage coverage(const JudgeRows& rows, const RowPaths& paths) const;
  // Lines for the sweep's report: how many links carried tests, the busiest and least used, and
  // every link never exercised (cut after `max_listed`).
  std::vector<std::string> coverageNotes(const FabricCoverage& c, size_t max_listed = 20) const;

  // A `cover` sweep's rounds (common/fabric/cover.h), as the workers matched to the HCAs and
  // their NICs (the node descriptions' second words), into spec->cover_rounds; pairs with an
  // HCA no worker has are left out. `notes` get what the plan covers and what it left out.
  // `ca_order` (OpenSM's compute-node order, fabric::CoverOptions) seeds the first round; the
  // note names `ca_order_file`.
  Status coverRounds(const std::vector<WorkerStatus>& workers, SweepSpec* spec,
                     std::vector<std::string>* notes, const std::vector<uint16_t>& ca_order = {},
                     const std::string& ca_order_file = "") const;
  // A `bisection` sweep's one round (common/fabric/bisection.h) the same way; `bound_gbps` gets
  // the fabric's bisection bandwidth per direction, `notes` the cut and the bound.
  Status bisectionRounds(const std::vector<WorkerStatus>& workers, SweepSpec* spec,
                         std::vector<std::string>* notes, double* bound_gbps) const;
  // The report's line for a bisection round: the round's tests' summed bandwidth against the
  // bound (twice the bound for bidirectional tests, whose figure is both directions' sum).
  static std::string bisectionNote(int round, size_t tests, double measured_gbps, double bound_gbps,
                                   bool bidirectional);

  // "leaf07[12] -> spine02[7]" (fabric::directedLinkName).
  std::string linkName(const DirectedLink& l) const;
  // Whether the link joins two switches (an inter-switch link).
  bool interSwitch(const DirectedLink& l) const;

 private:
  fabric::Fabric fabric_;
  fabric::FabricIndex index_{fabric_};  // after fabric_: built from it
  std::map<std::string, std::string> hosts_;
  std::string source_;
  std::vector<DirectedLink> inter_switch_;  // every directed inter-switch link, sorted
};

// The port of an HCA a test on it is traced from (fabric::findEndpoint's pick): its first Active
// port, else its only port; {} for a null HCA.
fabric::Endpoint hcaTestEndpoint(const fabric::Node* hca);

// The directed inter-switch links of a path: each hop's out port whose cable leads to a switch.
std::vector<DirectedLink> interSwitchLinks(const std::vector<fabric::Hop>& hops);
// The links a row's data crossed: the forward path's (initiator to target) for write, send and
// write_imm, the reverse path's for read (the target's memory is read).
std::vector<DirectedLink> dataLinks(const JudgeRow& row, const RowPaths& paths, size_t i);

}  // namespace gdrmesh
