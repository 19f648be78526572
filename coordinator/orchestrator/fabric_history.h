// The fabric's history as the coordinator keeps it (docs/fabric.md, "Snapshots stored by the
// coordinator"): every discovery asked of a worker is stored (FabricHistory), an ok one with
// its document and what the coordinator found in it; a worker without InfiniBand or without
// the fabric module is stored as a finding too, never an error.
//
// Findings of a stored discovery: what changed since the previous ok snapshot (diffFabrics:
// a link gone, narrower, slower, down; a node gone or new) and the links narrower or slower
// than their peers in this snapshot (below_peers), each naming the switch and port; a
// discovery that found no fabric is one finding (no_fabric, discovery_failed) naming the
// worker. Each is logged as well.
//
// Thread contract: every method may be called from any thread; record() runs one at a time
// (so "previous" is the snapshot stored before this one).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/fabric/discovery.h"
#include "common/fabric/fabric.h"
#include "common/fabric/lldp.h"
#include "common/status.h"
#include "common/sync/mutex.h"
#include "coordinator/store/store.h"

namespace gdrmesh {

// The links of `f` narrower or slower (width x lane speed) than most links of their kind
// (switch to switch, switch to host), kind below_peers. None when no rate is most common.
std::vector<fabric::Finding> linksBelowPeers(const fabric::Fabric& f);

// One stored discovery with its findings.
struct FabricRecord {
  FabricSnapshotRecord snapshot;
  std::vector<FabricFindingRecord> findings;
  int64_t previous_id = 0;  // the ok snapshot it was diffed against; 0 = none (first, or not ok)
};

class FabricRecorder {
 public:
  FabricRecorder(FabricHistory& store, Clock& clock);

  // Stores the outcome of one discovery by `worker` with its findings (taken_ms from the
  // clock) and logs the findings. Errors only from the store.
  Result<FabricRecord> record(const std::string& worker, const fabric::DiscoverOutcome& outcome);
  // A stored snapshot with its document and findings: "@ID" or "ID", "latest" (the newest ok
  // snapshot), "previous" (the ok snapshot before it). kNotFound naming the reference and the
  // fix when there is none; kInvalidArgument for anything else.
  Result<FabricRecord> resolve(const std::string& ref);

 private:
  // RoCE (fabric_lldp_history.cc): the worker's LLDP answer merged into the newest LLDP
  // snapshot (its hosts replaced by the answer, the other hosts kept as last heard), diffed
  // against it for the hosts that answered.
  Result<FabricRecord> recordLldp(const std::string& worker, const fabric::LldpHost& answer);
  // The newest ok snapshot of one kind (LLDP or InfiniBand) below `before_id` (0: the newest),
  // with its document; among the 64 newest ok snapshots.
  Result<std::optional<FabricSnapshotRecord>> previousOk(int64_t before_id, bool lldp);

  FabricHistory& store_;
  Clock& clock_;
  Mutex record_mu_;  // one record() at a time
};

}  // namespace gdrmesh
