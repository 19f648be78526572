// What lldpd on this host knows of its RoCE NICs' switch ports (docs/fabric.md, "RoCE: LLDP"):
// runs `lldpcli -f json show neighbors details` (or reads that output from a file), matches each
// neighbour's local interface to the RDMA device port whose netdev it is (as the inventory finds
// it: the port's GID netdevs, else the device's PCI function's net/ entries), and answers one
// fabric::LldpHost. Ethernet ports only: InfiniBand has no LLDP (its fabric comes from the LFTs).
//
// Every failure is in the answer, never a crash or an error of the call: lldpcli missing (lldpd
// not installed), lldpd not running, a NIC whose netdev hears no neighbour, each names the NIC and
// the fix (`apt install lldpd`, `systemctl enable --now lldpd`, LLDP on the switch port).
//
// Thread contract: readLldpHost() is blocking (it waits for lldpcli, at most timeout_s) and may
// be called from several threads at once.
#pragma once

#include <string>
#include <vector>

#include "common/fabric/lldp.h"
#include "common/inventory.h"
#include "common/status.h"

namespace gdrmesh::fabric {

struct LldpReadOptions {
  std::string host;              // the host name to report; "" = this machine's
  std::string sysfs_root = "/";  // where /sys/class/infiniband is read (tests: a generated tree)
  std::string json_file;         // read lldpcli's JSON from this file instead of running it
  std::string lldpcli = "lldpcli";
  std::string socket;  // lldpcli -u SOCKET (lldpd's control socket); "" = lldpd's default
  double timeout_s = 10;
  std::string device;  // only this RDMA device ("mlx5_0"); "" = every one
};

// lldpcli's JSON text, from the file or by running lldpcli. kNotFound/kFailedPrecondition/
// kPermissionDenied/kDeadlineExceeded with the fix when lldpd cannot be asked.
Result<std::string> readLldpNeighboursJson(const LldpReadOptions& opts);

// The Ethernet RDMA ports of `nics` with the neighbour heard on their netdev (or why none). When
// `neighbours` is an error (lldpd not asked), the answer's status and every NIC carry it.
LldpHost matchLldpNeighbours(const std::string& host, const std::vector<Nic>& nics,
                             const std::string& sysfs_root,
                             const Result<std::vector<LldpNeighbour>>& neighbours);

// The whole of it: the host's NICs from sysfs, lldpd's neighbours, matched.
LldpHost readLldpHost(const LldpReadOptions& opts);

}  // namespace gdrmesh::fabric
