// A fabric behind simulated workers (`gdrmesh worker --simulate N --sim-fabric FILE`): the
// workers take the host names of the snapshot's HCAs (the first word of each node description,
// "h0001 mlx5_0" -> worker h0001 with NIC mlx5_0), so a coordinator with the same snapshot
// (`--fabric`) matches them to their HCAs; and a bad switch port (`--sim-fault
// port:SWITCH[PORT]:FACTOR`) slows every test whose data path, traced from the snapshot's LFTs,
// crosses that port in either direction (the cable on it is bad). Domain code: no protobuf.
//
// Thread contract: immutable after make(), but for a cache of traced pairs guarded by its mutex;
// every method may be called from any thread.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/fabric/fabric.h"
#include "common/status.h"
#include "common/sync/mutex.h"

namespace gdrmesh {

// One bad port: "leaf01[17]" at `factor` (0.25: a quarter of the bandwidth).
struct SimBadPort {
  std::string switch_name;
  int port = 0;
  double factor = 1;
  std::string text;  // the fault as given
};

class SimFabric {
 public:
  // Every port must be a linked port of a switch of `fabric`: errors name the fault and the fix.
  static Result<std::shared_ptr<const SimFabric>> make(fabric::Fabric fabric,
                                                       std::vector<SimBadPort> bad);

  // The worker names the snapshot gives: each HCA's host name once, in node-description order.
  std::vector<std::string> hostNames() const;
  // The factor of a test whose data goes from (src worker, NIC) to (dst worker, NIC): the
  // product of the bad ports its path crosses; 1 when none, or when either end has no HCA.
  double pathFactor(const std::string& src, const std::string& src_nic, const std::string& dst,
                    const std::string& dst_nic) const;

 private:
  SimFabric(fabric::Fabric fabric, std::vector<SimBadPort> bad)
      : fabric_(std::move(fabric)), bad_(std::move(bad)) {}
  const fabric::Node* hca(const std::string& worker, const std::string& nic) const;

  const fabric::Fabric fabric_;
  const fabric::FabricIndex index_{fabric_};  // after fabric_: built from it, once
  const std::vector<SimBadPort> bad_;
  mutable Mutex mu_;
  mutable std::map<std::string, double> traced_
      ABSL_GUARDED_BY(mu_);  // "src/nic>dst/nic" -> factor
};

// "leaf01[17]:0.25" (the part after `port:`) -> a bad port. Errors name the spec.
Result<SimBadPort> parseSimBadPort(const std::string& spec);

}  // namespace gdrmesh
