// RoCE (Ethernet) fabrics as LLDP shows them (docs/fabric.md, "RoCE: LLDP"). Ethernet switches
// have no forwarding tables gdrmesh can read, and ECMP picks a path per flow, so all that is known
// is which switch port each host NIC is cabled to: lldpd on the host hears the switch's LLDP
// frames and reports the switch's chassis (ID and name) and port (ID, description, VLANs, maximum
// frame size). Everything beyond the first switch (inter-switch links, routes) is unknown, and
// every coverage figure derived from this model is an estimate; the outputs say so
// (kLldpEstimate).
//
// A pure model, as fabric.h: no protobuf, no process or sysfs access (worker/fabric/lldp_reader.h
// reads lldpd and sysfs), so the worker, the coordinator and the CLI share it.
//   - parseLldpNeighbours(): lldpcli's JSON (`lldpcli -f json show neighbors details`), whose
//     shape differs between one neighbour (objects) and several (arrays); both are read;
//   - LldpHost: one host's answer, each RDMA NIC port with its neighbour or why there is none;
//   - EthFabric: the snapshot built from the hosts' answers (switches by chassis ID, host NICs
//     linked to switch ports), its JSON form, diffs between snapshots, and the estimated
//     coverage of a set of tests.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/fabric/fabric.h"
#include "common/status.h"

namespace gdrmesh::fabric {

// The JSON format of an Ethernet snapshot, and the label every output derived from it carries.
inline constexpr const char* kLldpFormat = "gdrmesh-fabric-lldp/1";
inline constexpr const char* kLldpSource = "lldp";  // a snapshot's "source" (and stored row's)
inline constexpr const char* kLldpEstimate =
    "estimate: RoCE, no forwarding tables; ECMP hides the path";
// What an operator does where lldpd is missing or hears nothing.
inline constexpr const char* kLldpdInstallFix =
    "install and start lldpd on the host (`apt install lldpd`, `systemctl enable --now lldpd`) "
    "and enable LLDP on the switch ports";

// One LLDP neighbour as lldpd reports it on a local interface.
struct LldpNeighbour {
  std::string interface;        // the local netdev that heard it ("ens1f0np0")
  std::string chassis_id;       // "b6:d3:b8:84:e8:83"
  std::string chassis_id_type;  // "mac", "local", "ifname", ...
  std::string chassis_name;     // SysName ("leaf07"); "" when the switch sends none
  std::string port_id;          // "Ethernet12", "swp3"
  std::string port_id_type;     // "ifname", "local", "mac", ...
  std::string port_descr;       // "" when not sent
  int mfs = 0;                  // 802.3 maximum frame size in bytes; 0 when not sent
  int pvid = 0;                 // the port VLAN ID; 0 when not sent
  std::vector<int> vlans;       // the VLAN IDs the port announces
};

// `lldpcli -f json show neighbors details` as neighbours, in the order lldpd lists them. lldpd's
// JSON writer makes a single element an object and repeated ones an array (one interface:
// `"interface": {"eth0": {...}}`; several: `"interface": [{"eth0": {...}}, {"eth1": {...}}]`; the
// same for VLANs), and keys a chassis by its name when it has one: every shape is read. No
// neighbours (`{"lldp": {}}`) is an empty list. A neighbour without a chassis ID or port ID, or a
// field of the wrong type, is kInvalidArgument naming the field's path
// (`lldp.interface[1].eth1.chassis.id.value`).
Result<std::vector<LldpNeighbour>> parseLldpNeighbours(const nlohmann::json& j);
// The same from text (lldpcli's output, a saved file); `what` names the text in errors.
Result<std::vector<LldpNeighbour>> parseLldpNeighboursText(const std::string& text,
                                                           const std::string& what);

// One RDMA NIC port of a host and the switch port LLDP says its cable ends at.
struct LldpNic {
  std::string device;      // "mlx5_0"
  int port = 1;            // its port
  std::string netdev;      // "ens1f0np0"; "" when the port has none
  std::string link_layer;  // "Ethernet", "InfiniBand"
  std::optional<LldpNeighbour> neighbour;
  std::string reason;  // without a neighbour: why ("lldpd has no neighbour on ens1f0np0")
  std::string fix;     // and what to do
};

// One host's answer: its RDMA NIC ports with their neighbours. `status` is not ok when lldpd
// could not be asked at all (not installed, not running); the NICs then carry the same reason.
struct LldpHost {
  std::string host;
  Status status;
  std::vector<LldpNic> nics;
};

nlohmann::json toJson(const LldpHost& h);
Result<LldpHost> lldpHostFromJson(const nlohmann::json& j);

// ------------------------------------------------------------------ the snapshot

// A switch heard by some host, identified by its chassis ID.
struct EthSwitch {
  std::string chassis_id;
  std::string chassis_id_type;
  std::string name;                // SysName, or the chassis ID when it sends none
  std::vector<std::string> ports;  // port IDs with a host NIC, sorted
};

// A host NIC port cabled to a switch port.
struct EthLink {
  std::string host;
  std::string device;  // RDMA device
  int port = 1;        // its port
  std::string netdev;
  std::string chassis_id;
  std::string switch_name;
  std::string switch_port;  // the port ID
  std::string switch_port_descr;
  int mfs = 0;
  int pvid = 0;
  std::vector<int> vlans;

  std::string nicName() const { return host + " " + device; }  // as an HCA's node description
  std::string switchPortName() const { return switch_name + "[" + switch_port + "]"; }
};

// A host NIC port without a known neighbour, and why.
struct EthUnattached {
  std::string host;
  std::string device;
  int port = 1;
  std::string netdev;
  std::string reason;
  std::string fix;
  std::string nicName() const { return host + " " + device; }
};

struct EthFabric {
  int64_t discovered_ms = 0;           // unix ms
  std::vector<std::string> hosts;      // the hosts that answered, sorted
  std::vector<EthSwitch> switches;     // sorted by name, then chassis ID
  std::vector<EthLink> links;          // sorted by host, device, port
  std::vector<EthUnattached> unknown;  // NIC ports without a neighbour, sorted likewise

  const EthSwitch* switchById(const std::string& chassis_id) const;
  // The link of a host's NIC: `device` "" takes the host's first linked NIC, `port` 0 its first
  // linked port. nullptr when there is none.
  const EthLink* linkOf(const std::string& host, const std::string& device, int port = 0) const;
};

// The snapshot of the hosts' answers: a switch per chassis ID (its name from the first host that
// heard a name), a link per NIC port with a neighbour, the rest in `unknown` with their reason.
EthFabric buildEthFabric(const std::vector<LldpHost>& hosts, int64_t discovered_ms);

// JSON (docs/fabric.md, "RoCE: LLDP"): {"format": kLldpFormat, "source": "lldp", "estimate",
// "inter_switch_links": "unknown", "routes": "unknown", "discovered_ms", "switches", "hosts",
// "links", "unknown"}.
nlohmann::json toJson(const EthFabric& f);
// kInvalidArgument naming the field for anything else; nothing here throws.
Result<EthFabric> ethFabricFromJson(const nlohmann::json& j);
// Whether `j` claims to be an Ethernet (LLDP) snapshot: its "format" is kLldpFormat.
bool isLldpSnapshot(const nlohmann::json& j);
// "2 switches, 4 host NIC ports linked, 1 without a neighbour (source lldp; estimate: ...)"
std::string ethSummary(const EthFabric& f);

// What changed from `before` to `after`, NIC ports matched by (host, device, port). With
// `all_hosts` every host of either counts (a host missing from `after` loses its neighbours, a new
// one's are new); without, only the hosts in both (a worker's answer merged into the cluster's
// snapshot: the others did not answer, and a host's first answer is no change). Kinds: nic_moved
// (another switch or port), neighbour_gone (the NIC port is in `unknown` now, or gone),
// neighbour_new, port_changed (VLANs or maximum frame size), each naming the switch and port in its
// message (Finding::port is 0: Ethernet ports are names).
std::vector<Finding> diffEthFabrics(const EthFabric& before, const EthFabric& after,
                                    bool all_hosts = true);

// ------------------------------------------------------------------ coverage (an estimate)

// One test's two ends: host and NIC ("" = the host's first linked NIC).
struct EthTestEnds {
  std::string host_a, nic_a;
  std::string host_b, nic_b;
};

// The link a test's end (host, NIC) is cabled by, as the coverage and the suspects below find it:
// the host's NIC named `nic`, else (a NIC not in the snapshot, or none named) the host's first
// linked NIC; nullptr when the host has none.
const EthLink* ethLinkOfEnd(const EthFabric& f, const std::string& host, const std::string& nic);

// Which switch ports the tests' ends are cabled to. A test between two NICs of one switch stays
// within it (as far as LLDP tells); one between switches crosses the unknown fabric between them.
// An estimate: ECMP picks the path between switches, and nothing says which inter-switch links
// carried the traffic.
struct EthCoverage {
  std::map<std::string, size_t> switch_ports;  // "leaf07[Ethernet12]" -> tests with an end there
  std::map<std::string, size_t> switches;      // switch name -> tests with an end on it
  size_t tests = 0;
  size_t within_switch = 0;               // both ends on one switch
  size_t across = 0;                      // ends on two switches: the path between them is unknown
  size_t unknown = 0;                     // an end without a known neighbour
  size_t ports_known = 0;                 // switch ports with a host NIC in the snapshot
  std::vector<std::string> ports_unused;  // of those, the ones no test touched
};
EthCoverage estimateEthCoverage(const EthFabric& f, const std::vector<EthTestEnds>& tests);
// The report's lines, each starting "fabric coverage (estimate: ...)".
std::vector<std::string> ethCoverageNotes(const EthCoverage& c);

// Slow or failed tests that share a host's switch port: the port (cable NIC <-> switch) is the
// suspect when at least 2 failed tests had an end on it, at least 3 in 4 of its tests failed and
// it explains at least half of the failed tests. An estimate as the coverage: LLDP names only the
// host's own cable.
struct EthPortSuspect {
  std::string switch_port;  // "leaf07[Ethernet12]"
  std::string nic;          // "h0001 mlx5_0"
  size_t failed = 0, tests = 0, failed_total = 0;
  std::string evidence;  // one line, labelled as an estimate
};
std::vector<EthPortSuspect> ethPortSuspects(const EthFabric& f,
                                            const std::vector<EthTestEnds>& tests,
                                            const std::vector<bool>& failed);

}  // namespace gdrmesh::fabric
