// The RoCE side of `gdrmesh fabric` (docs/fabric.md, "RoCE: LLDP"): `fabric discover --lldp`
// asks lldpd on this host which switch port each RoCE NIC is cabled to; `fabric show` and
// `fabric diff` print LLDP snapshots; `sweep plan` on one prints the estimated coverage. Every
// output says the figures are an estimate (fabric::kLldpEstimate). No protobuf here.
#pragma once

#include <optional>
#include <string>

#include "common/fabric/lldp.h"
#include "common/status.h"

namespace gdrmesh::cli {

struct LldpDiscoverArgs {
  std::string json_file;  // --lldp-json FILE: lldpcli's output instead of running it
  std::string socket;     // --lldp-socket PATH: lldpd's control socket
  std::string device;     // --ca DEV: only this RDMA device
  std::string host;       // --host NAME: the host name to report (default: this machine's)
  std::string sysfs_root = "/";
  std::string save;  // --save FILE
  std::string output = "table";
};

// `fabric discover --lldp`: this host's snapshot. Exit 0 when every NIC port has a neighbour, 1
// when some have none, 3 when lldpd could not be asked or no RoCE port is here.
int runLldpDiscover(const LldpDiscoverArgs& a);

// A file holding an LLDP snapshot: the snapshot; std::nullopt when the file holds something
// else (an InfiniBand snapshot); an error when it cannot be read or is a broken LLDP snapshot.
Result<std::optional<fabric::EthFabric>> loadLldpSnapshotFile(const std::string& path);
// A stored document (text): the same.
Result<std::optional<fabric::EthFabric>> lldpSnapshotFromText(const std::string& text,
                                                              const std::string& what);

// The summary line, the switches and the links (`fabric show`), the estimate label first.
std::string lldpFabricTable(const fabric::EthFabric& f);
// `fabric show --switch NAME` of an LLDP snapshot: its ports and the NICs on them.
Result<std::string> lldpSwitchTable(const fabric::EthFabric& f, const std::string& name);
// `fabric diff` of two LLDP snapshots; returns the exit code (0 no change, 1 changes).
int printLldpDiff(const fabric::EthFabric& before, const fabric::EthFabric& after,
                  const std::string& output);
// `sweep plan --fabric LLDP_FILE`: rounds of disjoint pairs that touch every host switch port
// and cross between every two switches (estimated coverage, never from forwarding tables).
int runLldpPlan(const fabric::EthFabric& f, const std::string& pattern, int max_rounds,
                const std::string& output);

}  // namespace gdrmesh::cli
