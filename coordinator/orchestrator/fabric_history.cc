#include "coordinator/orchestrator/fabric_history.h"

#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>
#include <utility>

#include "common/log.h"
#include "common/sync/mutex.h"

namespace gdrmesh {
namespace {

ComponentLog fabricHistoryLog(const Clock& clock) {
  return ComponentLog("fabric", &clock);
}

FabricFindingRecord findingRecord(const fabric::Finding& f) {
  return FabricFindingRecord{f.kind, f.switch_name, f.port, f.message};
}

bool isSwitchNode(const fabric::Fabric& f, uint64_t guid) {
  const fabric::Node* n = f.nodeByGuid(guid);
  return n != nullptr && n->kind == fabric::NodeKind::kSwitch;
}

std::string linkRate(int width, const std::string& speed) {
  return fabric::widthName(width) + " " + speed;
}

// The snapshot's counts and document, as stored.
FabricSnapshotRecord snapshotOf(const std::string& worker, const fabric::Fabric& f) {
  FabricSnapshotRecord r;
  r.worker = worker;
  r.outcome = "ok";
  r.source = f.source;
  r.switches = static_cast<uint32_t>(f.switches.size());
  r.hosts = static_cast<uint32_t>(f.hosts.size());
  r.links = static_cast<uint32_t>(f.links.size());
  r.snapshot_json = fabric::toJson(f).dump();
  return r;
}

Result<fabric::Fabric> parseStoredSnapshot(const FabricSnapshotRecord& r) {
  return fabric::fabricFromJsonText(r.snapshot_json,
                                    "fabric snapshot @" + std::to_string(r.id) + " as stored");
}

}  // namespace

std::vector<fabric::Finding> linksBelowPeers(const fabric::Fabric& f) {
  // Per kind of link (between switches: true), how many links run at each rate.
  std::map<bool, std::map<std::pair<int, std::string>, size_t>> rates;
  for (const auto& l : f.links) {
    if (l.width == 0 || l.speed.empty()) continue;
    const bool isl = isSwitchNode(f, l.a.guid) && isSwitchNode(f, l.b.guid);
    ++rates[isl][{l.width, l.speed}];
  }
  // The most common rate of each kind, when one is (a tie has no majority to compare with).
  std::map<bool, std::pair<int, std::string>> common;
  for (const auto& [isl, counts] : rates) {
    size_t best = 0;
    bool tie = false;
    std::pair<int, std::string> rate;
    for (const auto& [r, n] : counts) {
      if (n > best) {
        best = n;
        rate = r;
        tie = false;
      } else if (n == best) {
        tie = true;
      }
    }
    if (!tie && best > 1) common[isl] = rate;
  }
  std::vector<fabric::Finding> out;
  for (const auto& l : f.links) {
    if (l.width == 0 || l.speed.empty()) continue;
    const bool isl = isSwitchNode(f, l.a.guid) && isSwitchNode(f, l.b.guid);
    auto it = common.find(isl);
    if (it == common.end()) continue;
    const auto& [width, speed] = it->second;
    const double have = l.width * fabric::laneGbps(l.speed);
    const double want = width * fabric::laneGbps(speed);
    if (have >= want) continue;
    // The switch end names it (the `a` end when both are switches).
    const fabric::LinkEnd& sw = isSwitchNode(f, l.a.guid) ? l.a : l.b;
    fabric::Finding x;
    x.kind = "below_peers";
    x.switch_name = sw.node;
    x.port = sw.port;
    x.message = l.a.node + "[" + std::to_string(l.a.port) + "] <-> " + l.b.node + "[" +
                std::to_string(l.b.port) + "]: " + linkRate(l.width, l.speed) + ", its " +
                std::to_string(rates[isl][it->second]) + " peers " +
                (isl ? "between switches " : "to hosts ") + linkRate(width, speed);
    out.push_back(std::move(x));
  }
  return out;
}

FabricRecord noFabricRecord(const std::string& worker, const fabric::DiscoverOutcome& outcome) {
  FabricRecord rec;
  const Code code = outcome.status.code();
  const bool skipped = code == Code::kFailedPrecondition || code == Code::kUnimplemented ||
                       code == Code::kNotFound || code == Code::kPermissionDenied;
  const std::string what = outcome.asked_lldp             ? "no LLDP answer from "
                           : code == Code::kUnimplemented ? "no fabric discovery on "
                           : skipped                      ? "no InfiniBand device on "
                                                          : "fabric discovery failed on ";
  rec.snapshot.worker = worker;
  rec.snapshot.outcome = skipped ? "skipped" : "failed";
  rec.snapshot.detail =
      what + worker + ": " + outcome.status.message() +
      (outcome.status.fix().empty() ? "" : " (fix: " + outcome.status.fix() + ")");
  rec.findings.push_back(
      FabricFindingRecord{skipped ? "no_fabric" : "discovery_failed", "", 0, rec.snapshot.detail});
  return rec;
}

FabricRecorder::FabricRecorder(FabricHistory& store, Clock& clock) : store_(store), clock_(clock) {}

Result<FabricRecord> FabricRecorder::record(const std::string& worker,
                                            const fabric::DiscoverOutcome& outcome) {
  MutexLock lock(record_mu_);
  FabricRecord rec;
  if (!outcome.status.ok()) {
    // No fabric from this worker: a row and one finding that say why, never an error.
    rec = noFabricRecord(worker, outcome);
  } else if (outcome.lldp) {
    GDR_ASSIGN_OR_RETURN(rec, mergeLldp(worker, {*outcome.lldp}));
  } else {
    rec.snapshot = snapshotOf(worker, outcome.fabric);
    // The previous ok InfiniBand snapshot, from any worker: one fabric, whoever looked at it.
    GDR_ASSIGN_OR_RETURN(auto prev, previousOk(0, /*lldp=*/false));
    if (prev && !prev->snapshot_json.empty()) {
      auto before = parseStoredSnapshot(*prev);
      if (before.ok()) {
        rec.previous_id = prev->id;
        for (const auto& x : fabric::diffFabrics(*before, outcome.fabric)) {
          rec.findings.push_back(findingRecord(x));
        }
      } else {
        fabricHistoryLog(clock_).warn("fabric snapshot @" + std::to_string(prev->id) +
                                      " cannot be read, not diffed: " + before.status().toString());
      }
    }
    for (const auto& x : linksBelowPeers(outcome.fabric)) rec.findings.push_back(findingRecord(x));
  }
  GDR_RETURN_IF_ERROR(store(worker, rec));
  return rec;
}

Status FabricRecorder::store(const std::string& worker, FabricRecord& rec) {
  const ComponentLog log = fabricHistoryLog(clock_);
  rec.snapshot.taken_ms = clock_.unixMs();
  GDR_ASSIGN_OR_RETURN(rec.snapshot.id, store_.recordFabricSnapshot(rec.snapshot, rec.findings));
  const std::string at = "fabric snapshot @" + std::to_string(rec.snapshot.id) + " from " + worker;
  if (rec.snapshot.outcome == "ok") {
    log.info(at + ": " + std::to_string(rec.snapshot.switches) + " switches, " +
                 std::to_string(rec.snapshot.hosts) + " hosts, " +
                 std::to_string(rec.snapshot.links) + " links, " +
                 std::to_string(rec.findings.size()) + " findings" +
                 (rec.previous_id != 0 ? " against @" + std::to_string(rec.previous_id) : ""),
             {{"snapshot", rec.snapshot.id}, {"worker", worker}});
  }
  for (const auto& x : rec.findings) {
    log.warn(at + ": " + x.kind + " " + x.message, {{"snapshot", rec.snapshot.id},
                                                    {"kind", x.kind},
                                                    {"switch", x.switch_name},
                                                    {"port", x.port}});
  }
  return Status();
}

Result<FabricRecord> FabricRecorder::resolve(const std::string& ref) {
  FabricRecord rec;
  if (ref == "latest" || ref == "previous") {
    FabricSnapshotQuery q;
    q.limit = ref == "latest" ? 1 : 2;
    q.outcome = "ok";
    GDR_ASSIGN_OR_RETURN(auto rows, store_.listFabricSnapshots(q));
    if (rows.size() < q.limit) {
      return notFound(
          "fabric snapshot '" + ref + "': the coordinator has " + std::to_string(rows.size()) +
              " ok snapshot" + (rows.size() == 1 ? "" : "s"),
          "store one with `gdrmesh fabric discover --worker NAME`; `gdrmesh fabric history` "
          "lists them");
    }
    return resolve("@" + std::to_string(rows.back().id));
  }
  std::string digits = ref.rfind('@', 0) == 0 ? ref.substr(1) : ref;
  char* end = nullptr;
  const long long id = digits.empty() ? 0 : std::strtoll(digits.c_str(), &end, 10);
  if (digits.empty() || end == nullptr || *end != '\0' || id <= 0) {
    return invalidArgument("fabric snapshot '" + ref + "' is not @ID, latest or previous",
                           "name a stored snapshot as `gdrmesh fabric history` lists it (@12), or "
                           "latest or previous");
  }
  GDR_ASSIGN_OR_RETURN(auto row, store_.getFabricSnapshot(id));
  if (!row) {
    return notFound("fabric snapshot @" + std::to_string(id) + " is not stored",
                    "`gdrmesh fabric history` lists the stored snapshots");
  }
  rec.snapshot = std::move(*row);
  GDR_ASSIGN_OR_RETURN(rec.findings, store_.fabricFindings(id));
  if (rec.snapshot.outcome == "ok") {
    // What it was diffed against when stored: the ok snapshot before it (record() runs one at
    // a time, so none came between).
    GDR_ASSIGN_OR_RETURN(auto prev, previousOk(id, rec.snapshot.source == fabric::kLldpSource));
    if (prev) rec.previous_id = prev->id;
  }
  return rec;
}

}  // namespace gdrmesh
