// SqliteStore's schema: the tables' SQL and the append-only list of migrations (one function per
// step, frozen once released). Migration 10's tables are in sqlite_verdicts.cc.
#include <string>
#include <vector>

#include "coordinator/store/sqlite_columns.h"
#include "coordinator/store/sqlite_internal.h"
#include "coordinator/store/sqlite_store.h"

namespace gdrmesh {

// The store's private helpers: sqlite_internal.h (statements, the read lease) and
// sqlite_columns.h, store_columns.h (the column lists).
using namespace sqlite_detail;
using namespace store_detail;

namespace {

// ---------------------------------------------------------------------------------------------
// Migration 1: results and workers.
//
// Columns holding doubles are declared WITHOUT a type on purpose: a REAL (or NUMERIC) column
// makes SQLite store an integral double as an integer, which turns -0.0 into 0 and breaks the
// bit-exact round trip. Values are still stored as REAL (typeof() = 'real'), so SQL arithmetic
// and aggregates work as usual. NaN cannot be stored by SQLite: it becomes NULL, read back as
// a quiet NaN.
// uint64 fields are stored as the int64 with the same bits (exact; values >= 2^63, which no
// real counter reaches, read as negative in raw SQL).
const char* const kCreateResults = R"sql(
CREATE TABLE results (
  id INTEGER PRIMARY KEY,
  test_id TEXT NOT NULL UNIQUE,
  run_id TEXT NOT NULL,
  started_ms INTEGER NOT NULL,
  finished_ms INTEGER NOT NULL,
  op TEXT NOT NULL,
  mode TEXT NOT NULL,
  transport TEXT NOT NULL,
  gpudirect INTEGER NOT NULL,
  initiator_worker TEXT NOT NULL,
  initiator_host TEXT NOT NULL,
  initiator_nic TEXT NOT NULL,
  initiator_port INTEGER NOT NULL,
  initiator_gpu INTEGER NOT NULL,
  initiator_gpu_pci TEXT NOT NULL,
  initiator_memory TEXT NOT NULL,
  initiator_reg_path TEXT NOT NULL,
  initiator_gid_index INTEGER NOT NULL,
  initiator_topo_class TEXT NOT NULL,
  target_worker TEXT NOT NULL,
  target_host TEXT NOT NULL,
  target_nic TEXT NOT NULL,
  target_port INTEGER NOT NULL,
  target_gpu INTEGER NOT NULL,
  target_gpu_pci TEXT NOT NULL,
  target_memory TEXT NOT NULL,
  target_reg_path TEXT NOT NULL,
  target_gid_index INTEGER NOT NULL,
  target_topo_class TEXT NOT NULL,
  message_size INTEGER NOT NULL,
  iterations INTEGER NOT NULL,
  num_qps INTEGER NOT NULL,
  path_mtu INTEGER NOT NULL,
  meas_message_size INTEGER NOT NULL,
  meas_iterations INTEGER NOT NULL,
  meas_warmup_iterations INTEGER NOT NULL,
  meas_staging_seconds,
  bw_valid INTEGER NOT NULL,
  bw_bytes INTEGER NOT NULL,
  bw_messages INTEGER NOT NULL,
  bw_seconds,
  bw_avg_gbps,
  bw_peak_gbps,
  bw_msg_rate_mpps,
  lat_valid INTEGER NOT NULL,
  lat_samples INTEGER NOT NULL,
  lat_min_us,
  lat_max_us,
  lat_median_us,
  lat_mean_us,
  lat_stdev_us,
  lat_p99_us,
  lat_p999_us,
  ctr_valid INTEGER NOT NULL,
  ctr_xmit_bytes INTEGER NOT NULL,
  ctr_rcv_bytes INTEGER NOT NULL,
  ctr_xmit_packets INTEGER NOT NULL,
  ctr_rcv_packets INTEGER NOT NULL,
  ctr_errors INTEGER NOT NULL,
  integrity_checked INTEGER NOT NULL,
  integrity_bytes_checked INTEGER NOT NULL,
  integrity_wrong_bytes INTEGER NOT NULL,
  integrity_first_wrong_offset INTEGER NOT NULL,
  integrity_where TEXT NOT NULL,
  status TEXT NOT NULL,
  reason TEXT NOT NULL
))sql";

const char* const kCreateWorkers = R"sql(
CREATE TABLE workers (
  name TEXT PRIMARY KEY,
  hostname TEXT NOT NULL,
  inventory_json TEXT NOT NULL,
  first_seen_ms INTEGER NOT NULL,
  last_seen_ms INTEGER NOT NULL
))sql";

// ---------------------------------------------------------------------------------------------
// Migration 2: sweeps, their progress markers, schedule history; results.plan_index; indexes
// that hand rows to every query in its ORDER BY (newest first), so nothing is sorted.
const char* const kCreateSweeps = R"sql(
CREATE TABLE sweeps (
  id TEXT PRIMARY KEY,
  state TEXT NOT NULL,
  pattern TEXT NOT NULL,
  name TEXT NOT NULL,
  spec_json TEXT NOT NULL,
  plan_json TEXT NOT NULL,
  report_json TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  started_ms INTEGER NOT NULL,
  finished_ms INTEGER NOT NULL,
  tests_total INTEGER NOT NULL,
  reason TEXT NOT NULL,
  verdict TEXT NOT NULL
))sql";

// One row per started planned test; a re-run of the same plan index replaces it.
const char* const kCreateSweepTestStarts = R"sql(
CREATE TABLE sweep_test_starts (
  sweep_id TEXT NOT NULL REFERENCES sweeps (id) ON DELETE CASCADE,
  plan_index INTEGER NOT NULL,
  test_id TEXT NOT NULL,
  started_ms INTEGER NOT NULL,
  PRIMARY KEY (sweep_id, plan_index)
))sql";

// One row per single pair test in flight (RunTest); removed once its result is stored. What a
// restart needs to record the test as interrupted.
const char* const kCreateTestStarts = R"sql(
CREATE TABLE test_starts (
  test_id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL,
  started_ms INTEGER NOT NULL,
  op TEXT NOT NULL,
  mode TEXT NOT NULL,
  transport TEXT NOT NULL,
  message_size INTEGER NOT NULL,
  iterations INTEGER NOT NULL,
  num_qps INTEGER NOT NULL,
  initiator_worker TEXT NOT NULL,
  initiator_host TEXT NOT NULL,
  target_worker TEXT NOT NULL,
  target_host TEXT NOT NULL
))sql";

// Append-only history of schedule firings.
const char* const kCreateScheduleRuns = R"sql(
CREATE TABLE schedule_runs (
  id INTEGER PRIMARY KEY,
  schedule TEXT NOT NULL,
  due_ms INTEGER NOT NULL,
  state TEXT NOT NULL,
  sweep_id TEXT NOT NULL,
  recorded_ms INTEGER NOT NULL,
  detail TEXT NOT NULL
))sql";

// ---------------------------------------------------------------------------------------------
// Migration 3: per-sweep aggregates, kept when retention deletes raw rows. One row per
// (sweep, initiator worker, target worker, op, mode, size); see PairAggregate. value_* hold
// doubles and are declared without a type (as in results).
const char* const kCreateSweepAggregates = R"sql(
CREATE TABLE sweep_aggregates (
  sweep_id TEXT NOT NULL REFERENCES sweeps (id) ON DELETE CASCADE,
  src TEXT NOT NULL,
  dst TEXT NOT NULL,
  op TEXT NOT NULL,
  mode TEXT NOT NULL,
  message_size INTEGER NOT NULL,
  started_ms INTEGER NOT NULL,
  tests INTEGER NOT NULL,
  passed INTEGER NOT NULL,
  failed INTEGER NOT NULL,
  skipped INTEGER NOT NULL,
  errors INTEGER NOT NULL,
  status TEXT NOT NULL,
  value_median,
  value_min,
  value_max,
  unit TEXT NOT NULL,
  PRIMARY KEY (sweep_id, src, dst, op, mode, message_size)
) WITHOUT ROWID)sql";

// One row per aggregated sweep: its counts as SweepProgress shows them.
const char* const kCreateSweepTotals = R"sql(
CREATE TABLE sweep_totals (
  sweep_id TEXT PRIMARY KEY REFERENCES sweeps (id) ON DELETE CASCADE,
  tests_done INTEGER NOT NULL,
  tests_failed INTEGER NOT NULL,
  tests_skipped INTEGER NOT NULL,
  results INTEGER NOT NULL
) WITHOUT ROWID)sql";

// ---------------------------------------------------------------------------------------------
// Migration 6: a judged sweep's report (SweepRecord::report_json), one row per sweep that has
// one; read only by getSweep. `revision` goes up with every write (SweepRecord::report_revision),
// and sits before the report so that reading it never walks the report's overflow pages.
const char* const kCreateSweepReports = R"sql(
CREATE TABLE sweep_reports (
  sweep_id TEXT PRIMARY KEY REFERENCES sweeps (id) ON DELETE CASCADE,
  revision INTEGER NOT NULL,
  report_json TEXT NOT NULL
))sql";

// ---------------------------------------------------------------------------------------------
// Migration 9: actions on nodes (ActionRecord), append-only.
const char* const kCreateNodeActions = R"sql(
CREATE TABLE node_actions (
  id INTEGER PRIMARY KEY,
  recorded_ms INTEGER NOT NULL,
  sweep_id TEXT NOT NULL,
  node TEXT NOT NULL,
  action TEXT NOT NULL,
  outcome TEXT NOT NULL,
  actuator TEXT NOT NULL,
  reason TEXT NOT NULL,
  detail TEXT NOT NULL
))sql";

// ---------------------------------------------------------------------------------------------
// Migration 13: the fabric's history (FabricSnapshotRecord, FabricFindingRecord). The snapshot
// document sits last in its row, so that listing the history never walks its overflow pages.
const char* const kCreateFabricSnapshots = R"sql(
CREATE TABLE fabric_snapshots (
  id INTEGER PRIMARY KEY,
  taken_ms INTEGER NOT NULL,
  worker TEXT NOT NULL,
  source TEXT NOT NULL,
  outcome TEXT NOT NULL,
  detail TEXT NOT NULL,
  switches INTEGER NOT NULL,
  hosts INTEGER NOT NULL,
  links INTEGER NOT NULL,
  snapshot_json TEXT NOT NULL
))sql";
const char* const kCreateFabricFindings = R"sql(
CREATE TABLE fabric_findings (
  snapshot_id INTEGER NOT NULL REFERENCES fabric_snapshots (id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  kind TEXT NOT NULL,
  switch_name TEXT NOT NULL,
  port INTEGER NOT NULL,
  message TEXT NOT NULL,
  PRIMARY KEY (snapshot_id, seq)
) WITHOUT ROWID)sql";

SqliteMigration migration1() {
  return {1,
          "results and workers",
          {
              "PRAGMA application_id = 1195658579",  // kApplicationId, "GDMS"
              kCreateResults,
              "CREATE INDEX results_started_ms ON results (started_ms)",
              "CREATE INDEX results_run_id ON results (run_id)",
              "CREATE INDEX results_status ON results (status)",
              "CREATE INDEX results_initiator_worker ON results (initiator_worker)",
              "CREATE INDEX results_target_worker ON results (target_worker)",
              kCreateWorkers,
          }};
}

SqliteMigration migration2() {
  return {2,
          "sweeps, schedule runs, results.plan_index, ordered indexes",
          {
              "ALTER TABLE results ADD COLUMN plan_index INTEGER NOT NULL DEFAULT -1",
              // Single-column indexes replaced by (filter, started_ms): rows come out in the order
              // queryResults lists them (the row id is the implicit last key of every index).
              "DROP INDEX results_run_id",
              "DROP INDEX results_status",
              "DROP INDEX results_initiator_worker",
              "DROP INDEX results_target_worker",
              "CREATE INDEX results_run_plan ON results (run_id, plan_index)",
              "CREATE INDEX results_run_started ON results (run_id, started_ms)",
              "CREATE INDEX results_status_started ON results (status, started_ms)",
              "CREATE INDEX results_initiator_started ON results (initiator_worker, started_ms)",
              "CREATE INDEX results_target_started ON results (target_worker, started_ms)",
              kCreateSweeps,
              "CREATE INDEX sweeps_created_ms ON sweeps (created_ms)",
              "CREATE INDEX sweeps_state_created_ms ON sweeps (state, created_ms)",
              kCreateSweepTestStarts,
              kCreateScheduleRuns,
              "CREATE INDEX schedule_runs_schedule_due ON schedule_runs (schedule, due_ms)",
          }};
}

SqliteMigration migration3() {
  return {3,
          "per-sweep aggregates (kept by retention), pair and covering run indexes",
          {
              // Pair history (SRC -> DST, newest first) straight from the index.
              // NOLINTNEXTLINE(bugprone-suspicious-missing-comma): one statement over two lines
              "CREATE INDEX results_pair_started ON results (initiator_worker, target_worker, "
              "started_ms)",
              // A sweep's counts (done, failed, skipped) from the index alone, without reading
              // the rows; serves everything results_run_plan served.
              "DROP INDEX results_run_plan",
              "CREATE INDEX results_run_plan_status ON results (run_id, plan_index, status)",
              kCreateSweepAggregates,
              "CREATE INDEX sweep_aggregates_pair ON sweep_aggregates (src, dst, started_ms)",
              kCreateSweepTotals,
          }};
}

SqliteMigration migration4() {
  return {4,
          "in-flight markers of single pair tests (interrupted by a restart: recorded as ERROR)",
          {
              kCreateTestStarts,
          }};
}

SqliteMigration migration5() {
  return {5,
          "gpudirect under the per-side rule",
          {
              // The stored claim follows isGpuDirectTest: every side on GPU memory used dmabuf or
              // peermem. Rows written under the old rule (either side) lose a claim that one
              // staged or host-registered GPU side contradicts; the new rule never adds a claim
              // the old one lacked. (Reads recompute the claim from the sides; this keeps the
              // column right for SQL readers.)
              "UPDATE results SET gpudirect = 0 WHERE gpudirect = 1 AND ("
              "(initiator_memory = 'cuda' AND initiator_reg_path NOT IN ('dmabuf', 'peermem')) OR "
              "(target_memory = 'cuda' AND target_reg_path NOT IN ('dmabuf', 'peermem')))",
          }};
}

SqliteMigration migration6() {
  return {6,
          "sweep reports in a table of their own",
          {
              // In the sweeps row, a report (3.3 MB for 13,824 verdicts) sat between the columns
              // a list reads, so listing 50 sweeps walked 50 reports' overflow pages.
              kCreateSweepReports,
              "INSERT INTO sweep_reports (sweep_id, revision, report_json) "
              "SELECT id, 1, report_json FROM sweeps WHERE report_json <> ''",
              "ALTER TABLE sweeps DROP COLUMN report_json",
          }};
}

SqliteMigration migration7() {
  return {7,
          "a sweep's verdict counts in its row; in-flight markers name their pair",
          {
              // `gdrmesh sweeps` showed a FAIL sweep with 0 failed: the failing verdicts were only
              // in the report, which a list does not read. Stored reports are counted once here.
              "ALTER TABLE sweeps ADD COLUMN verdicts_pass INTEGER NOT NULL DEFAULT 0",
              "ALTER TABLE sweeps ADD COLUMN verdicts_fail INTEGER NOT NULL DEFAULT 0",
              "ALTER TABLE sweeps ADD COLUMN verdicts_skip INTEGER NOT NULL DEFAULT 0",
              // NOLINTNEXTLINE(bugprone-suspicious-missing-comma): one statement over lines
              "UPDATE sweeps SET verdicts_pass = c.pass, verdicts_fail = c.fail, verdicts_skip = "
              "c.skip FROM (SELECT r.sweep_id AS id, "
              "total(json_extract(j.value, '$.verdict') = 'PASS') AS pass, "
              "total(json_extract(j.value, '$.verdict') = 'FAIL') AS fail, "
              "total(json_extract(j.value, '$.verdict') = 'SKIP') AS skip "
              "FROM sweep_reports r, json_each(CASE WHEN json_valid(r.report_json) THEN "
              "r.report_json ELSE '{}' END, '$.verdicts') j GROUP BY r.sweep_id) c "
              "WHERE sweeps.id = c.id",
              // A sweep's in-flight markers name their pair: a restart records the tests even
              // when the sweep cannot be planned again (SweepTestStart).
              "ALTER TABLE sweep_test_starts ADD COLUMN initiator_worker TEXT NOT NULL DEFAULT ''",
              "ALTER TABLE sweep_test_starts ADD COLUMN initiator_nic TEXT NOT NULL DEFAULT ''",
              "ALTER TABLE sweep_test_starts ADD COLUMN target_worker TEXT NOT NULL DEFAULT ''",
              "ALTER TABLE sweep_test_starts ADD COLUMN target_nic TEXT NOT NULL DEFAULT ''",
              "ALTER TABLE sweep_test_starts ADD COLUMN message_size INTEGER NOT NULL DEFAULT 0",
          }};
}

SqliteMigration migration8() {
  return {8,
          "where each side's test thread ran (EndpointRecord::cpu_binding)",
          {
              "ALTER TABLE results ADD COLUMN initiator_cpu_binding TEXT NOT NULL DEFAULT ''",
              "ALTER TABLE results ADD COLUMN target_cpu_binding TEXT NOT NULL DEFAULT ''",
          }};
}

SqliteMigration migration9() {
  return {9,
          "actions on nodes (drain, resume) that verdicts asked for",
          {
              kCreateNodeActions,
              "CREATE INDEX node_actions_node ON node_actions (node, id)",
              "CREATE INDEX node_actions_recorded_ms ON node_actions (recorded_ms)",
          }};
}

SqliteMigration migration10() {
  return {10,
          "a sweep's report as rows: verdicts, suspects, notes (sweep_reports converted)",
          {
              // A 1024-host report was one 133 MB JSON text, written and read whole: 12-17 s
              // after the sweep and 400-500 MiB of memory. Rows page, filter and count in SQL.
              kCreateSweepVerdicts,
              // By sweep and verdict: the failing verdicts' page (most verdicts pass, so the
              // index holds only the failing ones). By pair and by host, within a sweep.
              // NOLINTNEXTLINE(bugprone-suspicious-missing-comma): one statement over two lines
              "CREATE INDEX sweep_verdicts_fail ON sweep_verdicts (sweep_id, seq) "
              "WHERE verdict = 'FAIL'",
              "CREATE INDEX sweep_verdicts_src ON sweep_verdicts (sweep_id, src_host, dst_host)",
              "CREATE INDEX sweep_verdicts_dst ON sweep_verdicts (sweep_id, dst_host)",
              kCreateSweepSuspects,
              "CREATE INDEX sweep_suspects_name ON sweep_suspects (name)",
              kCreateSweepNotes,
              kCreateSweepReportSummary,
              kConvertReportVerdicts,
              kConvertReportSuspects,
              kConvertReportNotes,
              // Figures ("") are summed up from the verdict rows when first read.
              // NOLINTNEXTLINE(bugprone-suspicious-missing-comma): one statement over two lines
              "INSERT INTO sweep_report_summary (sweep_id, figures_json) "
              "SELECT sweep_id, '' FROM sweep_reports",
              "DROP TABLE sweep_reports",
          }};
}

SqliteMigration migration11() {
  return {11,
          "what the hooks last announced: the standing suspects (HookStateStore)",
          {
              "CREATE TABLE hook_suspects (suspect TEXT PRIMARY KEY) WITHOUT ROWID",
          }};
}

SqliteMigration migration12() {
  return {12,
          "pair tests' paths through the fabric, hop by hop (TestPathStore)",
          {
              "CREATE TABLE test_path_hops ("
              " test_id TEXT NOT NULL,"
              " sweep_id TEXT NOT NULL DEFAULT '',"
              " direction TEXT NOT NULL CHECK (direction IN ('forward', 'reverse')),"
              " hop INTEGER NOT NULL,"
              " switch_name TEXT NOT NULL,"
              " switch_guid TEXT NOT NULL,"
              " in_port INTEGER NOT NULL,"
              " out_port INTEGER NOT NULL,"
              " link TEXT NOT NULL,"
              " PRIMARY KEY (test_id, direction, hop)) WITHOUT ROWID",
              "CREATE INDEX test_path_hops_sweep ON test_path_hops (sweep_id, test_id)",
              "CREATE INDEX test_path_hops_link ON test_path_hops (link)",
          }};
}

SqliteMigration migration13() {
  return {13,
          "the fabric's history: discovered snapshots and their findings (FabricHistory)",
          {
              kCreateFabricSnapshots,
              "CREATE INDEX fabric_snapshots_taken_ms ON fabric_snapshots (taken_ms)",
              "CREATE INDEX fabric_snapshots_worker ON fabric_snapshots (worker, id)",
              kCreateFabricFindings,
          }};
}

SqliteMigration migration14() {
  return {14,
          "port counters around a sweep's rounds and its links' verdicts (LinkCounterStore)",
          {
              "CREATE TABLE link_counter_deltas ("
              " sweep_id TEXT NOT NULL,"
              " round INTEGER NOT NULL,"
              " switch_guid TEXT NOT NULL,"
              " port INTEGER NOT NULL,"
              " counter TEXT NOT NULL,"
              " switch_name TEXT NOT NULL,"
              " link TEXT NOT NULL,"
              " delta INTEGER NOT NULL,"
              " at_least INTEGER NOT NULL,"
              " seconds REAL NOT NULL,"
              " PRIMARY KEY (sweep_id, round, switch_guid, port, counter)) WITHOUT ROWID",
              "CREATE INDEX link_counter_deltas_link ON link_counter_deltas (link)",
              "CREATE TABLE link_verdicts ("
              " sweep_id TEXT NOT NULL,"
              " link TEXT NOT NULL,"
              " switch_name TEXT NOT NULL,"
              " switch_guid TEXT NOT NULL,"
              " port INTEGER NOT NULL,"
              " remote_name TEXT NOT NULL,"
              " remote_guid TEXT NOT NULL,"
              " remote_port INTEGER NOT NULL,"
              " verdict TEXT NOT NULL,"
              " evidence TEXT NOT NULL,"
              " PRIMARY KEY (sweep_id, link)) WITHOUT ROWID",
          }};
}

SqliteMigration migration15() {
  return {15,
          "the snapshot each stored path was traced through (a newer discovery replaces it)",
          {
              "ALTER TABLE test_path_hops ADD COLUMN fabric TEXT NOT NULL DEFAULT ''",
          }};
}

}  // namespace

const std::vector<SqliteMigration>& sqliteSchemaMigrations() {
  // Append new steps at the end; never edit a released one.
  static const std::vector<SqliteMigration> kMigrations = {
      migration1(),  migration2(),  migration3(),  migration4(),  migration5(),
      migration6(),  migration7(),  migration8(),  migration9(),  migration10(),
      migration11(), migration12(), migration13(), migration14(), migration15(),
  };
  return kMigrations;
}

int SqliteStore::latestSchemaVersion() {
  return sqliteSchemaMigrations().back().version;
}

}  // namespace gdrmesh
