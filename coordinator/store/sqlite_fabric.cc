// SqliteStore: the fabric's history (FabricHistory; migration 13): discovered snapshots, one row
// each, and their findings.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/sync/mutex.h"
#include "coordinator/store/sqlite_internal.h"
#include "coordinator/store/sqlite_store.h"

namespace gdrmesh {

using namespace sqlite_detail;

namespace {

// The columns of a listed snapshot, in this order, with or without its document.
const char* const kFabricSnapshotColumns =
    "id, taken_ms, worker, source, outcome, detail, switches, hosts, links";

Status checkFabricSnapshot(const FabricSnapshotRecord& r) {
  if (r.worker.empty()) {
    return invalidArgument("fabric snapshot has no worker",
                           "record a snapshot with the worker that discovered it");
  }
  if (r.outcome != "ok" && r.outcome != "skipped" && r.outcome != "failed") {
    return invalidArgument(
        "fabric snapshot outcome '" + r.outcome + "' is not ok, skipped or failed",
        "record one of ok, skipped, failed");
  }
  if (r.outcome == "ok" && r.snapshot_json.empty()) {
    return invalidArgument("fabric snapshot is ok but has no snapshot document",
                           "record an ok snapshot with its JSON (docs/fabric.md)");
  }
  return Status::okStatus();
}

FabricSnapshotRecord fabricSnapshotRow(sqlite3_stmt* s, bool with_json) {
  FabricSnapshotRecord r;
  r.id = sqlite3_column_int64(s, 0);
  r.taken_ms = sqlite3_column_int64(s, 1);
  r.worker = columnText(s, 2);
  r.source = columnText(s, 3);
  r.outcome = columnText(s, 4);
  r.detail = columnText(s, 5);
  r.switches = static_cast<uint32_t>(sqlite3_column_int64(s, 6));
  r.hosts = static_cast<uint32_t>(sqlite3_column_int64(s, 7));
  r.links = static_cast<uint32_t>(sqlite3_column_int64(s, 8));
  if (with_json) r.snapshot_json = columnText(s, 9);
  return r;
}

int bindFabricText(sqlite3_stmt* s, int index, const std::string& v) {
  return sqlite3_bind_text64(s, index, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
}

}  // namespace

Result<int64_t> SqliteStore::recordFabricSnapshot(
    const FabricSnapshotRecord& snapshot, const std::vector<FabricFindingRecord>& findings) {
  const FabricSnapshotRecord& r = snapshot;
  GDR_RETURN_IF_ERROR(checkFabricSnapshot(r));
  MutexLock lock(writer_.mu);
  int64_t id = 0;
  GDR_RETURN_IF_ERROR(writeInTransaction([&]() -> Status {
    GDR_ASSIGN_OR_RETURN(
        sqlite3_stmt * s,
        statement(writer_, "record_fabric_snapshot",
                  "INSERT INTO fabric_snapshots (taken_ms, worker, source, outcome, detail, "
                  "switches, hosts, links, snapshot_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, "
                  "?9)"));
    StmtScope scope(s);
    int rc = sqlite3_bind_int64(s, 1, r.taken_ms);
    int index = 2;
    for (const std::string* v : {&r.worker, &r.source, &r.outcome, &r.detail}) {
      if (rc == SQLITE_OK) rc = bindFabricText(s, index, *v);
      ++index;
    }
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 6, r.switches);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 7, r.hosts);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 8, r.links);
    if (rc == SQLITE_OK) rc = bindFabricText(s, 9, r.snapshot_json);
    if (rc != SQLITE_OK) return error(writer_, rc, "record_fabric_snapshot (bind)");
    rc = sqlite3_step(s);
    if (rc != SQLITE_DONE) return error(writer_, rc, "record_fabric_snapshot");
    id = sqlite3_last_insert_rowid(writer_.db.get());
    GDR_ASSIGN_OR_RETURN(
        sqlite3_stmt * f,
        statement(writer_, "record_fabric_finding",
                  "INSERT INTO fabric_findings (snapshot_id, seq, kind, switch_name, port, "
                  "message) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"));
    int64_t seq = 0;
    for (const FabricFindingRecord& x : findings) {
      StmtScope fscope(f);
      rc = sqlite3_bind_int64(f, 1, id);
      if (rc == SQLITE_OK) rc = sqlite3_bind_int64(f, 2, seq++);
      if (rc == SQLITE_OK) rc = bindFabricText(f, 3, x.kind);
      if (rc == SQLITE_OK) rc = bindFabricText(f, 4, x.switch_name);
      if (rc == SQLITE_OK) rc = sqlite3_bind_int64(f, 5, x.port);
      if (rc == SQLITE_OK) rc = bindFabricText(f, 6, x.message);
      if (rc == SQLITE_OK) rc = sqlite3_step(f);
      if (rc != SQLITE_DONE) return error(writer_, rc, "record_fabric_finding");
    }
    return Status::okStatus();
  }));
  return id;
}

Result<std::vector<FabricSnapshotRecord>> SqliteStore::listFabricSnapshots(
    const FabricSnapshotQuery& query) {
  const FabricSnapshotQuery& q = query;
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  const std::string name = q.with_json ? "list_fabric_snapshots_json" : "list_fabric_snapshots";
  GDR_ASSIGN_OR_RETURN(
      sqlite3_stmt * s,
      statement(c, name,
                std::string("SELECT ") + kFabricSnapshotColumns +
                    (q.with_json ? ", snapshot_json" : "") +
                    " FROM fabric_snapshots WHERE (?1 = '' OR worker = ?1) AND (?2 = '' OR "
                    "outcome = ?2) AND (?3 = 0 OR id < ?3) ORDER BY id DESC LIMIT ?4"));
  StmtScope scope(s);
  int rc = bindFabricText(s, 1, q.worker);
  if (rc == SQLITE_OK) rc = bindFabricText(s, 2, q.outcome);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 3, q.before_id);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 4, q.limit == 0 ? -1 : int64_t{q.limit});
  if (rc != SQLITE_OK) return error(c, rc, "list_fabric_snapshots (bind)");
  std::vector<FabricSnapshotRecord> out;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) out.push_back(fabricSnapshotRow(s, q.with_json));
  if (rc != SQLITE_DONE) return error(c, rc, "list_fabric_snapshots");
  return out;
}

Result<std::optional<FabricSnapshotRecord>> SqliteStore::getFabricSnapshot(int64_t id) {
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * s,
                       statement(c, "get_fabric_snapshot",
                                 std::string("SELECT ") + kFabricSnapshotColumns +
                                     ", snapshot_json FROM fabric_snapshots WHERE id = ?1"));
  StmtScope scope(s);
  int rc = sqlite3_bind_int64(s, 1, id);
  if (rc != SQLITE_OK) return error(c, rc, "get_fabric_snapshot (bind)");
  rc = sqlite3_step(s);
  if (rc == SQLITE_DONE) return std::optional<FabricSnapshotRecord>();
  if (rc != SQLITE_ROW) return error(c, rc, "get_fabric_snapshot");
  return std::optional<FabricSnapshotRecord>(fabricSnapshotRow(s, true));
}

Result<std::vector<FabricFindingRecord>> SqliteStore::fabricFindings(int64_t snapshot_id) {
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * s,
                       statement(c, "fabric_findings",
                                 "SELECT kind, switch_name, port, message FROM fabric_findings "
                                 "WHERE snapshot_id = ?1 ORDER BY seq"));
  StmtScope scope(s);
  int rc = sqlite3_bind_int64(s, 1, snapshot_id);
  if (rc != SQLITE_OK) return error(c, rc, "fabric_findings (bind)");
  std::vector<FabricFindingRecord> out;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    FabricFindingRecord f;
    f.kind = columnText(s, 0);
    f.switch_name = columnText(s, 1);
    f.port = sqlite3_column_int(s, 2);
    f.message = columnText(s, 3);
    out.push_back(std::move(f));
  }
  if (rc != SQLITE_DONE) return error(c, rc, "fabric_findings");
  return out;
}

Result<uint64_t> SqliteStore::dropFabricSnapshotsBefore(int64_t cutoff_ms, uint32_t max_rows) {
  if (max_rows == 0) {
    return invalidArgument("dropFabricSnapshotsBefore: max_rows is 0",
                           "drop in batches of at least one snapshot (e.g. 2000)");
  }
  MutexLock lock(writer_.mu);
  GDR_RETURN_IF_ERROR(walIndexWritable());
  // The oldest documents first; the newest ok snapshot keeps its document whatever its age.
  GDR_ASSIGN_OR_RETURN(
      sqlite3_stmt * s,
      statement(writer_, "drop_fabric_snapshots_before",
                "UPDATE fabric_snapshots SET snapshot_json = '' WHERE id IN (SELECT id FROM "
                "fabric_snapshots WHERE taken_ms < ?1 AND snapshot_json <> '' AND id <> "
                "(SELECT coalesce(max(id), 0) FROM fabric_snapshots WHERE outcome = 'ok') "
                "ORDER BY taken_ms, id LIMIT ?2)"));
  StmtScope scope(s);
  int rc = sqlite3_bind_int64(s, 1, cutoff_ms);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 2, max_rows);
  if (rc != SQLITE_OK) return error(writer_, rc, "drop_fabric_snapshots_before (bind)");
  rc = sqlite3_step(s);
  if (rc != SQLITE_DONE) return error(writer_, rc, "drop_fabric_snapshots_before");
  return static_cast<uint64_t>(sqlite3_changes64(writer_.db.get()));
}

}  // namespace gdrmesh
