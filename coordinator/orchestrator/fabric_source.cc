#include "coordinator/orchestrator/fabric_source.h"

#include <optional>

#include "common/fabric/discovery.h"
#include "common/fabric/lldp.h"
#include "common/units.h"

namespace gdrmesh {

namespace {

// The stored snapshots adoptStored() looks through, newest first.
constexpr int kAdoptableLookback = 64;

struct StoredFabric {
  FabricSnapshotRecord row;
  fabric::Fabric fabric;
};

// When the snapshot's fabric was read: its discovered_ms, else when the coordinator stored it.
int64_t readAtMs(const StoredFabric& s) {
  return s.fabric.discovered_ms != 0 ? s.fabric.discovered_ms : s.row.taken_ms;
}

// The newest ok InfiniBand snapshot with tables (what FabricSource::adopt takes), one row at a
// time (a document of a large fabric is megabytes). `skipped` counts the newer ones passed over.
Result<std::optional<StoredFabric>> newestAdoptable(FabricHistory& history, int* skipped) {
  FabricSnapshotQuery q;
  q.limit = 1;
  q.outcome = "ok";
  q.with_json = true;
  for (int i = 0; i < kAdoptableLookback; ++i) {
    GDR_ASSIGN_OR_RETURN(auto rows, history.listFabricSnapshots(q));
    if (rows.empty()) break;
    FabricSnapshotRecord& row = rows.front();
    q.before_id = row.id;
    if (row.source == fabric::kLldpSource || row.snapshot_json.empty()) continue;
    auto f =
        fabric::fabricFromJsonText(row.snapshot_json, "fabric snapshot @" + std::to_string(row.id));
    if (!f.ok() || f->routedLftEntries() == 0) {
      ++*skipped;
      continue;
    }
    return std::optional<StoredFabric>(StoredFabric{std::move(row), std::move(*f)});
  }
  return std::optional<StoredFabric>();
}

}  // namespace

Result<std::string> FabricSource::adoptStored(FabricHistory& history) {
  std::shared_ptr<const SweepFabric> configured = current();
  if (!configured) return std::string();
  int skipped = 0;
  GDR_ASSIGN_OR_RETURN(std::optional<StoredFabric> stored, newestAdoptable(history, &skipped));
  const std::string passed =
      skipped == 0 ? ""
                   : " (" + std::to_string(skipped) +
                         " newer ok snapshots without tables or unreadable passed over)";
  if (!stored) {
    return "fabric: no stored InfiniBand snapshot with tables" + passed + "; " +
           configured->source() + " stays the coordinator's fabric";
  }
  const std::string id = "@" + std::to_string(stored->row.id);
  const int64_t stored_ms = readAtMs(*stored);
  const int64_t configured_ms = configured->fabric().discovered_ms;
  if (configured_ms > stored_ms) {
    return "fabric: " + configured->source() + " (discovered " + formatRfc3339(configured_ms) +
           ") is newer than the latest stored snapshot " + id + " (discovered " +
           formatRfc3339(stored_ms) + "): it stays the coordinator's fabric";
  }
  const std::string worker = stored->row.worker;
  if (!adopt(std::move(stored->fabric), id)) {
    return "fabric: " + id + " could not be adopted; " + configured->source() + " stays";
  }
  return "fabric: snapshot " + id + " from " + worker + " (discovered " + formatRfc3339(stored_ms) +
         ") replaces " + configured->source() +
         (configured_ms != 0 ? " (discovered " + formatRfc3339(configured_ms) + ")" : "") +
         ", as before the restart: the newest snapshot a discovery through this coordinator "
         "adopted" +
         passed + "; tests are traced through its tables";
}

}  // namespace gdrmesh
