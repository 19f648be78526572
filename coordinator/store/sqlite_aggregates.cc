// SqliteStore: per-sweep aggregates and totals, the pair history read from them
// (SweepAggregates), and retention's deletion of raw result rows (ResultRetention).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/sync/mutex.h"
#include "coordinator/store/aggregate_rules.h"
#include "coordinator/store/sqlite_columns.h"
#include "coordinator/store/sqlite_internal.h"
#include "coordinator/store/sqlite_store.h"

namespace gdrmesh {

// The store's private helpers: sqlite_internal.h (statements, the read lease) and
// sqlite_columns.h, store_columns.h (the column lists).
using namespace sqlite_detail;
using namespace store_detail;

// Named, not anonymous: SqliteStore::AggregateScan (a member of a class with external linkage)
// holds these, and GCC's -Wsubobject-linkage rejects an anonymous-namespace field type once
// this file is compiled inside a unity source (the sanitizer builds).
namespace sqlite_aggregates_detail {

struct AggregateGroup {
  PairAggregate a;
  std::vector<double> values;
};

}  // namespace sqlite_aggregates_detail

using sqlite_aggregates_detail::AggregateGroup;

namespace {

const char* const kAggregateColumns =
    "sweep_id, src, dst, op, mode, message_size, started_ms, tests, passed, failed, skipped, "
    "errors, status, value_median, value_min, value_max, unit";

double columnDouble(sqlite3_stmt* s, int i) {
  return sqlite3_column_type(s, i) == SQLITE_NULL ? std::numeric_limits<double>::quiet_NaN()
                                                  : sqlite3_column_double(s, i);
}

Result<PairAggregate> readAggregate(sqlite3_stmt* s, const std::string& path) {
  PairAggregate a;
  a.sweep_id = columnText(s, 0);
  a.src = columnText(s, 1);
  a.dst = columnText(s, 2);
  const std::string op = columnText(s, 3);
  const std::string mode = columnText(s, 4);
  const std::string status = columnText(s, 12);
  if (!parseEnum(op, &a.op) || !parseEnum(mode, &a.mode) || !parseEnum(status, &a.status)) {
    return Status(Code::kDataLoss,
                  "sweep_aggregates row of sweep '" + a.sweep_id + "' in " + path + " holds op '" +
                      op + "', mode '" + mode + "', status '" + status + "'",
                  "the row was written by another program or a newer gdrmesh; upgrade gdrmesh");
  }
  a.message_size = static_cast<uint64_t>(sqlite3_column_int64(s, 5));
  a.started_ms = sqlite3_column_int64(s, 6);
  a.tests = static_cast<uint32_t>(sqlite3_column_int64(s, 7));
  a.passed = static_cast<uint32_t>(sqlite3_column_int64(s, 8));
  a.failed = static_cast<uint32_t>(sqlite3_column_int64(s, 9));
  a.skipped = static_cast<uint32_t>(sqlite3_column_int64(s, 10));
  a.errors = static_cast<uint32_t>(sqlite3_column_int64(s, 11));
  a.value_median = columnDouble(s, 13);
  a.value_min = columnDouble(s, 14);
  a.value_max = columnDouble(s, 15);
  a.unit = columnText(s, 16);
  return a;
}

// Counts one more test of status `status` that started at `started_ms` into `a`.
void addToAggregate(PairAggregate& a, TestStatus status, int64_t started_ms) {
  a.started_ms = std::min(a.started_ms, started_ms);
  if (statusSeverity(status) > statusSeverity(a.status)) a.status = status;
  ++a.tests;
  a.passed += status == TestStatus::kPassed ? 1 : 0;
  a.failed += status == TestStatus::kFailed ? 1 : 0;
  a.skipped += status == TestStatus::kSkipped ? 1 : 0;
  a.errors += status == TestStatus::kError ? 1 : 0;
}

// Binds the 17 columns of kAggregateColumns, in order; the first failure's code.
int bindAggregate(sqlite3_stmt* ins, const PairAggregate& a) {
  int rc = sqlite3_bind_text64(ins, 1, a.sweep_id.data(), a.sweep_id.size(), SQLITE_TRANSIENT,
                               SQLITE_UTF8);
  if (rc == SQLITE_OK) {
    rc = sqlite3_bind_text64(ins, 2, a.src.data(), a.src.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  }
  if (rc == SQLITE_OK) {
    rc = sqlite3_bind_text64(ins, 3, a.dst.data(), a.dst.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  }
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(ins, 4, toString(a.op), -1, SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(ins, 5, toString(a.mode), -1, SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(ins, 6, static_cast<int64_t>(a.message_size));
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(ins, 7, a.started_ms);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(ins, 8, a.tests);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(ins, 9, a.passed);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(ins, 10, a.failed);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(ins, 11, a.skipped);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(ins, 12, a.errors);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(ins, 13, toString(a.status), -1, SQLITE_STATIC);
  // NaN binds as NULL (SQLite cannot store it) and reads back as NaN.
  if (rc == SQLITE_OK) rc = sqlite3_bind_double(ins, 14, a.value_median);
  if (rc == SQLITE_OK) rc = sqlite3_bind_double(ins, 15, a.value_min);
  if (rc == SQLITE_OK) rc = sqlite3_bind_double(ins, 16, a.value_max);
  if (rc == SQLITE_OK) {
    rc = sqlite3_bind_text64(ins, 17, a.unit.data(), a.unit.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  }
  return rc;
}

}  // namespace

// aggregateSweep's state while it streams a sweep's raw rows, ordered by pair: one group at a
// time is held, written when the next pair begins (a 1,024-host all-pairs sweep has 523,776
// groups of one row each: held all at once they were ~280 MB of the coordinator's peak).
struct SqliteStore::AggregateScan {
  std::tuple<std::string, std::string, std::string, std::string, uint64_t> key;
  bool open = false;     // `group` holds rows not written yet
  bool cleared = false;  // the sweep's earlier aggregates are deleted (before the first write)
  sqlite3_stmt* insert = nullptr;  // the writer's cached insert, once looked up
  AggregateGroup group;
  std::vector<bool> done;  // planned indexes with a result
  SweepTotals totals;
};

Status SqliteStore::aggregateSweep(const std::string& sweep_id, uint32_t plan_size) {
  if (sweep_id.empty()) {
    return invalidArgument("aggregateSweep: sweep id is empty", "pass a stored sweep's id");
  }
  MutexLock lock(writer_.mu);
  GDR_RETURN_IF_ERROR(walIndexWritable());
  GDR_RETURN_IF_ERROR(sweepMustExist(
      sweep_id, "aggregate a sweep that createSweep stored (ids are matched exactly)"));
  GDR_RETURN_IF_ERROR(begin());
  // Everything below runs in the transaction; any failure rolls it back whole.
  AggregateScan scan;
  scan.done.assign(plan_size, false);
  Status st = scanSweepRows(sweep_id, plan_size, scan);
  if (st.ok()) st = writeAggregates(sweep_id, scan, /*last=*/true);
  if (!st.ok()) {
    rollbackQuietly();
    return st.withContext("aggregating sweep " + sweep_id);
  }
  return commit();
}

Status SqliteStore::scanSweepRows(const std::string& sweep_id, uint32_t plan_size,
                                  AggregateScan& scan) {
  // Ordered by the group's key, so that each pair's rows come together (SQLite's sorter
  // spills to a temporary file past the cache: the memory stays bounded).
  GDR_ASSIGN_OR_RETURN(
      sqlite3_stmt * rows,
      statement(writer_, "aggregate_rows",
                "SELECT initiator_worker, target_worker, op, mode, message_size, started_ms, "
                "status, bw_valid, bw_avg_gbps, lat_valid, lat_median_us, plan_index FROM "
                "results WHERE run_id = ?1 ORDER BY initiator_worker, target_worker, op, mode, "
                "message_size"));
  StmtScope scope(rows);
  int rc = bindText(rows, "?1", sweep_id);
  if (rc != SQLITE_OK) return error(writer_, rc, "aggregate_rows (bind)");
  SweepTotals& t = scan.totals;
  while ((rc = sqlite3_step(rows)) == SQLITE_ROW) {
    const std::string op = columnText(rows, 2);
    const std::string mode = columnText(rows, 3);
    auto key = std::make_tuple(columnText(rows, 0), columnText(rows, 1), op, mode,
                               static_cast<uint64_t>(sqlite3_column_int64(rows, 4)));
    const bool fresh = !scan.open || key != scan.key;
    if (fresh) {
      GDR_RETURN_IF_ERROR(writeAggregates(sweep_id, scan, /*last=*/false));
      scan.key = std::move(key);
      scan.group = AggregateGroup{};
      scan.open = true;
    }
    PairAggregate& a = scan.group.a;
    TestStatus status = TestStatus::kError;
    if (!parseEnum(columnText(rows, 6), &status) || !parseEnum(op, &a.op) ||
        !parseEnum(mode, &a.mode)) {
      return Status(Code::kDataLoss,
                    "a results row of sweep '" + sweep_id + "' in " + path_ +
                        " holds an unknown op, mode or status",
                    "the row was written by another program or a newer gdrmesh");
    }
    const int64_t started = sqlite3_column_int64(rows, 5);
    if (fresh) {
      a.sweep_id = sweep_id;
      a.src = std::get<0>(scan.key);
      a.dst = std::get<1>(scan.key);
      a.message_size = std::get<4>(scan.key);
      a.started_ms = started;
      a.status = status;
      a.unit = a.mode == Mode::kBandwidth ? "Gb/s" : "us";
    }
    addToAggregate(a, status, started);
    const bool bw = a.mode == Mode::kBandwidth;
    const int valid_col = bw ? 7 : 9;
    const int value_col = bw ? 8 : 10;
    if (sqlite3_column_int64(rows, valid_col) != 0 &&
        sqlite3_column_type(rows, value_col) != SQLITE_NULL) {
      scan.group.values.push_back(sqlite3_column_double(rows, value_col));
    }
    const int64_t plan_index = sqlite3_column_int64(rows, 11);
    if (plan_index >= 0 && plan_index < int64_t{plan_size} &&
        !scan.done[static_cast<size_t>(plan_index)]) {
      scan.done[static_cast<size_t>(plan_index)] = true;
      ++t.tests_done;
    }
    if (status == TestStatus::kFailed || status == TestStatus::kError) ++t.tests_failed;
    if (status == TestStatus::kSkipped) ++t.tests_skipped;
    ++t.results;
  }
  if (rc != SQLITE_DONE) return error(writer_, rc, "aggregate_rows");
  return Status();
}

Status SqliteStore::writeAggregates(const std::string& sweep_id, AggregateScan& scan, bool last) {
  if (last && scan.totals.results == 0) {
    // Nothing raw (left): keep what was computed before, else record zero totals so that
    // the sweep counts as aggregated.
    GDR_ASSIGN_OR_RETURN(sqlite3_stmt * zero,
                         statement(writer_, "aggregate_zero_totals",
                                   "INSERT OR IGNORE INTO sweep_totals (sweep_id, tests_done, "
                                   "tests_failed, tests_skipped, results) VALUES (?1, 0, 0, 0, "
                                   "0)"));
    StmtScope scope(zero);
    int rc = bindText(zero, "?1", sweep_id);
    if (rc == SQLITE_OK) rc = sqlite3_step(zero);
    if (rc != SQLITE_DONE) return error(writer_, rc, "aggregate_zero_totals");
    return Status();
  }
  if (!scan.cleared && scan.open) {
    GDR_ASSIGN_OR_RETURN(
        sqlite3_stmt * del,
        statement(writer_, "aggregate_delete", "DELETE FROM sweep_aggregates WHERE sweep_id = ?1"));
    StmtScope scope(del);
    int rc = bindText(del, "?1", sweep_id);
    if (rc == SQLITE_OK) rc = sqlite3_step(del);
    if (rc != SQLITE_DONE) return error(writer_, rc, "aggregate_delete");
    scan.cleared = true;
  }
  if (scan.open) {
    if (scan.insert == nullptr) {  // looked up once a sweep, not once a group
      GDR_ASSIGN_OR_RETURN(
          scan.insert, statement(writer_, "aggregate_insert",
                                 std::string("INSERT INTO sweep_aggregates (") + kAggregateColumns +
                                     ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
                                     "?12, ?13, ?14, ?15, ?16, ?17)"));
    }
    sqlite3_stmt* ins = scan.insert;
    AggregateGroup& g = scan.group;
    PairAggregate& a = g.a;
    if (!g.values.empty()) {
      a.value_min = *std::min_element(g.values.begin(), g.values.end());
      a.value_max = *std::max_element(g.values.begin(), g.values.end());
    }
    a.value_median = aggregateMedian(std::move(g.values));
    g.values.clear();
    scan.open = false;
    StmtScope scope(ins);
    int rc = bindAggregate(ins, a);
    if (rc != SQLITE_OK) return error(writer_, rc, "aggregate_insert (bind)");
    rc = sqlite3_step(ins);
    if (rc != SQLITE_DONE) return error(writer_, rc, "aggregate_insert");
  }
  if (!last) return Status();
  GDR_ASSIGN_OR_RETURN(
      sqlite3_stmt * totals,
      statement(writer_, "aggregate_totals",
                "INSERT OR REPLACE INTO sweep_totals (sweep_id, tests_done, tests_failed, "
                "tests_skipped, results) VALUES (?1, ?2, ?3, ?4, ?5)"));
  const SweepTotals& t = scan.totals;
  StmtScope scope(totals);
  int rc = bindText(totals, "?1", sweep_id);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(totals, 2, t.tests_done);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(totals, 3, t.tests_failed);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(totals, 4, t.tests_skipped);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(totals, 5, static_cast<int64_t>(t.results));
  if (rc == SQLITE_OK) rc = sqlite3_step(totals);
  if (rc != SQLITE_DONE) return error(writer_, rc, "aggregate_totals");
  return Status();
}

Result<SweepTotals> SqliteStore::sweepTotals(const std::string& sweep_id, uint32_t plan_size) {
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * kept,
                       statement(c, "sweep_totals_kept",
                                 "SELECT tests_done, tests_failed, tests_skipped, results FROM "
                                 "sweep_totals WHERE sweep_id = ?1"));
  SweepTotals t;
  {
    StmtScope scope(kept);
    int rc = sqlite3_bind_text64(kept, 1, sweep_id.data(), sweep_id.size(), SQLITE_TRANSIENT,
                                 SQLITE_UTF8);
    if (rc != SQLITE_OK) return error(c, rc, "sweep_totals_kept (bind)");
    rc = sqlite3_step(kept);
    if (rc == SQLITE_ROW) {
      t.tests_done = static_cast<uint32_t>(sqlite3_column_int64(kept, 0));
      t.tests_failed = static_cast<uint32_t>(sqlite3_column_int64(kept, 1));
      t.tests_skipped = static_cast<uint32_t>(sqlite3_column_int64(kept, 2));
      t.results = static_cast<uint64_t>(sqlite3_column_int64(kept, 3));
      t.from_aggregates = true;
      return t;
    }
    if (rc != SQLITE_DONE) return error(c, rc, "sweep_totals_kept");
  }
  // Counted from results_run_plan_status alone (a covering index: no row is read).
  GDR_ASSIGN_OR_RETURN(
      sqlite3_stmt * s,
      statement(c, "sweep_totals_count",
                "SELECT count(DISTINCT CASE WHEN plan_index >= 0 AND plan_index < ?2 THEN "
                "plan_index END), total(status IN ('FAILED', 'ERROR')), "
                "total(status = 'SKIPPED'), count(*) FROM results WHERE run_id = ?1"));
  StmtScope scope(s);
  int rc =
      sqlite3_bind_text64(s, 1, sweep_id.data(), sweep_id.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 2, plan_size);
  if (rc != SQLITE_OK) return error(c, rc, "sweep_totals_count (bind)");
  rc = sqlite3_step(s);
  if (rc != SQLITE_ROW)
    return error(c, rc == SQLITE_DONE ? SQLITE_INTERNAL : rc, "sweep_totals_count");
  t.tests_done = static_cast<uint32_t>(sqlite3_column_int64(s, 0));
  t.tests_failed = static_cast<uint32_t>(sqlite3_column_double(s, 1));
  t.tests_skipped = static_cast<uint32_t>(sqlite3_column_double(s, 2));
  t.results = static_cast<uint64_t>(sqlite3_column_int64(s, 3));
  return t;
}

Result<std::vector<SweepRecord>> SqliteStore::sweepsWithoutAggregates(int64_t created_before_ms,
                                                                      uint32_t limit) {
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  GDR_ASSIGN_OR_RETURN(
      sqlite3_stmt * s,
      statement(c, "sweeps_without_aggregates",
                "SELECT " + selectSweepColumns() +
                    " FROM sweeps s WHERE created_ms < ?1 AND state NOT IN ('queued', "
                    "'running') AND NOT EXISTS (SELECT 1 FROM sweep_totals t WHERE t.sweep_id "
                    "= s.id) ORDER BY created_ms, rowid LIMIT ?2"));
  StmtScope scope(s);
  int rc = sqlite3_bind_int64(s, 1, created_before_ms);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 2, limit == 0 ? -1 : int64_t{limit});
  if (rc != SQLITE_OK) return error(c, rc, "sweeps_without_aggregates (bind)");
  std::vector<SweepRecord> out;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    GDR_ASSIGN_OR_RETURN(SweepRecord r, readSweepRow(s, path_));
    out.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) return error(c, rc, "sweeps_without_aggregates");
  return out;
}

Result<std::vector<PairAggregate>> SqliteStore::sweepAggregates(const std::string& sweep_id) {
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * s,
                       statement(c, "sweep_aggregates",
                                 std::string("SELECT ") + kAggregateColumns +
                                     " FROM sweep_aggregates WHERE sweep_id = ?1 ORDER BY "
                                     "src, dst, op, mode, message_size"));
  StmtScope scope(s);
  int rc =
      sqlite3_bind_text64(s, 1, sweep_id.data(), sweep_id.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK) return error(c, rc, "sweep_aggregates (bind)");
  std::vector<PairAggregate> out;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    GDR_ASSIGN_OR_RETURN(PairAggregate a, readAggregate(s, path_));
    out.push_back(std::move(a));
  }
  if (rc != SQLITE_DONE) return error(c, rc, "sweep_aggregates");
  return out;
}

Result<std::vector<PairAggregate>> SqliteStore::pairHistory(const std::string& src,
                                                            const std::string& dst,
                                                            int64_t before_ms, uint32_t limit) {
  if (src.empty() || dst.empty()) {
    return invalidArgument("pairHistory needs both workers (src '" + src + "', dst '" + dst + "')",
                           "pass the initiator and the target worker names");
  }
  ReadLease lease(*this);
  GDR_RETURN_IF_ERROR(lease.status());
  Conn& c = lease.conn();
  // Newest first straight from sweep_aggregates(src, dst, started_ms).
  GDR_ASSIGN_OR_RETURN(sqlite3_stmt * s,
                       statement(c, "pair_history",
                                 std::string("SELECT ") + kAggregateColumns +
                                     " FROM sweep_aggregates WHERE src = ?1 AND dst = ?2 AND "
                                     "started_ms < ?3 ORDER BY started_ms DESC LIMIT ?4"));
  StmtScope scope(s);
  int rc = sqlite3_bind_text64(s, 1, src.data(), src.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc == SQLITE_OK) {
    rc = sqlite3_bind_text64(s, 2, dst.data(), dst.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  }
  if (rc == SQLITE_OK) {
    rc = sqlite3_bind_int64(s, 3, before_ms > 0 ? before_ms : std::numeric_limits<int64_t>::max());
  }
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 4, limit == 0 ? -1 : int64_t{limit});
  if (rc != SQLITE_OK) return error(c, rc, "pair_history (bind)");
  std::vector<PairAggregate> out;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    GDR_ASSIGN_OR_RETURN(PairAggregate a, readAggregate(s, path_));
    out.push_back(std::move(a));
  }
  if (rc != SQLITE_DONE) return error(c, rc, "pair_history");
  return out;
}

// ---------------------------------------------------------------------------------------------
// Retention of raw rows (ResultRetention).

Result<uint64_t> SqliteStore::deleteResultsBefore(int64_t cutoff_ms, uint32_t max_rows) {
  if (max_rows == 0) {
    return invalidArgument("deleteResultsBefore: max_rows is 0",
                           "delete in batches of at least one row (e.g. 2000)");
  }
  MutexLock lock(writer_.mu);
  GDR_RETURN_IF_ERROR(walIndexWritable());
  // The oldest rows first, through results_started_ms; one statement is one short transaction.
  GDR_ASSIGN_OR_RETURN(
      sqlite3_stmt * s,
      statement(writer_, "delete_results_before",
                "DELETE FROM results WHERE id IN (SELECT id FROM results WHERE started_ms < ?1 "
                "ORDER BY started_ms LIMIT ?2)"));
  StmtScope scope(s);
  int rc = sqlite3_bind_int64(s, 1, cutoff_ms);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 2, max_rows);
  if (rc != SQLITE_OK) return error(writer_, rc, "delete_results_before (bind)");
  rc = sqlite3_step(s);
  if (rc != SQLITE_DONE) return error(writer_, rc, "delete_results_before");
  return static_cast<uint64_t>(sqlite3_changes64(writer_.db.get()));
}

}  // namespace gdrmesh
