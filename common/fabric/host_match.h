// Which worker sits behind which HCA of a fabric snapshot. An HCA's node description carries its
// host name as its first word ("h0001 mlx5_0": host h0001, device mlx5_0), so a worker is matched
// to the HCAs whose first word is its worker name or, failing that, its hostname (also without
// its domain). An optional mapping (`fabric_hosts:` in the cluster config, worker -> node
// description or host name) overrides the rule for the workers it names. Pure: no I/O, no clock.
//
// What does not match is reported, never guessed: a worker with no HCA, an HCA with no worker, a
// mapping entry that names no HCA of the snapshot.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/fabric/fabric.h"

namespace gdrmesh::fabric {

// A worker as the matcher sees it: its registered name and the hostname it reported.
struct WorkerHost {
  std::string name;
  std::string hostname;  // "" when unknown
};

struct HostMatch {
  // worker -> the node descriptions of its HCAs, sorted ("h0001 mlx5_0", "h0001 mlx5_1").
  std::map<std::string, std::vector<std::string>> hcas_of;
  std::vector<std::string> workers_without_hca;  // sorted
  std::vector<std::string> hcas_without_worker;  // node descriptions, sorted
  // Mapping entries that could not be used: "fabric_hosts.w7: no HCA 'h7 mlx5_0' in the fabric".
  std::vector<std::string> problems;

  bool matched(const std::string& worker) const { return hcas_of.count(worker) != 0; }
  // The HCA of `worker` to trace a test on NIC `nic` from: the one whose description's second
  // word is `nic` ("h0001 mlx5_1" for mlx5_1), else its first. nullptr when unmatched or when
  // the snapshot no longer has it.
  const Node* hcaFor(const Fabric& f, const std::string& worker, const std::string& nic) const;
  const Node* hcaFor(const FabricIndex& ix, const std::string& worker,
                     const std::string& nic) const;
  // The node description hcaFor looks up; nullptr when `worker` is unmatched.
  const std::string* hcaNameFor(const std::string& worker, const std::string& nic) const;
};

// The host name of a node description: its first word ("h0001 mlx5_0" -> "h0001").
std::string hostOfNodeDescription(const std::string& description);
// The device of a node description: its second word, "" when none ("h0001 mlx5_0" -> "mlx5_0").
std::string deviceOfNodeDescription(const std::string& description);

// `mapping`: worker -> a node description (one HCA) or a host name (each HCA of that host).
HostMatch matchHosts(const Fabric& f, const std::vector<WorkerHost>& workers,
                     const std::map<std::string, std::string>& mapping);

// One line for a log or a report: "fabric: 14 of 16 workers matched to HCAs; workers without an
// HCA: w9, w10; HCAs without a worker: h0015 mlx5_0, h0016 mlx5_0" (lists cut after 10 names).
std::string describeMatch(const HostMatch& m, size_t workers);

}  // namespace gdrmesh::fabric
