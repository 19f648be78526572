// SqliteStore: sweeps and their in-flight markers (SweepRecords), and the history of schedule
// firings (ScheduleHistory). A sweep's report rows are in sqlite_verdicts.cc.
#include <limits>
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

Status checkSweep(const SweepRecord& sweep) {
  if (sweep.id.empty()) {
    return invalidArgument("sweep.id is empty", "give every sweep an id (e.g. s-<time>-<hex>)");
  }
  return Status();
}

}  // namespace

Status SqliteStore::createSweep(const SweepRecord& sweep) {
  return writeSweep(sweep, true);
}

Status SqliteStore::updateSweep(const SweepRecord& sweep) {
  return writeSweep(sweep, false);
}

// The sweeps row (INSERT or UPDATE) and its report row, in one transaction.
Status SqliteStore::writeSweep(const SweepRecord& sweep, bool create) {
  GDR_RETURN_IF_ERROR(checkSweep(sweep));
  const std::string name = create ? "insert_sweep" : "update_sweep";
  MutexLock lock(writer_.mu);
  GDR_RETURN_IF_ERROR(walIndexWritable());
  GDR_RETURN_IF_ERROR(begin());
  Status st = [&]() -> Status {
    GDR_ASSIGN_OR_RETURN(sqlite3_stmt * s,
                         statement(writer_, name, create ? insertSweepSql() : updateSweepSql()));
    StmtScope scope(s);
    Binder binder(s);
    visitSweepColumns(sweep, binder);
    if (binder.rc() != SQLITE_OK) {
      return error(writer_, binder.rc(),
                   name + " (bind " + std::string(binder.failedColumn()) + ")");
    }
    const int rc = sqlite3_step(s);
    if (create && (rc == SQLITE_CONSTRAINT_PRIMARYKEY || rc == SQLITE_CONSTRAINT_UNIQUE)) {
      return invalidArgument("sweep '" + sweep.id + "' is already stored in " + path_,
                             "sweep ids are unique: give each sweep its own id, or updateSweep");
    }
    if (rc != SQLITE_DONE) return error(writer_, rc, name);
    if (!create && sqlite3_changes(writer_.db.get()) == 0) {
      return notFound("sweep '" + sweep.id + "' is not stored in " + path_,
                      "createSweep it first (ids are matched exactly)");
    }
    return Status();
  }();
  if (!st.ok()) {
    rollbackQuietly();
    return st;
  }
  return commit();
}

Result<std::optional<SweepRecord>> SqliteStore::getSweep(const std::string& id) {
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  GDR_ASSIGN_OR_RETURN(
      sqlite3_stmt * s,
      statement(c, "get_sweep", "SELECT " + selectSweepColumns() + " FROM sweeps WHERE id = ?1"));
  StmtScope scope(s);
  int rc = sqlite3_bind_text64(s, 1, id.data(), id.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK) return error(c, rc, "get_sweep (bind)");
  rc = sqlite3_step(s);
  if (rc == SQLITE_DONE) return std::optional<SweepRecord>();
  if (rc != SQLITE_ROW) return error(c, rc, "get_sweep");
  GDR_ASSIGN_OR_RETURN(SweepRecord r, readSweepRow(s, path_));
  return std::optional<SweepRecord>(std::move(r));
}

Result<std::vector<SweepRecord>> SqliteStore::listSweeps(uint32_t limit, const std::string& state) {
  // Newest first straight from sweeps(created_ms) or sweeps(state, created_ms); equal times:
  // the later insertion first.
  const std::string name = state.empty() ? "list_sweeps" : "list_sweeps+state";
  const std::string sql = "SELECT " + selectSweepColumns() + " FROM sweeps" +
                          (state.empty() ? "" : " WHERE state = :state") +
                          " ORDER BY created_ms DESC, rowid DESC LIMIT :limit";
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * s, statement(c, name, sql));
  StmtScope scope(s);
  int rc = state.empty() ? SQLITE_OK : bindText(s, ":state", state);
  if (rc == SQLITE_OK) rc = bindInt(s, ":limit", limit == 0 ? -1 : int64_t{limit});
  if (rc != SQLITE_OK) return error(c, rc, name + " (bind)");
  std::vector<SweepRecord> out;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    GDR_ASSIGN_OR_RETURN(SweepRecord r, readSweepRow(s, path_));
    out.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) return error(c, rc, name);
  return out;
}

Status SqliteStore::markSweepTestStarted(const std::string& sweep_id, const SweepTestStart& start) {
  if (sweep_id.empty()) {
    return invalidArgument("sweep id is empty", "mark tests of a stored sweep (createSweep)");
  }
  if (start.plan_index < 0) {
    return invalidArgument(
        "sweep " + sweep_id + ": plan_index " + std::to_string(start.plan_index) + " is negative",
        "pass the test's index in the sweep plan (0, 1, ...)");
  }
  MutexLock lock(writer_.mu);
  GDR_RETURN_IF_ERROR(walIndexWritable());
  // A plan index started again (a re-run after a restart) replaces the earlier marker.
  GDR_ASSIGN_OR_RETURN(
      sqlite3_stmt * s,
      statement(writer_, "mark_sweep_test_started",
                "INSERT INTO sweep_test_starts (sweep_id, plan_index, test_id, started_ms, "
                "initiator_worker, initiator_nic, target_worker, target_nic, message_size) "
                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT (sweep_id, plan_index) "
                "DO UPDATE SET test_id = excluded.test_id, started_ms = excluded.started_ms, "
                "initiator_worker = excluded.initiator_worker, initiator_nic = "
                "excluded.initiator_nic, target_worker = excluded.target_worker, target_nic = "
                "excluded.target_nic, message_size = excluded.message_size"));
  StmtScope scope(s);
  int rc =
      sqlite3_bind_text64(s, 1, sweep_id.data(), sweep_id.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 2, start.plan_index);
  if (rc == SQLITE_OK) {
    rc = sqlite3_bind_text64(s, 3, start.test_id.data(), start.test_id.size(), SQLITE_TRANSIENT,
                             SQLITE_UTF8);
  }
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 4, start.started_ms);
  int col = 5;
  for (const std::string* text :
       {&start.initiator_worker, &start.initiator_nic, &start.target_worker, &start.target_nic}) {
    if (rc == SQLITE_OK) {
      rc = sqlite3_bind_text64(s, col, text->data(), text->size(), SQLITE_TRANSIENT, SQLITE_UTF8);
    }
    ++col;
  }
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 9, static_cast<int64_t>(start.message_size));
  if (rc != SQLITE_OK) return error(writer_, rc, "mark_sweep_test_started (bind)");
  rc = sqlite3_step(s);
  if (rc == SQLITE_CONSTRAINT_FOREIGNKEY) {
    return notFound("sweep '" + sweep_id + "' is not stored in " + path_,
                    "createSweep before marking its tests started");
  }
  if (rc != SQLITE_DONE) return error(writer_, rc, "mark_sweep_test_started");
  return Status();
}

Result<std::vector<SweepTestStart>> SqliteStore::unfinishedSweepTests(const std::string& sweep_id) {
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  // Walks sweep_test_starts by its primary key and probes results(run_id, plan_index).
  GDR_ASSIGN_OR_RETURN(
      sqlite3_stmt * s,
      statement(c, "unfinished_sweep_tests",
                "SELECT st.plan_index, st.test_id, st.started_ms, st.initiator_worker, "
                "st.initiator_nic, st.target_worker, st.target_nic, st.message_size FROM "
                "sweep_test_starts st "
                "WHERE st.sweep_id = ?1 AND NOT EXISTS (SELECT 1 FROM results r WHERE "
                "r.run_id = st.sweep_id AND r.plan_index = st.plan_index) "
                "ORDER BY st.plan_index"));
  StmtScope scope(s);
  int rc =
      sqlite3_bind_text64(s, 1, sweep_id.data(), sweep_id.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK) return error(c, rc, "unfinished_sweep_tests (bind)");
  std::vector<SweepTestStart> out;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    SweepTestStart t;
    const int64_t index = sqlite3_column_int64(s, 0);
    if (index < 0 || index > std::numeric_limits<int>::max()) {
      return Status(Code::kDataLoss,
                    "sweep_test_starts row of sweep '" + sweep_id + "' in " + path_ +
                        ": plan_index " + std::to_string(index) + " is out of range",
                    "the row was written by another program; delete it");
    }
    t.plan_index = static_cast<int>(index);
    t.test_id = columnText(s, 1);
    t.started_ms = sqlite3_column_int64(s, 2);
    t.initiator_worker = columnText(s, 3);
    t.initiator_nic = columnText(s, 4);
    t.target_worker = columnText(s, 5);
    t.target_nic = columnText(s, 6);
    t.message_size = static_cast<uint64_t>(sqlite3_column_int64(s, 7));
    out.push_back(std::move(t));
  }
  if (rc != SQLITE_DONE) return error(c, rc, "unfinished_sweep_tests");
  return out;
}

// ---------------------------------------------------------------------------------------------
// Schedule history.

Status SqliteStore::recordScheduleRun(const ScheduleRun& run) {
  if (run.schedule.empty()) {
    return invalidArgument("schedule run has no schedule name", "record runs of a named schedule");
  }
  MutexLock lock(writer_.mu);
  GDR_RETURN_IF_ERROR(walIndexWritable());
  GDR_ASSIGN_OR_RETURN(
      sqlite3_stmt * s,
      statement(writer_, "record_schedule_run",
                "INSERT INTO schedule_runs (schedule, due_ms, state, sweep_id, recorded_ms, "
                "detail) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"));
  StmtScope scope(s);
  int rc = sqlite3_bind_text64(s, 1, run.schedule.data(), run.schedule.size(), SQLITE_TRANSIENT,
                               SQLITE_UTF8);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 2, run.due_ms);
  if (rc == SQLITE_OK) {
    rc = sqlite3_bind_text64(s, 3, run.state.data(), run.state.size(), SQLITE_TRANSIENT,
                             SQLITE_UTF8);
  }
  if (rc == SQLITE_OK) {
    rc = sqlite3_bind_text64(s, 4, run.sweep_id.data(), run.sweep_id.size(), SQLITE_TRANSIENT,
                             SQLITE_UTF8);
  }
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 5, run.recorded_ms);
  if (rc == SQLITE_OK) {
    rc = sqlite3_bind_text64(s, 6, run.detail.data(), run.detail.size(), SQLITE_TRANSIENT,
                             SQLITE_UTF8);
  }
  if (rc != SQLITE_OK) return error(writer_, rc, "record_schedule_run (bind)");
  rc = sqlite3_step(s);
  if (rc != SQLITE_DONE) return error(writer_, rc, "record_schedule_run");
  return Status();
}

Result<std::vector<ScheduleRun>> SqliteStore::scheduleRuns(const std::string& schedule,
                                                           uint32_t limit) {
  if (schedule.empty()) {
    return invalidArgument("scheduleRuns needs a schedule name", "pass the schedule's name");
  }
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  // Newest first straight from schedule_runs(schedule, due_ms); equal due times: the later
  // record first.
  GDR_ASSIGN_OR_RETURN(
      sqlite3_stmt * s,
      statement(c, "schedule_runs",
                "SELECT schedule, due_ms, state, sweep_id, recorded_ms, detail FROM schedule_runs "
                "WHERE schedule = ?1 ORDER BY due_ms DESC, id DESC LIMIT ?2"));
  StmtScope scope(s);
  int rc =
      sqlite3_bind_text64(s, 1, schedule.data(), schedule.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 2, limit == 0 ? -1 : int64_t{limit});
  if (rc != SQLITE_OK) return error(c, rc, "schedule_runs (bind)");
  std::vector<ScheduleRun> out;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    ScheduleRun r;
    r.schedule = columnText(s, 0);
    r.due_ms = sqlite3_column_int64(s, 1);
    r.state = columnText(s, 2);
    r.sweep_id = columnText(s, 3);
    r.recorded_ms = sqlite3_column_int64(s, 4);
    r.detail = columnText(s, 5);
    out.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) return error(c, rc, "schedule_runs");
  return out;
}

}  // namespace gdrmesh
