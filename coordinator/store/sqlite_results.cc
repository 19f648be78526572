// SqliteStore: results (ResultRecords), workers (WorkerRecords) and the in-flight markers of
// single pair tests (TestMarkers).
#include <optional>
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

namespace {

std::string rowOf(size_t i, size_t n, const TestResult& r) {
  return "result " + std::to_string(i + 1) + " of " + std::to_string(n) + " (test_id '" +
         r.test_id + "'; none of the " + std::to_string(n) + " was stored)";
}

}  // namespace

Result<int64_t> SqliteStore::insertResult(const TestResult& result) {
  GDR_RETURN_IF_ERROR(checkInsertable(result));
  MutexLock lock(writer_.mu);
  GDR_RETURN_IF_ERROR(walIndexWritable());
  GDR_ASSIGN_OR_RETURN(std::vector<int64_t> ids, insertLocked(&result, 1));
  return ids.front();
}

Result<std::vector<int64_t>> SqliteStore::insertResults(const std::vector<TestResult>& results) {
  for (size_t i = 0; i < results.size(); ++i) {
    Status s = checkInsertable(results[i]);
    if (!s.ok()) {
      return results.size() == 1 ? s : s.withContext(rowOf(i, results.size(), results[i]));
    }
  }
  if (results.empty()) return std::vector<int64_t>();
  MutexLock lock(writer_.mu);
  GDR_RETURN_IF_ERROR(walIndexWritable());
  return insertLocked(results.data(), results.size());
}

Result<std::vector<int64_t>> SqliteStore::insertLocked(const TestResult* rows, size_t n) {
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * s, statement(writer_, "insert_result", insertResultSql()));
  GDR_RETURN_IF_ERROR(begin());
  std::vector<int64_t> ids;
  ids.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const TestResult& result = rows[i];
    Status failure;
    {
      StmtScope scope(s);  // reset before any ROLLBACK below
      Binder binder(s);
      visitResultColumns(result, binder);
      int rc = binder.rc();
      std::string what = "insert_result";
      if (rc != SQLITE_OK) {
        what += " (bind " + std::string(binder.failedColumn()) + ")";
      } else {
        rc = sqlite3_step(s);
      }
      if (rc == SQLITE_CONSTRAINT_UNIQUE) {
        failure = invalidArgument("test_id '" + result.test_id + "' is already stored in " + path_,
                                  "test ids are unique: give each test its own id");
      } else if (rc != SQLITE_DONE) {
        failure = error(writer_, rc, what);
      }
    }
    if (!failure.ok()) {
      rollbackQuietly();
      return n == 1 ? failure : failure.withContext(rowOf(i, n, result));
    }
    ids.push_back(sqlite3_last_insert_rowid(writer_.db.get()));
  }
  GDR_RETURN_IF_ERROR(commit());
  return ids;
}

namespace {

struct QuerySql {
  std::string name;
  std::string sql;
};

// One fixed statement text per combination of filters present (at most 8, each cached): no
// values in the SQL. Every combination is answered in ORDER BY order straight from an index
// (started_ms, or (filter, started_ms), with the row id as the implicit last key), so SQLite
// stops after `limit` rows instead of sorting every match; SqliteStoreTest checks the plans.
QuerySql queryResultsSql(const ResultQuery& query) {
  QuerySql q{"query_results", ""};
  if (query.plan_order) {
    // From results_run_plan_status (run_id, plan_index, status): the index gives plan order,
    // and only rows sharing a plan index (a test stored twice) are sorted by id.
    // `plan_index >= :ap` bounds the index range, the rest breaks ties.
    q.name += "+plan";
    q.sql = "SELECT " + selectColumns() +
            " FROM results WHERE run_id = :run AND plan_index >= :ap AND (plan_index > :ap OR "
            "id > :aid) ORDER BY plan_index, id LIMIT :limit";
    return q;
  }
  std::string filters = "started_ms >= :since";
  if (query.status) {
    q.name += "+status";
    filters += " AND status = :status";
  }
  if (!query.run_id.empty()) {
    q.name += "+run";
    filters += " AND run_id = :run";
  }
  if (query.before_id > 0) {
    // The next page: `started_ms <= :bs` bounds the index range, the rest breaks ties.
    q.name += "+page";
    filters += " AND started_ms <= :bs AND (started_ms < :bs OR id < :bid)";
  }
  const std::string select = "SELECT " + selectColumns() + " FROM results WHERE ";
  if (query.worker.empty()) {
    q.sql = select + filters;
  } else {
    // "initiator or target" as two ordered halves merged (an OR would collect the row ids of
    // both indexes and sort them). A test from a worker to itself is listed once.
    q.name += "+worker";
    q.sql = select + "initiator_worker = :worker AND " + filters + " UNION ALL " + select +
            "target_worker = :worker AND initiator_worker <> :worker AND " + filters;
  }
  q.sql += " ORDER BY started_ms DESC, id DESC LIMIT :limit";
  return q;
}

}  // namespace

Result<std::vector<TestResult>> SqliteStore::queryResults(const ResultQuery& query) {
  if (query.plan_order && query.run_id.empty()) {
    return invalidArgument("results in plan order: no run_id",
                           "give the sweep's id as run_id (plan order is one sweep's)");
  }
  const QuerySql q = queryResultsSql(query);
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * s, statement(c, q.name, q.sql));
  StmtScope scope(s);
  int rc = SQLITE_OK;
  if (query.plan_order) {
    rc = bindText(s, ":run", query.run_id);
    if (rc == SQLITE_OK) rc = bindInt(s, ":ap", query.after_plan_index);
    if (rc == SQLITE_OK) rc = bindInt(s, ":aid", query.after_id);
  } else {
    rc = bindInt(s, ":since", query.since_ms);
    if (rc == SQLITE_OK && !query.worker.empty()) rc = bindText(s, ":worker", query.worker);
    if (rc == SQLITE_OK && query.status) rc = bindText(s, ":status", toString(*query.status));
    if (rc == SQLITE_OK && !query.run_id.empty()) rc = bindText(s, ":run", query.run_id);
    if (rc == SQLITE_OK && query.before_id > 0) rc = bindInt(s, ":bs", query.before_started_ms);
    if (rc == SQLITE_OK && query.before_id > 0) rc = bindInt(s, ":bid", query.before_id);
  }
  // limit 0 means no limit (LIMIT -1 in SQLite).
  if (rc == SQLITE_OK) rc = bindInt(s, ":limit", query.limit == 0 ? -1 : int64_t{query.limit});
  if (rc != SQLITE_OK) return error(c, rc, q.name + " (bind)");
  std::vector<TestResult> out;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    GDR_ASSIGN_OR_RETURN(TestResult r, readRow(s, path_));
    out.push_back(std::move(r));
    if (on_query_row_) on_query_row_();
  }
  if (rc != SQLITE_DONE) return error(c, rc, q.name);
  return out;
}

Result<std::vector<std::string>> SqliteStore::explainQueryResultsForTesting(
    const ResultQuery& query) {
  const QuerySql q = queryResultsSql(query);
  return explain(q.name, q.sql);
}

namespace {

// countResults: the filters of queryResultsSql, counted. The worker filter counts its two
// halves (initiator; target and not initiator) from their (worker, started_ms) indexes.
QuerySql countResultsSql(const ResultQuery& query) {
  QuerySql q{"count_results", ""};
  std::string filters = "started_ms >= :since";
  if (query.status) {
    q.name += "+status";
    filters += " AND status = :status";
  }
  if (!query.run_id.empty()) {
    q.name += "+run";
    filters += " AND run_id = :run";
  }
  // Counted up to kResultCountCap + 1 (then "more than"), never the whole table.
  const std::string cap = " LIMIT " + std::to_string(kResultCountCap + 1) + ")";
  if (query.worker.empty()) {
    q.sql = "SELECT count(*) FROM (SELECT 1 FROM results WHERE " + filters + cap;
  } else {
    q.name += "+worker";
    q.sql =
        "SELECT (SELECT count(*) FROM (SELECT 1 FROM results WHERE initiator_worker = :worker "
        "AND " +
        filters + cap +
        ") + (SELECT count(*) FROM (SELECT 1 FROM results WHERE target_worker "
        "= :worker AND initiator_worker <> :worker AND " +
        filters + cap + ")";
  }
  return q;
}

// queryHistory: one fixed text per combination of optional filters (size, op, mode, one
// direction). Each direction is a range of results_pair_started (initiator_worker,
// target_worker, started_ms) read newest first, and the two halves are merged in ORDER BY
// order, so SQLite stops after `limit` rows without sorting. The reverse half is empty for a
// loopback pair (src = dst), which the forward half already lists.
QuerySql queryHistorySql(const HistoryQuery& query) {
  QuerySql q{"query_history", ""};
  std::string filters = "started_ms >= :since AND started_ms < :until";
  if (query.message_size != 0) {
    q.name += "+size";
    filters += " AND message_size = :size";
  }
  if (query.op) {
    q.name += "+op";
    filters += " AND op = :op";
  }
  if (query.mode) {
    q.name += "+mode";
    filters += " AND mode = :mode";
  }
  if (!query.run_id.empty()) {
    q.name += "+run";
    filters += " AND run_id = :run";
  }
  const std::string select = "SELECT " + selectColumns() + " FROM results WHERE ";
  q.sql = select + "initiator_worker = :src AND target_worker = :dst AND " + filters;
  if (query.both_directions) {
    q.sql += " UNION ALL " + select +
             "initiator_worker = :dst AND target_worker = :src AND :src <> :dst AND " + filters;
  } else {
    q.name += "+one";
  }
  q.sql += " ORDER BY started_ms DESC, id DESC LIMIT :limit";
  return q;
}

}  // namespace

Result<uint64_t> SqliteStore::countResults(const ResultQuery& query) {
  const QuerySql q = countResultsSql(query);
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * s, statement(c, q.name, q.sql));
  StmtScope scope(s);
  int rc = bindInt(s, ":since", query.since_ms);
  if (rc == SQLITE_OK && !query.worker.empty()) rc = bindText(s, ":worker", query.worker);
  if (rc == SQLITE_OK && query.status) rc = bindText(s, ":status", toString(*query.status));
  if (rc == SQLITE_OK && !query.run_id.empty()) rc = bindText(s, ":run", query.run_id);
  if (rc != SQLITE_OK) return error(c, rc, q.name + " (bind)");
  rc = sqlite3_step(s);
  if (rc != SQLITE_ROW) return error(c, rc == SQLITE_DONE ? SQLITE_INTERNAL : rc, q.name);
  const int64_t n = sqlite3_column_int64(s, 0);
  return static_cast<uint64_t>(n < 0 ? 0 : n);
}

Result<std::vector<std::string>> SqliteStore::explainCountResultsForTesting(
    const ResultQuery& query) {
  const QuerySql q = countResultsSql(query);
  return explain(q.name, q.sql);
}

Result<std::vector<TestResult>> SqliteStore::queryHistory(const HistoryQuery& query) {
  if (query.src.empty() || query.dst.empty()) {
    return invalidArgument(
        std::string("history: ") + (query.src.empty() ? "src" : "dst") + " worker is empty",
        "name both workers of the pair (SRC and DST)");
  }
  const QuerySql q = queryHistorySql(query);
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * s, statement(c, q.name, q.sql));
  StmtScope scope(s);
  int rc = bindText(s, ":src", query.src);
  if (rc == SQLITE_OK) rc = bindText(s, ":dst", query.dst);
  if (rc == SQLITE_OK) rc = bindInt(s, ":since", query.since_ms);
  if (rc == SQLITE_OK) rc = bindInt(s, ":until", query.until_ms);
  if (rc == SQLITE_OK && query.message_size != 0) {
    rc = bindInt(s, ":size", static_cast<int64_t>(query.message_size));
  }
  if (rc == SQLITE_OK && query.op) rc = bindText(s, ":op", toString(*query.op));
  if (rc == SQLITE_OK && query.mode) rc = bindText(s, ":mode", toString(*query.mode));
  if (rc == SQLITE_OK && !query.run_id.empty()) rc = bindText(s, ":run", query.run_id);
  if (rc == SQLITE_OK) rc = bindInt(s, ":limit", query.limit == 0 ? -1 : int64_t{query.limit});
  if (rc != SQLITE_OK) return error(c, rc, q.name + " (bind)");
  std::vector<TestResult> out;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    GDR_ASSIGN_OR_RETURN(TestResult r, readRow(s, path_));
    out.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) return error(c, rc, q.name);
  return out;
}

Result<std::vector<std::string>> SqliteStore::explainQueryHistoryForTesting(
    const HistoryQuery& query) {
  const QuerySql q = queryHistorySql(query);
  return explain(q.name, q.sql);
}

Result<std::optional<TestResult>> SqliteStore::getResult(const std::string& test_id) {
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  GDR_ASSIGN_OR_RETURN(
      sqlite3_stmt * s,
      statement(c, "get_result", "SELECT " + selectColumns() + " FROM results WHERE test_id = ?1"));
  StmtScope scope(s);
  int rc = sqlite3_bind_text64(s, 1, test_id.data(), test_id.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK) return error(c, rc, "get_result (bind)");
  rc = sqlite3_step(s);
  if (rc == SQLITE_DONE) return std::optional<TestResult>();
  if (rc != SQLITE_ROW) return error(c, rc, "get_result");
  GDR_ASSIGN_OR_RETURN(TestResult r, readRow(s, path_));
  return std::optional<TestResult>(std::move(r));
}

// ---------------------------------------------------------------------------------------------
// Workers.

Status SqliteStore::upsertWorker(const WorkerRecord& worker) {
  if (worker.name.empty()) {
    return invalidArgument("worker.name is empty", "register workers under a non-empty name");
  }
  MutexLock lock(writer_.mu);
  GDR_RETURN_IF_ERROR(walIndexWritable());
  // hostname and inventory: the latest registration wins. first_seen keeps the earliest time,
  // last_seen the latest.
  GDR_ASSIGN_OR_RETURN(
      sqlite3_stmt * s,
      statement(writer_, "upsert_worker",
                "INSERT INTO workers (name, hostname, inventory_json, first_seen_ms, "
                "last_seen_ms) VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (name) DO UPDATE SET "
                "hostname = excluded.hostname, inventory_json = excluded.inventory_json, "
                "first_seen_ms = min(first_seen_ms, excluded.first_seen_ms), "
                "last_seen_ms = max(last_seen_ms, excluded.last_seen_ms)"));
  StmtScope scope(s);
  int rc = sqlite3_bind_text64(s, 1, worker.name.data(), worker.name.size(), SQLITE_TRANSIENT,
                               SQLITE_UTF8);
  if (rc == SQLITE_OK) {
    rc = sqlite3_bind_text64(s, 2, worker.hostname.data(), worker.hostname.size(), SQLITE_TRANSIENT,
                             SQLITE_UTF8);
  }
  if (rc == SQLITE_OK) {
    rc = sqlite3_bind_text64(s, 3, worker.inventory_json.data(), worker.inventory_json.size(),
                             SQLITE_TRANSIENT, SQLITE_UTF8);
  }
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 4, worker.first_seen_ms);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 5, worker.last_seen_ms);
  if (rc != SQLITE_OK) return error(writer_, rc, "upsert_worker (bind)");
  // A single statement is its own transaction: it is applied whole or not at all.
  rc = sqlite3_step(s);
  if (rc != SQLITE_DONE) return error(writer_, rc, "upsert_worker");
  return Status();
}

Result<std::vector<WorkerRecord>> SqliteStore::listWorkers() {
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * s,
                       statement(c, "list_workers",
                                 "SELECT name, hostname, inventory_json, first_seen_ms, "
                                 "last_seen_ms FROM workers ORDER BY name"));
  StmtScope scope(s);
  std::vector<WorkerRecord> out;
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    WorkerRecord w;
    w.name = columnText(s, 0);
    w.hostname = columnText(s, 1);
    w.inventory_json = columnText(s, 2);
    w.first_seen_ms = sqlite3_column_int64(s, 3);
    w.last_seen_ms = sqlite3_column_int64(s, 4);
    out.push_back(std::move(w));
  }
  if (rc != SQLITE_DONE) return error(c, rc, "list_workers");
  return out;
}

Result<bool> SqliteStore::removeWorker(const std::string& name) {
  if (name.empty()) {
    return invalidArgument("worker name is empty", "name the worker to remove");
  }
  MutexLock lock(writer_.mu);
  GDR_RETURN_IF_ERROR(walIndexWritable());
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * s,
                       statement(writer_, "remove_worker", "DELETE FROM workers WHERE name = ?1"));
  StmtScope scope(s);
  int rc = sqlite3_bind_text64(s, 1, name.data(), name.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK) return error(writer_, rc, "remove_worker (bind)");
  rc = sqlite3_step(s);
  if (rc != SQLITE_DONE) return error(writer_, rc, "remove_worker");
  return sqlite3_changes(writer_.db.get()) > 0;
}

// ---------------------------------------------------------------------------------------------
// In-flight markers of single pair tests.

Status SqliteStore::markTestStarted(const TestResult& started) {
  const TestResult& t = started;
  if (t.test_id.empty()) {
    return invalidArgument("test_id is empty", "mark a test with its id (newTestId)");
  }
  MutexLock lock(writer_.mu);
  GDR_RETURN_IF_ERROR(walIndexWritable());
  GDR_ASSIGN_OR_RETURN(
      sqlite3_stmt * s,
      statement(writer_, "mark_test_started",
                "INSERT OR REPLACE INTO test_starts (test_id, run_id, started_ms, op, mode, "
                "transport, message_size, iterations, num_qps, initiator_worker, initiator_host, "
                "target_worker, target_host) VALUES (:test_id, :run_id, :started_ms, :op, :mode, "
                ":transport, :message_size, :iterations, :num_qps, :iw, :ih, :tw, :th)"));
  StmtScope scope(s);
  int rc = bindText(s, ":test_id", t.test_id);
  if (rc == SQLITE_OK) rc = bindText(s, ":run_id", t.run_id);
  if (rc == SQLITE_OK) rc = bindInt(s, ":started_ms", t.started_ms);
  if (rc == SQLITE_OK) rc = bindText(s, ":op", toString(t.op));
  if (rc == SQLITE_OK) rc = bindText(s, ":mode", toString(t.mode));
  if (rc == SQLITE_OK) rc = bindText(s, ":transport", toString(t.transport));
  if (rc == SQLITE_OK) rc = bindInt(s, ":message_size", static_cast<int64_t>(t.message_size));
  if (rc == SQLITE_OK) rc = bindInt(s, ":iterations", static_cast<int64_t>(t.iterations));
  if (rc == SQLITE_OK) rc = bindInt(s, ":num_qps", t.num_qps);
  if (rc == SQLITE_OK) rc = bindText(s, ":iw", t.initiator.worker);
  if (rc == SQLITE_OK) rc = bindText(s, ":ih", t.initiator.host);
  if (rc == SQLITE_OK) rc = bindText(s, ":tw", t.target.worker);
  if (rc == SQLITE_OK) rc = bindText(s, ":th", t.target.host);
  if (rc != SQLITE_OK) return error(writer_, rc, "mark_test_started (bind)");
  rc = sqlite3_step(s);
  if (rc != SQLITE_DONE) return error(writer_, rc, "mark_test_started");
  return Status();
}

Status SqliteStore::clearTestStarted(const std::string& test_id) {
  MutexLock lock(writer_.mu);
  GDR_RETURN_IF_ERROR(walIndexWritable());
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * s, statement(writer_, "clear_test_started",
                                                   "DELETE FROM test_starts WHERE test_id = ?1"));
  StmtScope scope(s);
  int rc = sqlite3_bind_text64(s, 1, test_id.data(), test_id.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK) return error(writer_, rc, "clear_test_started (bind)");
  rc = sqlite3_step(s);
  if (rc != SQLITE_DONE) return error(writer_, rc, "clear_test_started");
  return Status();
}

Result<std::vector<TestResult>> SqliteStore::unfinishedTests() {
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  GDR_ASSIGN_OR_RETURN(
      sqlite3_stmt * s,
      statement(c, "unfinished_tests",
                "SELECT test_id, run_id, started_ms, op, mode, transport, message_size, "
                "iterations, num_qps, initiator_worker, initiator_host, target_worker, "
                "target_host FROM test_starts st WHERE NOT EXISTS (SELECT 1 FROM results r "
                "WHERE r.test_id = st.test_id) ORDER BY started_ms, test_id"));
  StmtScope scope(s);
  std::vector<TestResult> out;
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    TestResult t;
    t.test_id = columnText(s, 0);
    t.run_id = columnText(s, 1);
    t.started_ms = sqlite3_column_int64(s, 2);
    const bool ok = parseEnum(columnText(s, 3), &t.op) && parseEnum(columnText(s, 4), &t.mode) &&
                    parseEnum(columnText(s, 5), &t.transport);
    if (!ok) {
      return Status(
          Code::kDataLoss,
          "test_starts row '" + t.test_id + "' in " + path_ + ": unknown op, mode or transport",
          "the row was written by another program or a newer gdrmesh; delete it");
    }
    t.message_size = static_cast<uint64_t>(sqlite3_column_int64(s, 6));
    t.iterations = static_cast<uint64_t>(sqlite3_column_int64(s, 7));
    t.num_qps = static_cast<uint32_t>(sqlite3_column_int64(s, 8));
    t.initiator.worker = columnText(s, 9);
    t.initiator.host = columnText(s, 10);
    t.target.worker = columnText(s, 11);
    t.target.host = columnText(s, 12);
    out.push_back(std::move(t));
  }
  if (rc != SQLITE_DONE) return error(c, rc, "unfinished_tests");
  return out;
}

}  // namespace gdrmesh
