// SqliteStore: actions on nodes (ActionStore), append-only.
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/sync/mutex.h"
#include "coordinator/store/sqlite_columns.h"
#include "coordinator/store/sqlite_internal.h"
#include "coordinator/store/sqlite_store.h"

namespace gdrmesh {

// The store's private helpers: sqlite_internal.h (statements, the read lease) and
// sqlite_columns.h, store_columns.h (the column lists).
using namespace sqlite_detail;
using namespace store_detail;

Result<int64_t> SqliteStore::recordAction(const ActionRecord& a) {
  if (a.node.empty() || a.action.empty() || a.outcome.empty()) {
    return invalidArgument("action record has no node, action or outcome",
                           "record an action with its node, action and outcome");
  }
  MutexLock lock(writer_.mu);
  GDR_RETURN_IF_ERROR(walIndexWritable());
  GDR_ASSIGN_OR_RETURN(
      sqlite3_stmt * s,
      statement(writer_, "record_action",
                "INSERT INTO node_actions (recorded_ms, sweep_id, node, action, outcome, "
                "actuator, reason, detail) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"));
  StmtScope scope(s);
  int rc = sqlite3_bind_int64(s, 1, a.recorded_ms);
  int index = 2;
  for (const std::string* v :
       {&a.sweep_id, &a.node, &a.action, &a.outcome, &a.actuator, &a.reason, &a.detail}) {
    if (rc == SQLITE_OK) {
      rc = sqlite3_bind_text64(s, index, v->data(), v->size(), SQLITE_TRANSIENT, SQLITE_UTF8);
    }
    ++index;
  }
  if (rc != SQLITE_OK) return error(writer_, rc, "record_action (bind)");
  rc = sqlite3_step(s);
  if (rc != SQLITE_DONE) return error(writer_, rc, "record_action");
  return sqlite3_last_insert_rowid(writer_.db.get());
}

Result<std::vector<ActionRecord>> SqliteStore::listActions(const ActionQuery& q) {
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  GDR_ASSIGN_OR_RETURN(
      sqlite3_stmt * s,
      statement(c, "list_actions",
                "SELECT id, recorded_ms, sweep_id, node, action, outcome, actuator, reason, "
                "detail FROM node_actions WHERE (?1 = '' OR node = ?1) AND (?2 = '' OR "
                "sweep_id = ?2) AND recorded_ms >= ?3 ORDER BY id DESC LIMIT ?4"));
  StmtScope scope(s);
  int rc = sqlite3_bind_text64(s, 1, q.node.data(), q.node.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc == SQLITE_OK) {
    rc = sqlite3_bind_text64(s, 2, q.sweep_id.data(), q.sweep_id.size(), SQLITE_TRANSIENT,
                             SQLITE_UTF8);
  }
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 3, q.since_ms);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 4, q.limit == 0 ? -1 : int64_t{q.limit});
  if (rc != SQLITE_OK) return error(c, rc, "list_actions (bind)");
  std::vector<ActionRecord> out;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    ActionRecord r;
    r.id = sqlite3_column_int64(s, 0);
    r.recorded_ms = sqlite3_column_int64(s, 1);
    r.sweep_id = columnText(s, 2);
    r.node = columnText(s, 3);
    r.action = columnText(s, 4);
    r.outcome = columnText(s, 5);
    r.actuator = columnText(s, 6);
    r.reason = columnText(s, 7);
    r.detail = columnText(s, 8);
    out.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) return error(c, rc, "list_actions");
  return out;
}

// What the hooks last announced (HookStateStore; migration 11).
Result<std::set<std::string>> SqliteStore::hookSuspects() {
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * s,
                       statement(c, "hook_suspects", "SELECT suspect FROM hook_suspects"));
  StmtScope scope(s);
  std::set<std::string> out;
  int rc = 0;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) out.insert(columnText(s, 0));
  if (rc != SQLITE_DONE) return error(c, rc, "hook_suspects");
  return out;
}
Status SqliteStore::setHookSuspects(const std::set<std::string>& keys) {
  MutexLock lock(writer_.mu);
  GDR_RETURN_IF_ERROR(walIndexWritable());
  GDR_RETURN_IF_ERROR(begin());
  Status st = execOnce(writer_, "set_hook_suspects (clear)", "DELETE FROM hook_suspects");
  if (st.ok()) {
    auto s =
        statement(writer_, "set_hook_suspect", "INSERT INTO hook_suspects (suspect) VALUES (?1)");
    if (!s.ok()) st = s.status();
    for (const std::string& k : keys) {
      if (!st.ok()) break;
      StmtScope scope(*s);
      int rc = sqlite3_bind_text64(*s, 1, k.data(), k.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
      if (rc == SQLITE_OK) rc = sqlite3_step(*s);
      if (rc != SQLITE_DONE) st = error(writer_, rc, "set_hook_suspect");
    }
  }
  if (!st.ok()) {
    rollbackQuietly();
    return st;
  }
  return commit();
}

}  // namespace gdrmesh
