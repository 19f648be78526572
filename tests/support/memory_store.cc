#include "tests/support/memory_store.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "coordinator/store/aggregate_rules.h"
#include "coordinator/store/store_columns.h"

namespace gdrmesh::testing {
namespace {

using store_detail::checkInsertable;

std::string rowContext(size_t i, size_t n, const TestResult& r) {
  return "result " + std::to_string(i + 1) + " of " + std::to_string(n) + " (test_id '" +
         r.test_id + "'; none of the " + std::to_string(n) + " was stored)";
}

// A figure SQLite cannot keep (not finite) reads back as 0 in a report row.
double finiteOrZero(double v) {
  return std::isfinite(v) ? v : 0;
}

std::string hostOf(const std::string& endpoint) {
  return endpoint.substr(0, endpoint.find('/'));
}

size_t limitOf(uint32_t limit) {
  return limit == 0 ? std::numeric_limits<size_t>::max() : limit;
}

Status checkVerdicts(const VerdictQuery& q) {
  if (q.sweep_id.empty()) {
    return invalidArgument("verdict query: sweep_id is empty", "name the sweep whose verdicts");
  }
  if (!q.verdict.empty() && q.verdict != "PASS" && q.verdict != "FAIL" && q.verdict != "SKIP") {
    return invalidArgument("verdict query: verdict '" + q.verdict + "' is not a verdict",
                           "pass PASS, FAIL, SKIP or \"\" for any");
  }
  return Status();
}

}  // namespace

Status MemoryStore::insertLocked(const std::vector<TestResult>& rows, std::vector<int64_t>* ids) {
  std::set<std::string> batch;
  for (size_t i = 0; i < rows.size(); ++i) {
    const TestResult& r = rows[i];
    Status s = checkInsertable(r);
    if (s.ok() && (result_ids_.count(r.test_id) > 0 || !batch.insert(r.test_id).second)) {
      s = invalidArgument("test_id '" + r.test_id + "' is already stored in memory",
                          "test ids are unique: give each test its own id");
    }
    if (!s.ok()) return rows.size() == 1 ? s : s.withContext(rowContext(i, rows.size(), r));
  }
  for (const TestResult& r : rows) {
    TestResult stored = r;
    stored.id = ++next_id_;
    result_ids_[r.test_id] = stored.id;
    results_[stored.id] = std::move(stored);
    ids->push_back(next_id_);
  }
  return Status();
}

Result<int64_t> MemoryStore::insertResult(const TestResult& result) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<int64_t> ids;
  GDR_RETURN_IF_ERROR(insertLocked({result}, &ids));
  return ids.front();
}

Result<std::vector<int64_t>> MemoryStore::insertResults(const std::vector<TestResult>& results) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<int64_t> ids;
  GDR_RETURN_IF_ERROR(insertLocked(results, &ids));
  return ids;
}

// The rows `query` keeps without paging, in no particular order.
std::vector<const TestResult*> MemoryStore::matchingLocked(const ResultQuery& q) const {
  std::vector<const TestResult*> out;
  for (const auto& [id, r] : results_) {
    if (r.started_ms < q.since_ms) continue;
    if (q.status && r.status != *q.status) continue;
    if (!q.run_id.empty() && r.run_id != q.run_id) continue;
    if (!q.worker.empty() && r.initiator.worker != q.worker && r.target.worker != q.worker) {
      continue;
    }
    out.push_back(&r);
  }
  return out;
}

Result<std::vector<TestResult>> MemoryStore::queryResults(const ResultQuery& query) {
  if (query.plan_order && query.run_id.empty()) {
    return invalidArgument("results in plan order: no run_id",
                           "give the sweep's id as run_id (plan order is one sweep's)");
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<const TestResult*> rows;
  if (query.plan_order) {
    for (const auto& [id, r] : results_) {
      if (r.run_id != query.run_id) continue;
      if (std::make_pair(int64_t{r.plan_index}, r.id) <=
          std::make_pair(query.after_plan_index, query.after_id)) {
        continue;
      }
      rows.push_back(&r);
    }
    std::sort(rows.begin(), rows.end(), [](const TestResult* a, const TestResult* b) {
      return std::make_pair(a->plan_index, a->id) < std::make_pair(b->plan_index, b->id);
    });
  } else {
    for (const TestResult* r : matchingLocked(query)) {
      if (query.before_id > 0 && std::make_pair(r->started_ms, r->id) >=
                                     std::make_pair(query.before_started_ms, query.before_id)) {
        continue;
      }
      rows.push_back(r);
    }
    std::sort(rows.begin(), rows.end(), [](const TestResult* a, const TestResult* b) {
      return std::make_pair(a->started_ms, a->id) > std::make_pair(b->started_ms, b->id);
    });
  }
  std::vector<TestResult> out;
  for (size_t i = 0; i < rows.size() && i < limitOf(query.limit); ++i) out.push_back(*rows[i]);
  return out;
}

Result<std::optional<TestResult>> MemoryStore::getResult(const std::string& test_id) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = result_ids_.find(test_id);
  if (it == result_ids_.end()) return std::optional<TestResult>();
  return std::optional<TestResult>(results_.at(it->second));
}

Result<uint64_t> MemoryStore::countResults(const ResultQuery& query) {
  std::lock_guard<std::mutex> lock(mu_);
  // As SQLite counts: up to the cap and one more, each half of a worker filter on its own.
  uint64_t initiator = 0, other = 0;
  for (const TestResult* r : matchingLocked(query)) {
    if (query.worker.empty() || r->initiator.worker == query.worker) {
      ++initiator;
    } else {
      ++other;
    }
  }
  return std::min(initiator, kResultCountCap + 1) + std::min(other, kResultCountCap + 1);
}

Result<std::vector<TestResult>> MemoryStore::queryHistory(const HistoryQuery& q) {
  if (q.src.empty() || q.dst.empty()) {
    return invalidArgument(
        std::string("history: ") + (q.src.empty() ? "src" : "dst") + " worker is empty",
        "name both workers of the pair (SRC and DST)");
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<const TestResult*> rows;
  for (const auto& [id, r] : results_) {
    const bool forward = r.initiator.worker == q.src && r.target.worker == q.dst;
    const bool reverse = q.both_directions && q.src != q.dst && r.initiator.worker == q.dst &&
                         r.target.worker == q.src;
    if (!forward && !reverse) continue;
    if (r.started_ms < q.since_ms || r.started_ms >= q.until_ms) continue;
    if (q.message_size != 0 && r.message_size != q.message_size) continue;
    if ((q.op && r.op != *q.op) || (q.mode && r.mode != *q.mode)) continue;
    if (!q.run_id.empty() && r.run_id != q.run_id) continue;
    rows.push_back(&r);
  }
  std::sort(rows.begin(), rows.end(), [](const TestResult* a, const TestResult* b) {
    return std::make_pair(a->started_ms, a->id) > std::make_pair(b->started_ms, b->id);
  });
  std::vector<TestResult> out;
  for (size_t i = 0; i < rows.size() && i < limitOf(q.limit); ++i) out.push_back(*rows[i]);
  return out;
}

Status MemoryStore::upsertWorker(const WorkerRecord& worker) {
  if (worker.name.empty()) {
    return invalidArgument("worker.name is empty", "register workers under a non-empty name");
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, fresh] = workers_.try_emplace(worker.name, worker);
  if (!fresh) {
    WorkerRecord& w = it->second;
    w.hostname = worker.hostname;
    w.inventory_json = worker.inventory_json;
    w.first_seen_ms = std::min(w.first_seen_ms, worker.first_seen_ms);
    w.last_seen_ms = std::max(w.last_seen_ms, worker.last_seen_ms);
  }
  return Status();
}

Result<std::vector<WorkerRecord>> MemoryStore::listWorkers() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<WorkerRecord> out;
  for (const auto& [name, w] : workers_) out.push_back(w);
  return out;
}

Result<bool> MemoryStore::removeWorker(const std::string& name) {
  if (name.empty()) return invalidArgument("worker name is empty", "name the worker to remove");
  std::lock_guard<std::mutex> lock(mu_);
  return workers_.erase(name) > 0;
}

Status MemoryStore::markTestStarted(const TestResult& t) {
  if (t.test_id.empty()) {
    return invalidArgument("test_id is empty", "mark a test with its id (newTestId)");
  }
  TestResult kept;  // what the marker keeps: the test's name, nothing of its outcome
  kept.test_id = t.test_id;
  kept.run_id = t.run_id;
  kept.started_ms = t.started_ms;
  kept.op = t.op;
  kept.mode = t.mode;
  kept.transport = t.transport;
  kept.message_size = t.message_size;
  kept.iterations = t.iterations;
  kept.num_qps = t.num_qps;
  kept.initiator.worker = t.initiator.worker;
  kept.initiator.host = t.initiator.host;
  kept.target.worker = t.target.worker;
  kept.target.host = t.target.host;
  std::lock_guard<std::mutex> lock(mu_);
  test_starts_[t.test_id] = std::move(kept);
  return Status();
}

Status MemoryStore::clearTestStarted(const std::string& test_id) {
  std::lock_guard<std::mutex> lock(mu_);
  test_starts_.erase(test_id);
  return Status();
}

Result<std::vector<TestResult>> MemoryStore::unfinishedTests() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<TestResult> out;
  for (const auto& [id, t] : test_starts_) {
    if (result_ids_.count(id) == 0) out.push_back(t);
  }
  std::sort(out.begin(), out.end(), [](const TestResult& a, const TestResult& b) {
    return std::tie(a.started_ms, a.test_id) < std::tie(b.started_ms, b.test_id);
  });
  return out;
}

Result<uint64_t> MemoryStore::deleteResultsBefore(int64_t cutoff_ms, uint32_t max_rows) {
  if (max_rows == 0) {
    return invalidArgument("deleteResultsBefore: max_rows is 0",
                           "delete in batches of at least one row (e.g. 2000)");
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<const TestResult*> old;
  for (const auto& [id, r] : results_) {
    if (r.started_ms < cutoff_ms) old.push_back(&r);
  }
  std::sort(old.begin(), old.end(), [](const TestResult* a, const TestResult* b) {
    return std::make_pair(a->started_ms, a->id) < std::make_pair(b->started_ms, b->id);
  });
  old.resize(std::min<size_t>(old.size(), max_rows));
  for (const TestResult* r : old) {
    const int64_t id = r->id;
    result_ids_.erase(r->test_id);
    results_.erase(id);
  }
  return static_cast<uint64_t>(old.size());
}

Status MemoryStore::createSweep(const SweepRecord& sweep) {
  if (sweep.id.empty()) {
    return invalidArgument("sweep.id is empty", "give every sweep an id (e.g. s-<time>-<hex>)");
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!sweeps_.try_emplace(sweep.id, StoredSweep{sweep, ++next_sweep_rowid_}).second) {
    return invalidArgument("sweep '" + sweep.id + "' is already stored in memory",
                           "sweep ids are unique: give each sweep its own id, or updateSweep");
  }
  return Status();
}

Status MemoryStore::updateSweep(const SweepRecord& sweep) {
  if (sweep.id.empty()) {
    return invalidArgument("sweep.id is empty", "give every sweep an id (e.g. s-<time>-<hex>)");
  }
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = sweeps_.find(sweep.id);
  if (it == sweeps_.end()) {
    return notFound("sweep '" + sweep.id + "' is not stored in memory",
                    "createSweep it first (ids are matched exactly)");
  }
  const int64_t created = it->second.record.created_ms;
  it->second.record = sweep;
  it->second.record.created_ms = created;
  return Status();
}

Result<std::optional<SweepRecord>> MemoryStore::getSweep(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = sweeps_.find(id);
  if (it == sweeps_.end()) return std::optional<SweepRecord>();
  return std::optional<SweepRecord>(it->second.record);
}

Result<std::vector<SweepRecord>> MemoryStore::listSweeps(uint32_t limit, const std::string& state) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<const StoredSweep*> rows;
  for (const auto& [id, s] : sweeps_) {
    if (state.empty() || s.record.state == state) rows.push_back(&s);
  }
  std::sort(rows.begin(), rows.end(), [](const StoredSweep* a, const StoredSweep* b) {
    return std::make_pair(a->record.created_ms, a->rowid) >
           std::make_pair(b->record.created_ms, b->rowid);
  });
  std::vector<SweepRecord> out;
  for (size_t i = 0; i < rows.size() && i < limitOf(limit); ++i) out.push_back(rows[i]->record);
  return out;
}

Status MemoryStore::markSweepTestStarted(const std::string& sweep_id, const SweepTestStart& start) {
  if (sweep_id.empty()) {
    return invalidArgument("sweep id is empty", "mark tests of a stored sweep (createSweep)");
  }
  if (start.plan_index < 0) {
    return invalidArgument(
        "sweep " + sweep_id + ": plan_index " + std::to_string(start.plan_index) + " is negative",
        "pass the test's index in the sweep plan (0, 1, ...)");
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (sweeps_.count(sweep_id) == 0) {
    return notFound("sweep '" + sweep_id + "' is not stored in memory",
                    "createSweep before marking its tests started");
  }
  sweep_starts_[{sweep_id, start.plan_index}] = start;
  return Status();
}

Result<std::vector<SweepTestStart>> MemoryStore::unfinishedSweepTests(const std::string& sweep_id) {
  std::lock_guard<std::mutex> lock(mu_);
  std::set<int> done;
  for (const auto& [id, r] : results_) {
    if (r.run_id == sweep_id) done.insert(r.plan_index);
  }
  std::vector<SweepTestStart> out;
  for (auto it = sweep_starts_.lower_bound({sweep_id, std::numeric_limits<int>::min()});
       it != sweep_starts_.end() && it->first.first == sweep_id; ++it) {
    if (done.count(it->first.second) == 0) out.push_back(it->second);
  }
  return out;
}

Status MemoryStore::sweepMustExistLocked(const std::string& sweep_id) const {
  if (sweeps_.count(sweep_id) > 0) return Status();
  return notFound("sweep '" + sweep_id + "' is not stored in memory",
                  "createSweep before storing its report");
}

Status MemoryStore::clearSweepReport(const std::string& sweep_id) {
  std::lock_guard<std::mutex> lock(mu_);
  GDR_RETURN_IF_ERROR(sweepMustExistLocked(sweep_id));
  verdicts_.erase(sweep_id);
  summaries_.erase(sweep_id);
  return Status();
}

Status MemoryStore::appendSweepVerdicts(const std::string& sweep_id,
                                        const std::vector<VerdictRecord>& verdicts) {
  std::lock_guard<std::mutex> lock(mu_);
  GDR_RETURN_IF_ERROR(sweepMustExistLocked(sweep_id));
  std::map<uint64_t, VerdictRecord>& rows = verdicts_[sweep_id];
  std::set<uint64_t> batch;
  for (const VerdictRecord& v : verdicts) {
    if (rows.count(v.seq) > 0 || !batch.insert(v.seq).second) {
      return invalidArgument(
          "sweep " + sweep_id + ": verdict seq " + std::to_string(v.seq) + " is already stored",
          "number a sweep's verdicts once each (clearSweepReport to write it again)");
    }
  }
  for (const VerdictRecord& v : verdicts) {
    VerdictRecord kept = v;
    kept.value = finiteOrZero(v.value);
    rows[v.seq] = std::move(kept);
  }
  return Status();
}

Status MemoryStore::putSweepReportSummary(const std::string& sweep_id,
                                          const SweepReportSummary& summary) {
  std::lock_guard<std::mutex> lock(mu_);
  GDR_RETURN_IF_ERROR(sweepMustExistLocked(sweep_id));
  SweepReportSummary kept = summary;
  for (SuspectRecord& s : kept.suspects) s.score = finiteOrZero(s.score);
  summaries_[sweep_id] = std::move(kept);
  return Status();
}

Result<std::optional<SweepReportSummary>> MemoryStore::sweepReportSummary(
    const std::string& sweep_id) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = summaries_.find(sweep_id);
  if (it == summaries_.end()) return std::optional<SweepReportSummary>();
  return std::optional<SweepReportSummary>(it->second);
}

bool MemoryStore::verdictKept(const VerdictQuery& q, const VerdictRecord& v) const {
  const std::string src = hostOf(v.src), dst = hostOf(v.dst);
  if (!q.verdict.empty() && v.verdict != q.verdict) return false;
  if (!q.host.empty() && src != q.host && dst != q.host) return false;
  if (!q.src_host.empty() && src != q.src_host) return false;
  return q.dst_host.empty() || dst == q.dst_host;
}

Result<std::vector<VerdictRecord>> MemoryStore::sweepVerdicts(const VerdictQuery& query) {
  GDR_RETURN_IF_ERROR(checkVerdicts(query));
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<VerdictRecord> out;
  const auto it = verdicts_.find(query.sweep_id);
  if (it == verdicts_.end()) return out;
  uint64_t skipped = 0;
  for (const auto& [seq, v] : it->second) {
    if (!verdictKept(query, v)) continue;
    if (skipped < query.offset) {
      ++skipped;
      continue;
    }
    if (out.size() >= limitOf(query.limit)) break;
    out.push_back(v);
  }
  return out;
}

Result<uint64_t> MemoryStore::countSweepVerdicts(const VerdictQuery& query) {
  GDR_RETURN_IF_ERROR(checkVerdicts(query));
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t n = 0;
  const auto it = verdicts_.find(query.sweep_id);
  if (it == verdicts_.end()) return n;
  for (const auto& [seq, v] : it->second) n += verdictKept(query, v) ? 1 : 0;
  return n;
}

Status MemoryStore::recordScheduleRun(const ScheduleRun& run) {
  if (run.schedule.empty()) {
    return invalidArgument("schedule run has no schedule name", "record runs of a named schedule");
  }
  std::lock_guard<std::mutex> lock(mu_);
  schedule_runs_.emplace_back(static_cast<int64_t>(schedule_runs_.size()), run);
  return Status();
}

Result<std::vector<ScheduleRun>> MemoryStore::scheduleRuns(const std::string& schedule,
                                                           uint32_t limit) {
  if (schedule.empty()) {
    return invalidArgument("scheduleRuns needs a schedule name", "pass the schedule's name");
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::pair<int64_t, ScheduleRun>> rows;
  for (const auto& r : schedule_runs_) {
    if (r.second.schedule == schedule) rows.push_back(r);
  }
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return std::make_pair(a.second.due_ms, a.first) > std::make_pair(b.second.due_ms, b.first);
  });
  std::vector<ScheduleRun> out;
  for (size_t i = 0; i < rows.size() && i < limitOf(limit); ++i) out.push_back(rows[i].second);
  return out;
}

SweepTotals MemoryStore::countedTotalsLocked(const std::string& sweep_id,
                                             uint32_t plan_size) const {
  SweepTotals t;
  std::set<int> done;
  for (const auto& [id, r] : results_) {
    if (r.run_id != sweep_id) continue;
    if (r.plan_index >= 0 && r.plan_index < int64_t{plan_size}) done.insert(r.plan_index);
    if (r.status == TestStatus::kFailed || r.status == TestStatus::kError) ++t.tests_failed;
    if (r.status == TestStatus::kSkipped) ++t.tests_skipped;
    ++t.results;
  }
  t.tests_done = static_cast<uint32_t>(done.size());
  return t;
}

Status MemoryStore::aggregateSweep(const std::string& sweep_id, uint32_t plan_size) {
  if (sweep_id.empty()) {
    return invalidArgument("aggregateSweep: sweep id is empty", "pass a stored sweep's id");
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (sweeps_.count(sweep_id) == 0) {
    return notFound("sweep '" + sweep_id + "' is not stored in memory",
                    "aggregate a sweep that createSweep stored (ids are matched exactly)");
  }
  SweepTotals t = countedTotalsLocked(sweep_id, plan_size);
  if (t.results == 0) {
    totals_.try_emplace(sweep_id, SweepTotals{});  // kept, else zero totals
    return Status();
  }
  // Grouped as SQLite orders them: by src, dst, op and mode names, size.
  std::map<std::tuple<std::string, std::string, std::string, std::string, uint64_t>,
           std::pair<PairAggregate, std::vector<double>>>
      groups;
  for (const auto& [id, r] : results_) {
    if (r.run_id != sweep_id) continue;
    auto [it, fresh] = groups.try_emplace(
        std::make_tuple(r.initiator.worker, r.target.worker, std::string(toString(r.op)),
                        std::string(toString(r.mode)), r.message_size));
    PairAggregate& a = it->second.first;
    if (fresh) {
      a.sweep_id = sweep_id;
      a.src = r.initiator.worker;
      a.dst = r.target.worker;
      a.op = r.op;
      a.mode = r.mode;
      a.message_size = r.message_size;
      a.started_ms = r.started_ms;
      a.status = r.status;
      a.unit = r.mode == Mode::kBandwidth ? "Gb/s" : "us";
    }
    a.started_ms = std::min(a.started_ms, r.started_ms);
    if (statusSeverity(r.status) > statusSeverity(a.status)) a.status = r.status;
    ++a.tests;
    a.passed += r.status == TestStatus::kPassed ? 1 : 0;
    a.failed += r.status == TestStatus::kFailed ? 1 : 0;
    a.skipped += r.status == TestStatus::kSkipped ? 1 : 0;
    a.errors += r.status == TestStatus::kError ? 1 : 0;
    const bool bw = r.mode == Mode::kBandwidth;
    const double v = bw ? r.measurement.bw.avg_gbps : r.measurement.lat.median_us;
    if ((bw ? r.measurement.has_bandwidth : r.measurement.has_latency) && !std::isnan(v)) {
      it->second.second.push_back(v);
    }
  }
  std::vector<PairAggregate>& out = aggregates_[sweep_id];
  out.clear();
  for (auto& [key, g] : groups) {
    std::vector<double>& v = g.second;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    g.first.value_min = n ? v.front() : 0;
    g.first.value_max = n ? v.back() : 0;
    g.first.value_median = aggregateMedian(v);
    out.push_back(g.first);
  }
  totals_[sweep_id] = t;
  return Status();
}

Result<SweepTotals> MemoryStore::sweepTotals(const std::string& sweep_id, uint32_t plan_size) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = totals_.find(sweep_id);
  if (it == totals_.end()) return countedTotalsLocked(sweep_id, plan_size);
  SweepTotals t = it->second;
  t.from_aggregates = true;
  return t;
}

Result<std::vector<SweepRecord>> MemoryStore::sweepsWithoutAggregates(int64_t created_before_ms,
                                                                      uint32_t limit) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<const StoredSweep*> rows;
  for (const auto& [id, s] : sweeps_) {
    const std::string& st = s.record.state;
    if (s.record.created_ms < created_before_ms && st != "queued" && st != "running" &&
        totals_.count(id) == 0) {
      rows.push_back(&s);
    }
  }
  std::sort(rows.begin(), rows.end(), [](const StoredSweep* a, const StoredSweep* b) {
    return std::make_pair(a->record.created_ms, a->rowid) <
           std::make_pair(b->record.created_ms, b->rowid);
  });
  std::vector<SweepRecord> out;
  for (size_t i = 0; i < rows.size() && i < limitOf(limit); ++i) out.push_back(rows[i]->record);
  return out;
}

Result<std::vector<PairAggregate>> MemoryStore::sweepAggregates(const std::string& sweep_id) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = aggregates_.find(sweep_id);
  return it == aggregates_.end() ? std::vector<PairAggregate>() : it->second;
}

Result<std::vector<PairAggregate>> MemoryStore::pairHistory(const std::string& src,
                                                            const std::string& dst,
                                                            int64_t before_ms, uint32_t limit) {
  if (src.empty() || dst.empty()) {
    return invalidArgument("pairHistory needs both workers (src '" + src + "', dst '" + dst + "')",
                           "pass the initiator and the target worker names");
  }
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t before = before_ms > 0 ? before_ms : std::numeric_limits<int64_t>::max();
  std::vector<PairAggregate> rows;
  for (const auto& [id, aggs] : aggregates_) {
    for (const PairAggregate& a : aggs) {
      if (a.src == src && a.dst == dst && a.started_ms < before) rows.push_back(a);
    }
  }
  std::stable_sort(rows.begin(), rows.end(), [](const PairAggregate& a, const PairAggregate& b) {
    return a.started_ms > b.started_ms;
  });
  if (rows.size() > limitOf(limit)) rows.resize(limitOf(limit));
  return rows;
}

Result<int64_t> MemoryStore::recordAction(const ActionRecord& action) {
  if (action.node.empty() || action.action.empty() || action.outcome.empty()) {
    return invalidArgument("action record has no node, action or outcome",
                           "record an action with its node, action and outcome");
  }
  std::lock_guard<std::mutex> lock(mu_);
  actions_.push_back(action);
  actions_.back().id = static_cast<int64_t>(actions_.size());
  return actions_.back().id;
}

Result<std::vector<ActionRecord>> MemoryStore::listActions(const ActionQuery& q) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ActionRecord> out;
  for (auto it = actions_.rbegin(); it != actions_.rend() && out.size() < limitOf(q.limit); ++it) {
    if ((!q.node.empty() && it->node != q.node) ||
        (!q.sweep_id.empty() && it->sweep_id != q.sweep_id) || it->recorded_ms < q.since_ms) {
      continue;
    }
    out.push_back(*it);
  }
  return out;
}

Result<std::set<std::string>> MemoryStore::hookSuspects() {
  std::lock_guard<std::mutex> lock(mu_);
  return hook_suspects_;
}

Status MemoryStore::setHookSuspects(const std::set<std::string>& keys) {
  std::lock_guard<std::mutex> lock(mu_);
  hook_suspects_ = keys;
  return {};
}

Status MemoryStore::putTestPaths(const std::vector<PathHopRecord>& hops) {
  GDR_RETURN_IF_ERROR(validatePathHops(hops));
  std::lock_guard<std::mutex> lock(mu_);
  for (const PathHopRecord& h : hops) paths_.erase(h.test_id);
  for (const PathHopRecord& h : hops) paths_[h.test_id][{h.direction, h.hop}] = h;
  return {};
}

Status MemoryStore::putLinkCounters(const std::vector<LinkCounterRecord>& rows) {
  GDR_RETURN_IF_ERROR(validateLinkCounters(rows));
  std::lock_guard<std::mutex> lock(mu_);
  for (const LinkCounterRecord& r : rows) {
    link_counters_[r.sweep_id][{r.round, r.switch_guid, r.port, r.counter}] = r;
  }
  return {};
}

Result<std::vector<LinkCounterRecord>> MemoryStore::sweepLinkCounters(const std::string& sweep_id) {
  if (sweep_id.empty()) {
    return invalidArgument("sweepLinkCounters: empty sweep id", "name the sweep");
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<LinkCounterRecord> out;
  auto it = link_counters_.find(sweep_id);
  if (it == link_counters_.end()) return out;
  for (const auto& [key, r] : it->second) out.push_back(r);
  return out;
}

Status MemoryStore::putLinkVerdicts(const std::string& sweep_id,
                                    const std::vector<LinkVerdictRecord>& rows) {
  GDR_RETURN_IF_ERROR(validateLinkVerdicts(sweep_id, rows));
  std::lock_guard<std::mutex> lock(mu_);
  auto& verdicts = link_verdicts_[sweep_id];
  verdicts.clear();
  for (const LinkVerdictRecord& r : rows) verdicts[r.link] = r;
  return {};
}

Result<std::vector<LinkVerdictRecord>> MemoryStore::sweepLinkVerdicts(const std::string& sweep_id) {
  if (sweep_id.empty()) {
    return invalidArgument("sweepLinkVerdicts: empty sweep id", "name the sweep");
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<LinkVerdictRecord> out;
  auto it = link_verdicts_.find(sweep_id);
  if (it == link_verdicts_.end()) return out;
  for (const auto& [link, r] : it->second) out.push_back(r);
  return out;
}

Result<std::vector<PathHopRecord>> MemoryStore::testPath(const std::string& test_id) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<PathHopRecord> out;
  auto it = paths_.find(test_id);
  if (it == paths_.end()) return out;
  for (const auto& [key, h] : it->second) out.push_back(h);
  return out;
}

Result<std::vector<PathHopRecord>> MemoryStore::sweepPaths(const std::string& sweep_id) {
  if (sweep_id.empty()) return invalidArgument("sweepPaths: empty sweep id", "name the sweep");
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<PathHopRecord> out;
  for (const auto& [test, hops] : paths_) {
    for (const auto& [key, h] : hops) {
      if (h.sweep_id == sweep_id) out.push_back(h);
    }
  }
  return out;
}

Result<int64_t> MemoryStore::recordFabricSnapshot(
    const FabricSnapshotRecord& snapshot, const std::vector<FabricFindingRecord>& findings) {
  if (snapshot.worker.empty()) {
    return invalidArgument("fabric snapshot has no worker",
                           "record a snapshot with the worker that discovered it");
  }
  if (snapshot.outcome != "ok" && snapshot.outcome != "skipped" && snapshot.outcome != "failed") {
    return invalidArgument(
        "fabric snapshot outcome '" + snapshot.outcome + "' is not ok, skipped or failed",
        "record one of ok, skipped, failed");
  }
  if (snapshot.outcome == "ok" && snapshot.snapshot_json.empty()) {
    return invalidArgument("fabric snapshot is ok but has no snapshot document",
                           "record an ok snapshot with its JSON (docs/fabric.md)");
  }
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t id = fabric_.empty() ? 1 : fabric_.rbegin()->first + 1;
  FabricSnapshotRecord r = snapshot;
  r.id = id;
  fabric_.emplace(id, std::make_pair(std::move(r), findings));
  return id;
}

Result<std::vector<FabricSnapshotRecord>> MemoryStore::listFabricSnapshots(
    const FabricSnapshotQuery& query) {
  const FabricSnapshotQuery& q = query;
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<FabricSnapshotRecord> out;
  for (auto it = fabric_.rbegin(); it != fabric_.rend(); ++it) {
    if (q.limit != 0 && out.size() >= q.limit) break;
    const FabricSnapshotRecord& r = it->second.first;
    if (!q.worker.empty() && r.worker != q.worker) continue;
    if (!q.outcome.empty() && r.outcome != q.outcome) continue;
    if (q.before_id != 0 && r.id >= q.before_id) continue;
    out.push_back(r);
    if (!q.with_json) out.back().snapshot_json.clear();
  }
  return out;
}

Result<std::optional<FabricSnapshotRecord>> MemoryStore::getFabricSnapshot(int64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = fabric_.find(id);
  if (it == fabric_.end()) return std::optional<FabricSnapshotRecord>();
  return std::optional<FabricSnapshotRecord>(it->second.first);
}

Result<std::vector<FabricFindingRecord>> MemoryStore::fabricFindings(int64_t snapshot_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = fabric_.find(snapshot_id);
  if (it == fabric_.end()) return std::vector<FabricFindingRecord>();
  return it->second.second;
}

Result<uint64_t> MemoryStore::dropFabricSnapshotsBefore(int64_t cutoff_ms, uint32_t max_rows) {
  if (max_rows == 0) {
    return invalidArgument("dropFabricSnapshotsBefore: max_rows is 0",
                           "drop in batches of at least one snapshot (e.g. 2000)");
  }
  std::lock_guard<std::mutex> lock(mu_);
  int64_t newest_ok = 0;
  for (const auto& [id, entry] : fabric_) {
    if (entry.first.outcome == "ok") newest_ok = id;
  }
  // Oldest first by (taken_ms, id).
  std::vector<std::pair<int64_t, int64_t>> order;
  for (const auto& [id, entry] : fabric_) {
    const FabricSnapshotRecord& r = entry.first;
    if (r.taken_ms < cutoff_ms && !r.snapshot_json.empty() && id != newest_ok) {
      order.emplace_back(r.taken_ms, id);
    }
  }
  std::sort(order.begin(), order.end());
  uint64_t dropped = 0;
  for (const auto& [taken, id] : order) {
    if (dropped >= max_rows) break;
    fabric_[id].first.snapshot_json.clear();
    ++dropped;
  }
  return dropped;
}

}  // namespace gdrmesh::testing
