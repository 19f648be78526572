// The coordinator's status page: a small HTTP server with the single-page view (web/, embedded
// in the binary) and its read-only JSON API. It knows nothing of gRPC: the coordinator hands it
// a StatusSource.
//
//   GET /                 the page (also /index.html, /style.css and its ES modules /app.js,
//                         /dom.js, /fabric.js: web/CMakeLists.txt lists them)
//   GET /api/workers      JSON array, the shape of `gdrmesh workers -o json`
//   GET /api/results      JSON array of toJson(TestResult), newest first;
//                         ?limit=1..10000 (50) &worker=NAME &status=passed|failed|skipped|error
//                         &run_id=ID
//   GET /api/results/ID   one result, whole (toJson(TestResult)); 404 when no result has that id
//   GET /api/history      one pair's results, newest first: ?src=W&dst=W (required)
//                         &since=30d|DATE &until=... &size=64KiB &op=write &mode=bw|lat
//                         &direction=both|one &run_id=ID &limit=1..10000 (50)
//   GET /api/compare      sweep b against sweep a: ?a=ID&b=ID (required) &tolerance=5%
//                         {a, b, tolerance_pct, summary{worse, better, unchanged, new,
//                         missing}, rows[] worst regression first}
//   GET /api/summary      counts over the latest results (?limit=1..10000, 500): by status, by
//                         worker, by data path (GPUDirect, RDMA host memory, staged, emulated)
//   GET /api/sweeps       JSON array of sweep progress, newest first; ?limit=1..10000 (20)
//   GET /api/sweeps/ID    one sweep: progress, a page of verdicts, suspects, notes and a compact
//                         matrix (hosts x hosts; see docs/api.md); ?verdicts=all|failed|none
//                         (all) &offset=N (0) &limit=1..10000 (1000) of the verdicts kept
//   GET /api/sweeps/latest  the newest sweep that has ended (else the newest); 404 when none
//   GET /api/sweeps/ID/fabric  (or latest/fabric) the sweep's links' verdicts worst first, a
//                         summary per switch, its link suspects, and the hosts under each switch
//                         (InfiniBand) or each host switch port (RoCE, LLDP: estimates);
//                         ?switch=NAME: only that switch (sweepFabricJson)
//   GET /metrics          Prometheus text format: workers up, the latest ended sweep's counts,
//                         per-link bandwidth and verdict, suspect scores
//   GET /healthz          "ok"
// A bad or unknown query parameter answers 400 with {"error", "parameter", "fix"}; a failing
// source answers 503 (unavailable), 404 (unknown sweep) or 500 with the same shape.
//
// Slow clients: every request is read whole by a front gate (request_gate.h) under a total
// deadline before a worker sees it; the gate answers 408, 413, 429, 431 and 503 itself. One
// request per connection (answers carry "Connection: close").
//
// Thread contract: start() and stop() from one owner thread; the server calls the StatusSource
// from its own worker threads, concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/inventory.h"
#include "common/result.h"
#include "common/status.h"
#include "coordinator/http/api_query.h"
#include "coordinator/http/request_gate.h"
#include "coordinator/orchestrator/fabric_hosts.h"
#include "coordinator/orchestrator/history.h"
#include "coordinator/orchestrator/sweep_manager.h"
#include "coordinator/orchestrator/sweep_types.h"
#include "coordinator/store/store.h"

namespace gdrmesh {

// One worker as the status page shows it.
// Same fields as `gdrmesh workers -o json` (common/inventory.h).
using WorkerSummary = WorkerStatus;

// Where the status page reads from. Implementations must be thread-safe.
class StatusSource {
 public:
  virtual ~StatusSource() = default;
  virtual std::vector<WorkerSummary> workers() = 0;
  // Newest first, as ResultStore::queryResults.
  virtual Result<std::vector<TestResult>> results(const ResultQuery& query) = 0;
  // Sweeps, newest first (SweepManager::list).
  virtual Result<std::vector<SweepProgress>> sweeps(uint32_t limit) = 0;
  // One sweep's report without its results (SweepManager::report(id, false)); kNotFound when
  // the id is unknown.
  virtual Result<SweepReportData> sweep(const std::string& id) = 0;
  // HistoryQueries: a pair's results (unknown workers: kNotFound), one result (kNotFound), two
  // sweeps compared (unknown ids: kNotFound).
  virtual Result<std::vector<TestResult>> history(const HistoryQuery& query) = 0;
  virtual Result<TestResult> result(const std::string& test_id) = 0;
  virtual Result<SweepComparison> compare(const std::string& a, const std::string& b,
                                          double tolerance_pct) = 0;
  // Now (unix ms): what `since=30d` counts back from.
  virtual int64_t unixMs() = 0;
  // The fabric sweep `id`'s host tables are drawn on (fabric_hosts.h); both null: none. The
  // coordinator answers its fabric of now for every sweep: the InfiniBand snapshot FabricSource
  // holds, or the LLDP snapshot it started with.
  virtual FabricOfSweep fabricOf(const std::string& id) = 0;
};

// The JSON forms served by the API (exposed for tests and other outputs).
nlohmann::json workersJson(const std::vector<WorkerSummary>& workers);
// Counts over `results` (the latest `limit` results): see /api/summary in docs.
nlohmann::json summaryJson(const std::vector<WorkerSummary>& workers,
                           const std::vector<TestResult>& results, uint32_t limit);

// A sweep's progress as the API serves it (native numbers, RFC 3339 times).
nlohmann::json sweepProgressJson(const SweepProgress& p);
// GET /api/sweeps/ID: progress, one page of verdicts (all, only FAIL, or none) with
// verdicts_page{offset, limit, total, next_offset}, verdict_counts, suspects, notes, matrix.
// (VerdictFilter and VerdictPage: coordinator/orchestrator/sweep_types.h; no limit unless
// `page` says.)
nlohmann::json sweepJson(const SweepReportData& report, VerdictFilter filter,
                         VerdictPage page = {});
// GET /api/sweeps/ID/fabric: the fabric view of a sweep on a discovered fabric (docs/api.md):
// {sweep, state, verdict, reason, counts{not_ok, not_covered, ok}, links[{link, verdict,
// severity, fails, a{name, guid, port}, b{...}, evidence}] worst first (then by name),
// nodes[{name, links, not_ok, not_covered, ok, worst}] (each end's switch or host) worst first,
// suspects[] of kind link, fabric (the host tables' snapshot or null), switch (the filter or
// null), switch_hosts{switches[], unplaced[]} or null, lldp{estimate, ports[], unplaced[]} or
// null}. `only_switch` (not ""): links, nodes and host rows of that switch only; counts and
// suspects stay the sweep's.
nlohmann::json sweepFabricJson(const SweepReportData& report, const FabricHostTables& hosts = {},
                               const std::string& only_switch = "");
// Whether a fabric view has any row to show (a `switch` filter that names nothing has none).
bool fabricViewShows(const nlohmann::json& view);
// The compact matrix of a sweep: {hosts[], cells[[src, dst, verdict, value, unit, reason]],
// best{unit: value}}, src and dst indexing hosts (WORKER, or WORKER/NIC when results name NICs).
nlohmann::json sweepMatrixJson(const std::vector<PairVerdict>& verdicts);
// GET /api/compare: {a, b, tolerance_pct, summary{...}, rows[{src, dst, op, mode,
// message_size_bytes, change, a, b, unit, change_pct, a_status, b_status, a_test_id, b_test_id,
// reason}]}; absent figures are null.
nlohmann::json comparisonJson(const SweepComparison& c);
// GET /metrics. `last` is the newest ended sweep, if any.
std::string metricsText(const std::vector<WorkerSummary>& workers,
                        const std::optional<SweepReportData>& last);

class HttpTokenGate;  // coordinator/http/http_auth.h

class StatusHttpServer {
 public:
  // `clock`: the coordinator's; every deadline of the page (a request's head and body, an
  // answer's writes) runs on it, and it must outlive the server.
  // `gate`: every request must carry its token (null: anyone who reaches the page reads it).
  // `limits`: the front gate's deadlines and bounds (request_gate.h; default: defaultLimits()).
  StatusHttpServer(StatusSource& source, Clock& clock,
                   std::shared_ptr<const HttpTokenGate> gate = nullptr,
                   std::optional<RequestGateLimits> limits = std::nullopt);
  ~StatusHttpServer();
  StatusHttpServer(const StatusHttpServer&) = delete;
  StatusHttpServer& operator=(const StatusHttpServer&) = delete;

  // 5 s for a request's head, 10 s for its body, 64 connections per source address and 512 in
  // all, one worker per core (8 to 16).
  static RequestGateLimits defaultLimits();

  // Listens on HOST:PORT ("127.0.0.1:8080", "[::1]:0"; port 0 picks a free port) and serves
  // from background threads: the front gate reads each request whole (request_gate.h), then
  // a worker answers it. Binds only the address given. Returns the bound port.
  Result<int> start(const std::string& host_port);
  // Stops serving and joins the threads. Idempotent; the destructor calls it.
  void stop();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gdrmesh
