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

// A discovery that found no fabric (outcome.status not ok), as stored: outcome skipped (no
// device, lldpd missing, no fabric module) or failed, the detail ("no LLDP answer from h3: ...
// (fix: ...)") and its one finding (no_fabric, discovery_failed). Not stored.
FabricRecord noFabricRecord(const std::string& worker, const fabric::DiscoverOutcome& outcome);

// One worker's part of an all-workers LLDP call (`fabric discover --lldp --all-workers`,
// lldp_survey.h): its answer, or why there is none.
struct LldpWorkerReply {
  std::string worker;
  bool online = true;  // false: offline, not asked
  // The call's own failure: the worker lost (kUnavailable) or past the deadline
  // (kDeadlineExceeded). OK when the worker answered `outcome`.
  Status call;
  fabric::DiscoverOutcome outcome;  // lldpd missing is an answer too (outcome.status)
};

// What became of one worker in an all-workers LLDP call, as the CLI reports it.
struct LldpWorkerLine {
  std::string worker;
  // answered | skipped (lldpd could not be asked) | failed (an answer that is not an LLDP
  // answer) | lost | timed_out | offline (not asked)
  std::string outcome;
  size_t nics = 0;            // answered: its RoCE NIC ports
  size_t with_neighbour = 0;  // of those, the ones lldpd hears a neighbour on
  std::string detail;         // why, for every outcome but answered
};

// An all-workers LLDP call as stored: one snapshot row (record.snapshot.id 0 when no worker
// could be asked: nothing stored) and every worker's line, by name.
struct LldpAllRecord {
  FabricRecord record;
  std::vector<LldpWorkerLine> workers;
};

// The stored row's `worker` of an all-workers LLDP snapshot.
inline constexpr const char* kAllWorkers = "all workers";

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
  // An all-workers LLDP call (fabric_lldp_history.cc): every answering worker's hosts merged
  // into the newest LLDP snapshot at once (the hosts that did not answer kept as last heard) and
  // stored as ONE snapshot (worker kAllWorkers). Its findings: the diff against the previous
  // LLDP snapshot for every host that answered, no_neighbour as record()'s, and one finding per
  // worker without an answer (no_fabric, discovery_failed; no_answer: offline, lost, past the
  // deadline). Outcome ok when some worker answered, else skipped (only lldpd missing) or
  // failed. Nothing is stored when no worker was asked. Errors only from the store.
  Result<LldpAllRecord> recordLldpAll(const std::vector<LldpWorkerReply>& replies);

 private:
  // RoCE (fabric_lldp_history.cc): the answering hosts merged into the newest LLDP snapshot
  // (their part replaced by their answer, the other hosts kept as last heard), diffed against it
  // for the hosts that answered; the record, not stored. `hosts` (optional): the merged
  // snapshot's hosts, sorted.
  Result<FabricRecord> mergeLldp(const std::string& worker,
                                 const std::vector<fabric::LldpHost>& answers,
                                 std::vector<std::string>* hosts = nullptr);
  // Stores `rec` (taken_ms from the clock), logs it and its findings; sets its id.
  Status store(const std::string& worker, FabricRecord& rec);
  // The newest ok snapshot of one kind (LLDP or InfiniBand) below `before_id` (0: the newest),
  // with its document; among the 64 newest ok snapshots.
  Result<std::optional<FabricSnapshotRecord>> previousOk(int64_t before_id, bool lldp);

  FabricHistory& store_;
  Clock& clock_;
  Mutex record_mu_;  // one record() or recordLldpAll() at a time
};

}  // namespace gdrmesh
