// The hosts under each switch in a sweep, what the status page's fabric view tabulates (docs/
// api.md, "A sweep's fabric view"; issue #20):
//   - InfiniBand (SweepFabric): each switch with the HCAs cabled to it, by the port a test on the
//     HCA is traced from (hcaTestEndpoint), each HCA with the verdicts of the sweep's own tests
//     that had an end on it and the host or NIC suspect that names it; the worst switch first,
//     so a leaf under which every host is slow leads the table.
//   - RoCE (an LLDP snapshot, sweep_lldp.h): each host switch port with its NIC, the tests that
//     had an end on it and how many failed, the sweep's switch_port suspects first. Every row is
//     an estimate (fabric::kLldpEstimate): LLDP names the host's own cable, nothing beyond it.
// A tested end the fabric does not place (a worker without an HCA, a NIC without an LLDP
// neighbour) is listed with its counts and why, never dropped. Retests are left out: they are the
// localiser's evidence, not tests of the sweep (as the LLDP notes and suspects count them).
// Pure: no I/O, no clock, no protobuf.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/fabric/lldp.h"
#include "common/inventory.h"
#include "coordinator/orchestrator/sweep_fabric.h"
#include "coordinator/orchestrator/sweep_types.h"

namespace gdrmesh {

// The fabric a sweep's host tables are drawn on: an InfiniBand snapshot or a RoCE one known from
// LLDP (the coordinator has one or the other); both null: none.
struct FabricOfSweep {
  std::shared_ptr<const SweepFabric> infiniband;
  std::shared_ptr<const fabric::EthFabric> lldp;
};

// The verdicts of the sweep's own tests with an end somewhere.
struct EndVerdicts {
  uint64_t pass = 0, fail = 0, skip = 0;
  uint64_t tests() const { return pass + fail + skip; }
  void add(VerdictKind k) {
    ++(k == VerdictKind::kPass ? pass : k == VerdictKind::kFail ? fail : skip);
  }
  void add(const EndVerdicts& o) {
    pass += o.pass;
    fail += o.fail;
    skip += o.skip;
  }
};

// A tested end (WORKER or WORKER/NIC, as the verdicts name it) the fabric does not place.
struct UnplacedEnd {
  std::string end;
  EndVerdicts verdicts;
  std::string why;  // and what to do
};

// One HCA port cabled to a switch, with the sweep's verdicts on it.
struct SwitchHostRow {
  std::string host;  // the worker
  std::string hca;   // the HCA's node description ("h0049 mlx5_0")
  int hca_port = 0;  // its port on the cable
  int switch_port = 0;
  EndVerdicts verdicts;
  // The highest-scored suspect of kind host naming the worker, or of kind nic naming the NIC.
  std::optional<Suspect> suspect;
};

struct SwitchHosts {
  std::string name;
  uint64_t guid = 0;
  EndVerdicts verdicts;             // its rows' summed
  size_t hosts_failing = 0;         // rows with a FAIL
  size_t suspects = 0;              // rows a suspect names
  std::vector<SwitchHostRow> rows;  // most FAILs first, then by suspect score, host, HCA
};

struct SwitchHostTable {
  // Switches with a tested HCA: most FAILs first, then most suspects, then by name.
  std::vector<SwitchHosts> switches;
  std::vector<UnplacedEnd> unplaced;  // by end
};

// `workers`: the registry's (their hostnames match HCAs as a sweep matches them; a tested worker
// missing from it is matched by its name alone).
SwitchHostTable switchHostTable(const SweepFabric& fabric, const std::vector<WorkerStatus>& workers,
                                const std::vector<PairVerdict>& verdicts,
                                const std::vector<Suspect>& suspects);

// One host NIC port cabled to a switch port (a link of the LLDP snapshot), with the sweep's tests
// that had an end on it: an estimate, as every row of the table.
struct LldpPortRow {
  std::string switch_name, chassis_id, switch_port;  // "leaf07", "b6:d3:...", "Ethernet12"
  std::string host, device, netdev;                  // "h0001", "mlx5_0", "ens1f0np0"
  int nic_port = 1;
  uint64_t tests = 0, failed = 0;  // failed: FAIL verdicts
  std::optional<Suspect> suspect;  // the sweep's switch_port suspect of this port
  std::string switchPortName() const { return switch_name + "[" + switch_port + "]"; }
  std::string nicName() const { return host + " " + device; }
};

struct LldpPortTable {
  // Every host switch port of the snapshot, those no test touched included: the switch_port
  // suspects first (highest score first), then most failed tests, then by switch and port.
  std::vector<LldpPortRow> ports;
  std::vector<UnplacedEnd> unplaced;  // by end
};

LldpPortTable lldpPortTable(const fabric::EthFabric& f, const std::vector<PairVerdict>& verdicts,
                            const std::vector<Suspect>& suspects);

// A sweep's host tables on its fabric: one of the two, by the fabric's kind.
struct FabricHostTables {
  std::string source;  // the snapshot's: "fabric.json", "@7" (InfiniBand), "lldp"; "" without one
  std::optional<SwitchHostTable> infiniband;
  std::optional<LldpPortTable> lldp;
};
FabricHostTables fabricHostTables(const FabricOfSweep& fabric,
                                  const std::vector<WorkerStatus>& workers,
                                  const std::vector<PairVerdict>& verdicts,
                                  const std::vector<Suspect>& suspects);

// "h1/mlx5_0" -> {"h1", "mlx5_0"}; "h1" -> {"h1", ""}.
std::pair<std::string, std::string> splitTestedEnd(const std::string& end);

}  // namespace gdrmesh
