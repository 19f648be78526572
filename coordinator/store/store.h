// The store, in domain terms: one interface per aggregate of what it keeps (results, workers,
// in-flight markers, retention, sweeps, sweep reports, schedule history, aggregates, actions),
// and composites that one implementation provides whole. The one production implementation is
// SQLite (sqlite_store.h); the contract suite (tests/unit/store) is written against these.
//
// Thread contract: all methods are safe to call from any thread concurrently.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/status.h"

namespace gdrmesh {

struct ResultQuery {
  uint32_t limit = 50;  // newest first; 0 = no limit
  std::string worker;   // either endpoint on this worker; "" = any
  std::optional<TestStatus> status;
  std::string run_id;    // "" = any
  int64_t since_ms = 0;  // started_ms >= since_ms
  // Keyset paging: only rows after (before_started_ms, before_id) in the newest-first order,
  // i.e. the next page after a page whose last row had these; before_id 0 = from the newest.
  int64_t before_started_ms = 0;
  int64_t before_id = 0;
  // One sweep's rows in plan order instead (run_id required; worker, status, since and
  // before_* do not apply): the rows after (after_plan_index, after_id) in (plan_index, id)
  // order, i.e. the next page after a page whose last row had these.
  bool plan_order = false;
  int64_t after_plan_index = std::numeric_limits<int64_t>::min();
  int64_t after_id = 0;
};

// The results of one pair of workers over time (ResultStore::queryHistory).
struct HistoryQuery {
  std::string src;              // worker name, required
  std::string dst;              // worker name, required (may equal src: loopback)
  bool both_directions = true;  // false: src -> dst only
  int64_t since_ms = 0;         // started_ms >= since_ms
  int64_t until_ms = std::numeric_limits<int64_t>::max();  // started_ms < until_ms
  uint64_t message_size = 0;                               // 0 = any
  std::optional<Op> op;
  std::optional<Mode> mode;
  std::string run_id;   // "" = any run; else only that run's (sweep's) results
  uint32_t limit = 50;  // newest first; 0 = no limit
};

struct WorkerRecord {
  std::string name;
  std::string hostname;
  std::string inventory_json;  // the inventory as registered, JSON (opaque to the store)
  int64_t first_seen_ms = 0;
  int64_t last_seen_ms = 0;
};

// A sweep as stored. The spec and the plan are JSON documents that the coordinator writes and
// reads (opaque to the store); the columns are what lists and filters use. Its report (verdicts,
// suspects, notes) is rows of its own (VerdictRecord, SweepReportSummary).
struct SweepRecord {
  std::string id;     // "s-20261123T020000-1a2b"
  std::string state;  // queued | running | finished | cancelled | interrupted | failed
  std::string pattern;
  std::string name;
  std::string spec_json;
  std::string plan_json;
  int64_t created_ms = 0;
  int64_t started_ms = 0;
  int64_t finished_ms = 0;
  uint32_t tests_total = 0;
  std::string reason;   // why failed/cancelled/interrupted
  std::string verdict;  // PASS | FAIL | "" before judged
  // The report's verdicts by kind (every verdict, retests included, as `sweep show` counts
  // them); 0 before judged. Kept in the row so that a list of sweeps needs no report.
  uint32_t verdicts_pass = 0, verdicts_fail = 0, verdicts_skip = 0;
};

// One verdict of a judged sweep (one pair at one message size, or a retest), a row of its report.
struct VerdictRecord {
  uint64_t seq = 0;  // its place in the report (plan order), from 0; unique within the sweep
  std::string test_id;
  std::string src;  // WORKER/NIC as tested ("h1/mlx5_0"; "h1" when no NIC)
  std::string dst;
  Op op = Op::kWrite;
  Mode mode = Mode::kBandwidth;
  uint64_t message_size = 0;
  std::string verdict;  // PASS | FAIL | SKIP
  std::vector<std::string> reasons;
  double value = 0;  // the judged figure; a value that is not finite reads back as 0
  std::string unit;  // "Gb/s" or "us"
  std::string topo_class;
  bool retest = false;
};

// A localisation suspect of a judged sweep, ranked (rank 0: most likely at fault).
struct SuspectRecord {
  std::string kind;  // host | nic | link | threshold
  std::string name;
  double score = 0;
  std::vector<std::string> evidence;
};

// What a judged sweep's report holds besides its verdicts. Stored last: a sweep has a report
// once this is stored (SweepStore::sweepReportSummary).
struct SweepReportSummary {
  std::vector<SuspectRecord> suspects;  // in rank order
  std::vector<std::string> notes;
  // The figures over every verdict, a JSON document of the coordinator's (opaque to the store;
  // a few lines per (op, mode, size)); "" = not computed (reports converted by migration 10).
  std::string figures_json;
};

// Which verdicts of one sweep (SweepStore::sweepVerdicts, countSweepVerdicts), in report order.
struct VerdictQuery {
  std::string sweep_id;  // required
  std::string verdict;   // PASS | FAIL | SKIP; "" = any
  // Hosts (the WORKER of WORKER/NIC): `host` on either side; `src_host` and `dst_host` one
  // pair (in this direction; either may be "" = any). "" = any.
  std::string host, src_host, dst_host;
  uint64_t offset = 0;  // rows the filter keeps to skip, in report order
  uint32_t limit = 0;   // 0 = no limit
};

// A planned test of a sweep that has started but has no stored result yet. After a
// coordinator restart these are the tests that were in flight.
struct SweepTestStart {
  int plan_index = 0;
  std::string test_id;
  int64_t started_ms = 0;
  // The planned pair, so that a restart records the test even when the sweep cannot be planned
  // again (its workers gone, simulated ones not yet back); "" in markers from before it.
  std::string initiator_worker, initiator_nic, target_worker, target_nic;
  uint64_t message_size = 0;
};

// One firing (or non-firing) of a schedule.
struct ScheduleRun {
  std::string schedule;  // schedule name
  int64_t due_ms = 0;    // when it was due (unix ms)
  std::string state;     // started | missed | skipped-overlap
  std::string sweep_id;  // for started
  int64_t recorded_ms = 0;
  std::string detail;
};

// One action on a node that a sweep's verdict asked for (coordinator/actions): a drain (Slurm) or
// taint (Kubernetes) of a suspect, or a resume/untaint of a node gdrmesh acted on once it
// passes. Every decision is a row, whatever came of it, so the operator can audit them.
struct ActionRecord {
  int64_t id = 0;  // read only: assigned when recorded, in recording order
  int64_t recorded_ms = 0;
  std::string sweep_id;
  std::string node;
  std::string action;    // drain | resume
  std::string outcome;   // taken | dry-run | refused | failed | skipped
  std::string actuator;  // slurm | kubernetes | ...
  std::string reason;    // the reason written on the node ("gdrmesh: ... (sweep ID)")
  std::string detail;    // what ran, what would have run, why it was refused or failed
};

struct ActionQuery {
  uint32_t limit = 50;   // newest first; 0 = no limit
  std::string node;      // "" = any
  std::string sweep_id;  // "" = any
  int64_t since_ms = 0;  // recorded_ms >= since_ms
};

// What a finished sweep leaves behind when its raw result rows are gone (retention): per
// (initiator worker, target worker, op, mode, message size), the count of tests by status and
// the median / min / max of the figure that judges it (bw.avg_gbps for bandwidth,
// lat.median_us for latency).
struct PairAggregate {
  std::string sweep_id;
  std::string src;  // initiator worker
  std::string dst;  // target worker
  Op op = Op::kWrite;
  Mode mode = Mode::kBandwidth;
  uint64_t message_size = 0;
  int64_t started_ms = 0;  // the earliest test of the group
  uint32_t tests = 0, passed = 0, failed = 0, skipped = 0, errors = 0;
  // The worst status of the group: FAILED, then ERROR, then SKIPPED, then PASSED.
  TestStatus status = TestStatus::kPassed;
  // Over the tests that have the figure; NaN when none has (every test skipped, ...).
  double value_median = 0, value_min = 0, value_max = 0;
  std::string unit;  // "Gb/s" or "us"
};

// A sweep's test counts, as SweepProgress shows them (done: distinct planned tests with a
// result; failed: FAILED or ERROR rows; skipped: SKIPPED rows).
struct SweepTotals {
  uint32_t tests_done = 0, tests_failed = 0, tests_skipped = 0;
  uint64_t results = 0;          // result rows, retests included
  bool from_aggregates = false;  // read from the kept totals, not counted from raw rows
};

// One hop of a pair test's path through the InfiniBand fabric (table test_path_hops), computed
// from the switches' LFTs (common/fabric/fabric.h tracePath) when the coordinator has a fabric
// snapshot (`--fabric`). A test has two paths: "forward" (initiator -> target) and "reverse".
// `link` keys the directed link the hop leaves by: "SWITCHGUID:OUTPORT" ("0x...:12"), the key
// that per-round link verdicts and counter deltas will share.
struct PathHopRecord {
  std::string test_id;
  std::string sweep_id;   // "" for a test outside a sweep
  std::string direction;  // forward | reverse
  int hop = 0;            // 0, 1, ... in the order the packet crosses them
  std::string switch_name;
  uint64_t switch_guid = 0;
  int in_port = 0;
  int out_port = 0;
  // The snapshot whose LFTs the path was traced through (SweepFabric::source(): the file the
  // coordinator started with, or "@ID" of a stored snapshot that replaced it; migration 15).
  std::string fabric;
  // "0x0000000000001001:5": the switch's GUID (guidHex) and its out port.
  std::string link() const;
};
// One port's counter over one round of a sweep on a discovered fabric (LinkCounterStore):
// read by the fabric reader before and after the round (docs/fabric.md, "Counters").
struct LinkCounterRecord {
  std::string sweep_id;
  int round = 0;
  std::string switch_name;
  uint64_t switch_guid = 0;
  int port = 0;
  std::string link;     // the cable, both ends: "leaf07[12] <-> spine02[7]"
  std::string counter;  // IBA name: "SymbolErrorCounter"
  uint64_t delta = 0;
  bool at_least = false;  // the counter saturated or was reset: a lower bound (">= N")
  double seconds = 0;     // the round's window between the two reads
};
// A link's verdict in a sweep: ok, errors (a counter over its threshold), slow_pairs (the
// sweep's slow or failed pairs share it), or "errors,slow_pairs".
struct LinkVerdictRecord {
  std::string sweep_id;
  std::string link;  // "leaf07[12] <-> spine02[7]"
  std::string switch_name;
  uint64_t switch_guid = 0;
  int port = 0;
  std::string remote_name;
  uint64_t remote_guid = 0;
  int remote_port = 0;
  std::string verdict;
  std::vector<std::string> evidence;
};
// What every LinkCounterStore refuses (link_counters_check.cc): an empty sweep id, link or
// counter, the same (round, switch, port, counter) twice, an empty verdict or the same link
// twice. Errors name the row and the fix.
Status validateLinkCounters(const std::vector<LinkCounterRecord>& rows);
Status validateLinkVerdicts(const std::string& sweep_id,
                            const std::vector<LinkVerdictRecord>& rows);

// What every TestPathStore refuses (path_hops.cc): an empty test_id, a direction other than
// forward or reverse, the same (test, direction, hop) twice. Errors name the test and the fix.
Status validatePathHops(const std::vector<PathHopRecord>& hops);

// The store's interfaces, one per aggregate of what it keeps. A caller takes the narrowest one it
// needs (Retention: ResultRetention and SweepAggregates; the scheduler's log: ScheduleHistory);
// ResultStore, SweepStore and Store are the composites that one implementation provides whole.
// Every method of every interface is in the contract suite (tests/unit/store/
// store_contract_test.h), run against each implementation.

// Finished results (table results): written once, read by queries.
class ResultRecords {
 public:
  virtual ~ResultRecords() = default;
  // Inserts a finished result; returns its row id. A full disk or I/O error is a Status
  // (kResourceExhausted for SQLITE_FULL) and nothing half-written stays behind.
  virtual Result<int64_t> insertResult(const TestResult& result) = 0;
  // Inserts many results in one transaction (all or none); returns their row ids in order. A
  // refused row (empty or duplicate test_id, ...) fails the whole call and the Status names it.
  virtual Result<std::vector<int64_t>> insertResults(const std::vector<TestResult>& results) = 0;
  virtual Result<std::vector<TestResult>> queryResults(const ResultQuery& query) = 0;
  virtual Result<std::optional<TestResult>> getResult(const std::string& test_id) = 0;
  // How many results match `query` (its limit is ignored): the M of "N of M". Stops counting
  // past kResultCountCap (returns a value above it: "more than").
  virtual Result<uint64_t> countResults(const ResultQuery& query) = 0;
  // The pair's results, newest first (equal times: the later insertion first). A test from a
  // worker to itself (src == dst) is listed once. Empty src or dst is kInvalidArgument.
  virtual Result<std::vector<TestResult>> queryHistory(const HistoryQuery& query) = 0;
};

// Registered workers (table workers).
class WorkerRecords {
 public:
  virtual ~WorkerRecords() = default;
  // Remembers a worker's latest inventory (upsert by name).
  virtual Status upsertWorker(const WorkerRecord& worker) = 0;
  virtual Result<std::vector<WorkerRecord>> listWorkers() = 0;
  // Forgets a worker's stored registration (`gdrmesh worker remove`): listWorkers() no longer
  // returns it. Its results are kept. Returns whether a row was removed (an unknown name is
  // no error: false). An empty name is kInvalidArgument.
  virtual Result<bool> removeWorker(const std::string& name) = 0;
};

// In-flight markers of single pair tests (RunTest; table test_starts), so that a test the
// coordinator was running when it died is not lost without a trace.
class TestMarkers {
 public:
  virtual ~TestMarkers() = default;
  // `started` names the test: test_id, run_id, started_ms, op, mode, transport, message_size,
  // iterations, num_qps and each side's worker and host are kept; the rest is ignored. Marking
  // a test_id again replaces the marker.
  virtual Status markTestStarted(const TestResult& started) = 0;
  // Removes the marker (the result is stored, or the test never ran); unknown ids are fine.
  virtual Status clearTestStarted(const std::string& test_id) = 0;
  // Marked tests that have no result row (results.test_id), oldest first, as the skeletons
  // markTestStarted kept. After a restart these were in flight.
  virtual Result<std::vector<TestResult>> unfinishedTests() = 0;
};

// Retention of raw result rows (the sweeps' aggregates are kept: SweepAggregates).
class ResultRetention {
 public:
  virtual ~ResultRetention() = default;
  // Deletes at most `max_rows` result rows that started before `cutoff_ms`, oldest first, in
  // one short transaction; returns how many it deleted (fewer than max_rows: none older is
  // left). max_rows 0 is kInvalidArgument.
  virtual Result<uint64_t> deleteResultsBefore(int64_t cutoff_ms, uint32_t max_rows) = 0;
};

// Everything about results.
// (Results the store could not take are spooled by the ResultWriter: result_spool.h.)
class ResultStore : public ResultRecords,
                    public WorkerRecords,
                    public TestMarkers,
                    public ResultRetention {};

// Sweeps (table sweeps) and their in-flight markers (table sweep_test_starts).
class SweepRecords {
 public:
  virtual ~SweepRecords() = default;
  // A duplicate id is kInvalidArgument.
  virtual Status createSweep(const SweepRecord& sweep) = 0;
  // Overwrites every column but id and created_ms; an unknown id is kNotFound.
  virtual Status updateSweep(const SweepRecord& sweep) = 0;
  virtual Result<std::optional<SweepRecord>> getSweep(const std::string& id) = 0;
  // Newest first; `state` "" = any. limit 0 = no limit.
  virtual Result<std::vector<SweepRecord>> listSweeps(uint32_t limit, const std::string& state) = 0;
  // Marks planned test `start.plan_index` of the sweep as started (before it runs). Marking the
  // same plan index again (a re-run) replaces the marker; an unknown sweep is kNotFound.
  virtual Status markSweepTestStarted(const std::string& sweep_id, const SweepTestStart& start) = 0;
  // Started tests of the sweep that have no result row (results.run_id = sweep id with the
  // same plan_index). After a restart these were in flight.
  virtual Result<std::vector<SweepTestStart>> unfinishedSweepTests(const std::string& sweep_id) = 0;
};

// A sweep's report as rows (tables sweep_verdicts, sweep_suspects, sweep_notes and
// sweep_report_summary; the fabric's link verdicts and counter deltas come as tables of their
// own, keyed by sweep the same way, and go with the report). The sweep's end writes it in
// this order: clearSweepReport, appendSweepVerdicts in batches (each its own short
// transaction, so other writes go on between them), putSweepReportSummary last.
class SweepReportStore {
 public:
  virtual ~SweepReportStore() = default;
  // Removes every row of the sweep's report (none is fine). An unknown sweep is kNotFound.
  virtual Status clearSweepReport(const std::string& sweep_id) = 0;
  // Adds verdicts in one transaction (all or none). A seq the sweep has already is
  // kInvalidArgument; an unknown sweep is kNotFound.
  virtual Status appendSweepVerdicts(const std::string& sweep_id,
                                     const std::vector<VerdictRecord>& verdicts) = 0;
  // Stores (replaces) the suspects, notes and figures: from now on the sweep has a report.
  virtual Status putSweepReportSummary(const std::string& sweep_id,
                                       const SweepReportSummary& summary) = 0;
  // nullopt when the sweep has no stored report (or is unknown).
  virtual Result<std::optional<SweepReportSummary>> sweepReportSummary(
      const std::string& sweep_id) = 0;
  // The verdicts `query` keeps, in seq order, its page of them. Empty sweep_id is
  // kInvalidArgument; a verdict other than PASS, FAIL, SKIP or "" too.
  virtual Result<std::vector<VerdictRecord>> sweepVerdicts(const VerdictQuery& query) = 0;
  // How many verdicts `query` keeps on all pages (its offset and limit are ignored).
  virtual Result<uint64_t> countSweepVerdicts(const VerdictQuery& query) = 0;
};

// The history of schedule firings (table schedule_runs), append-only.
class ScheduleHistory {
 public:
  virtual ~ScheduleHistory() = default;
  // An empty schedule name is kInvalidArgument.
  virtual Status recordScheduleRun(const ScheduleRun& run) = 0;
  // Newest first by due_ms (equal due times: the later record first). limit 0 = no limit.
  virtual Result<std::vector<ScheduleRun>> scheduleRuns(const std::string& schedule,
                                                        uint32_t limit) = 0;
};

// Per-sweep aggregates and totals (tables sweep_aggregates, sweep_totals), kept forever (raw
// rows may be deleted by retention), and the pair history read from them.
class SweepAggregates {
 public:
  virtual ~SweepAggregates() = default;
  // (Re)computes the sweep's PairAggregates and SweepTotals from its raw result rows
  // (run_id = sweep id) in one transaction, replacing earlier ones. A sweep with no raw rows
  // left keeps what was computed before (zero totals if nothing was). `plan_size` bounds the
  // planned indexes counted as done (retests have larger indexes). An unknown sweep is kNotFound.
  virtual Status aggregateSweep(const std::string& sweep_id, uint32_t plan_size) = 0;
  // The kept totals when the sweep was aggregated, else counted from its raw rows.
  virtual Result<SweepTotals> sweepTotals(const std::string& sweep_id, uint32_t plan_size) = 0;
  // Ended sweeps (not queued or running) created before `created_before_ms` that have no
  // aggregates yet, oldest first, at most `limit` (0 = no limit).
  virtual Result<std::vector<SweepRecord>> sweepsWithoutAggregates(int64_t created_before_ms,
                                                                   uint32_t limit) = 0;
  // The aggregates of one sweep, ordered by (src, dst, op, mode, message_size).
  virtual Result<std::vector<PairAggregate>> sweepAggregates(const std::string& sweep_id) = 0;
  // The history of one (src -> dst) pair over every aggregated sweep, newest first; keyset
  // paging: only groups that started before `before_ms` (0 = no bound). limit 0 = no limit.
  // Empty src or dst is kInvalidArgument.
  virtual Result<std::vector<PairAggregate>> pairHistory(const std::string& src,
                                                         const std::string& dst, int64_t before_ms,
                                                         uint32_t limit) = 0;
};

// Everything about sweeps: records and markers, reports, schedule history, aggregates.
class SweepStore : public SweepRecords,
                   public SweepReportStore,
                   public ScheduleHistory,
                   public SweepAggregates {};

// Actions taken (or not) on nodes (table node_actions), append-only.
class ActionStore {
 public:
  virtual ~ActionStore() = default;
  // Appends the record (its id is ignored); returns the id it got. Empty node, action or
  // outcome is kInvalidArgument.
  virtual Result<int64_t> recordAction(const ActionRecord& action) = 0;
  // Newest first (by id: recording order).
  virtual Result<std::vector<ActionRecord>> listActions(const ActionQuery& query) = 0;
};

// The paths of pair tests through the fabric (table test_path_hops; migration 12), hop by hop
// and both directions. A later step keys per-round link verdicts and counter deltas by the same
// directed-link key (PathHopRecord::link) in tables of their own.
class TestPathStore {
 public:
  virtual ~TestPathStore() = default;
  // Stores the hops in one transaction (all or none), replacing every hop stored before for the
  // test ids they name. An empty test_id, a direction other than forward or reverse, or the same
  // (test, direction, hop) twice is kInvalidArgument.
  virtual Status putTestPaths(const std::vector<PathHopRecord>& hops) = 0;
  // The test's hops, forward first, each direction in hop order; empty when none is stored.
  virtual Result<std::vector<PathHopRecord>> testPath(const std::string& test_id) = 0;
  // Every hop of the sweep's tests, ordered by (test id, direction, hop). Empty sweep_id is
  // kInvalidArgument.
  virtual Result<std::vector<PathHopRecord>> sweepPaths(const std::string& sweep_id) = 0;
};

// Port counters around a sweep's rounds, and its links' verdicts, as rows (migration 14,
// tables link_counter_deltas and link_verdicts).
class LinkCounterStore {
 public:
  virtual ~LinkCounterStore() = default;
  // Stores the rows in one transaction (all or none), replacing a row stored before for the same
  // (sweep, round, switch GUID, port, counter). Invalid rows (validateLinkCounters) are
  // kInvalidArgument.
  virtual Status putLinkCounters(const std::vector<LinkCounterRecord>& rows) = 0;
  // The sweep's rows ordered by (round, switch GUID, port, counter); empty sweep id is
  // kInvalidArgument.
  virtual Result<std::vector<LinkCounterRecord>> sweepLinkCounters(const std::string& sweep_id) = 0;
  // Replaces every link verdict of the sweep with `rows` (their sweep_id is `sweep_id`).
  virtual Status putLinkVerdicts(const std::string& sweep_id,
                                 const std::vector<LinkVerdictRecord>& rows) = 0;
  // The sweep's link verdicts ordered by link name.
  virtual Result<std::vector<LinkVerdictRecord>> sweepLinkVerdicts(const std::string& sweep_id) = 0;
};

// The whole store: every interface above, as one implementation (SqliteStore) provides it.
// What the hooks last announced (coordinator/actions/hooks.h): the suspects ("KIND NAME") of the
// previous finished sweep, with those carried over because a later sweep did not test them.
// Kept across restarts, so that a restarted coordinator neither announces every standing
// suspect again nor misses one that cleared.
class HookStateStore {
 public:
  virtual ~HookStateStore() = default;
  virtual Result<std::set<std::string>> hookSuspects() = 0;
  // Replaces the whole set, in one transaction.
  virtual Status setHookSuspects(const std::set<std::string>& keys) = 0;
};

// One InfiniBand fabric discovery (docs/fabric.md), asked of a worker through the coordinator
// (`gdrmesh fabric discover --worker NAME`): every discovery is a row, whatever came of it. A
// worker without InfiniBand or without the fabric module is a row too (outcome skipped, with
// the reason), so the history shows that it was asked.
struct FabricSnapshotRecord {
  int64_t id = 0;        // read only: assigned when recorded, in recording order
  int64_t taken_ms = 0;  // when the coordinator stored it (its clock)
  std::string worker;    // the worker that discovered it
  std::string source;    // the local port discovery started from ("mlx5_0/1"); "" when none
  std::string outcome;   // ok | skipped | failed
  std::string detail;    // why skipped or failed ("no InfiniBand device on h3: ...")
  uint32_t switches = 0, hosts = 0, links = 0;
  // The snapshot in the documented JSON of docs/fabric.md (opaque to the store); "" when the
  // discovery found nothing, and once retention dropped the document (the row stays).
  std::string snapshot_json;
};

// What the coordinator found in one stored discovery (a diff against the previous snapshot,
// links slower than their peers), naming the switch and port; rows of their own, kept with
// the snapshot's row.
struct FabricFindingRecord {
  std::string kind;         // link_gone, link_narrower, link_slower, below_peers, ...
  std::string switch_name;  // "" for a host-only node
  int port = 0;
  std::string message;
};

struct FabricSnapshotQuery {
  uint32_t limit = 20;     // newest first; 0 = no limit
  std::string worker;      // "" = any
  std::string outcome;     // "" = any
  int64_t before_id = 0;   // keyset paging: only ids below this; 0 = from the newest
  bool with_json = false;  // false: snapshot_json is left empty (lists need no document)
};

// The fabric's history (tables fabric_snapshots, fabric_findings; migration 13).
class FabricHistory {
 public:
  virtual ~FabricHistory() = default;
  // Appends the snapshot (its id is ignored) and its findings in one transaction; returns the
  // id it got. An empty worker or an outcome other than ok, skipped, failed is
  // kInvalidArgument; so is an ok outcome without a snapshot document.
  virtual Result<int64_t> recordFabricSnapshot(
      const FabricSnapshotRecord& snapshot, const std::vector<FabricFindingRecord>& findings) = 0;
  // Newest first (by id).
  virtual Result<std::vector<FabricSnapshotRecord>> listFabricSnapshots(
      const FabricSnapshotQuery& query) = 0;
  // One snapshot with its document; nullopt when unknown.
  virtual Result<std::optional<FabricSnapshotRecord>> getFabricSnapshot(int64_t id) = 0;
  // A snapshot's findings in the order they were recorded (none for an unknown id).
  virtual Result<std::vector<FabricFindingRecord>> fabricFindings(int64_t snapshot_id) = 0;
  // Retention: drops the documents (snapshot_json) of at most `max_rows` snapshots taken before
  // `cutoff_ms`, oldest first, in one short transaction, keeping the newest ok snapshot's
  // whole (the next discovery is diffed against it). Rows, counts and findings stay. Returns
  // how many it dropped; max_rows 0 is kInvalidArgument.
  virtual Result<uint64_t> dropFabricSnapshotsBefore(int64_t cutoff_ms, uint32_t max_rows) = 0;
};

class Store : public ResultStore,
              public SweepStore,
              public ActionStore,
              public HookStateStore,
              public TestPathStore,
              public FabricHistory,
              public LinkCounterStore {};

}  // namespace gdrmesh
