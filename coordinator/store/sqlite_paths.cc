// SqliteStore: pair tests' paths through the fabric (TestPathStore; migration 12, table
// test_path_hops). The switch GUID is stored as its hex text ("0x0000000000001001"): SQLite's
// integers are signed 64-bit and GUIDs use the top bit.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "common/sync/mutex.h"
#include "coordinator/store/sqlite_internal.h"

namespace gdrmesh {

using sqlite_detail::columnText;
using sqlite_detail::StmtScope;

namespace {

// The one column list of test_path_hops, shared by the INSERT and the SELECTs.
constexpr const char* kPathHopColumns =
    "test_id, sweep_id, direction, hop, switch_name, switch_guid, in_port, out_port, link, fabric";

std::string pathGuidText(uint64_t guid) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%016" PRIx64, guid);
  return text;
}

int bindPathText(sqlite3_stmt* s, int i, const std::string& v) {
  return sqlite3_bind_text64(s, i, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
}

PathHopRecord pathHopFromRow(sqlite3_stmt* s) {
  PathHopRecord h;
  h.test_id = columnText(s, 0);
  h.sweep_id = columnText(s, 1);
  h.direction = columnText(s, 2);
  h.hop = sqlite3_column_int(s, 3);
  h.switch_name = columnText(s, 4);
  h.switch_guid = std::strtoull(columnText(s, 5).c_str(), nullptr, 16);
  h.in_port = sqlite3_column_int(s, 6);
  h.out_port = sqlite3_column_int(s, 7);
  h.fabric = columnText(s, 9);
  return h;
}

}  // namespace

Status SqliteStore::putTestPaths(const std::vector<PathHopRecord>& hops) {
  GDR_RETURN_IF_ERROR(validatePathHops(hops));
  if (hops.empty()) return Status();
  MutexLock lock(writer_.mu);
  return writeInTransaction([&]() -> Status {
    GDR_ASSIGN_OR_RETURN(
        sqlite3_stmt * del,
        statement(writer_, "delete_test_path", "DELETE FROM test_path_hops WHERE test_id = ?1"));
    std::set<std::string> cleared;
    for (const PathHopRecord& h : hops) {
      if (!cleared.insert(h.test_id).second) continue;
      StmtScope scope(del);
      int rc = bindPathText(del, 1, h.test_id);
      if (rc == SQLITE_OK) rc = sqlite3_step(del);
      if (rc != SQLITE_DONE) return error(writer_, rc, "delete_test_path");
    }
    GDR_ASSIGN_OR_RETURN(sqlite3_stmt * ins,
                         statement(writer_, "insert_test_path_hop",
                                   std::string("INSERT INTO test_path_hops (") + kPathHopColumns +
                                       ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"));
    for (const PathHopRecord& h : hops) {
      StmtScope scope(ins);
      int rc = bindPathText(ins, 1, h.test_id);
      if (rc == SQLITE_OK) rc = bindPathText(ins, 2, h.sweep_id);
      if (rc == SQLITE_OK) rc = bindPathText(ins, 3, h.direction);
      if (rc == SQLITE_OK) rc = sqlite3_bind_int(ins, 4, h.hop);
      if (rc == SQLITE_OK) rc = bindPathText(ins, 5, h.switch_name);
      if (rc == SQLITE_OK) rc = bindPathText(ins, 6, pathGuidText(h.switch_guid));
      if (rc == SQLITE_OK) rc = sqlite3_bind_int(ins, 7, h.in_port);
      if (rc == SQLITE_OK) rc = sqlite3_bind_int(ins, 8, h.out_port);
      if (rc == SQLITE_OK) rc = bindPathText(ins, 9, h.link());
      if (rc == SQLITE_OK) rc = bindPathText(ins, 10, h.fabric);
      if (rc == SQLITE_OK) rc = sqlite3_step(ins);
      if (rc != SQLITE_DONE) return error(writer_, rc, "insert_test_path_hop");
    }
    return Status();
  });
}

Result<std::vector<PathHopRecord>> SqliteStore::testPath(const std::string& test_id) {
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  GDR_ASSIGN_OR_RETURN(
      sqlite3_stmt * s,
      statement(c, "test_path",
                std::string("SELECT ") + kPathHopColumns +
                    " FROM test_path_hops WHERE test_id = ?1 ORDER BY direction, hop"));
  StmtScope scope(s);
  int rc = bindPathText(s, 1, test_id);
  if (rc != SQLITE_OK) return error(c, rc, "test_path");
  std::vector<PathHopRecord> out;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) out.push_back(pathHopFromRow(s));
  if (rc != SQLITE_DONE) return error(c, rc, "test_path");
  return out;
}

Result<std::vector<PathHopRecord>> SqliteStore::sweepPaths(const std::string& sweep_id) {
  if (sweep_id.empty()) {
    return invalidArgument("sweepPaths: empty sweep id", "name the sweep");
  }
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * s, statement(c, "sweep_paths",
                                                   std::string("SELECT ") + kPathHopColumns +
                                                       " FROM test_path_hops WHERE sweep_id = ?1"
                                                       " ORDER BY test_id, direction, hop"));
  StmtScope scope(s);
  int rc = bindPathText(s, 1, sweep_id);
  if (rc != SQLITE_OK) return error(c, rc, "sweep_paths");
  std::vector<PathHopRecord> out;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) out.push_back(pathHopFromRow(s));
  if (rc != SQLITE_DONE) return error(c, rc, "sweep_paths");
  return out;
}

}  // namespace gdrmesh
