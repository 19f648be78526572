#include "coordinator/orchestrator/history.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>
#include <utility>

namespace gdrmesh {
namespace {

std::string side(const EndpointRecord& e) {
  return e.nic.empty() ? e.worker : e.worker + "/" + e.nic;
}

using Key = std::tuple<std::string, std::string, Op, Mode, uint64_t>;

Key keyOf(const TestResult& r) {
  return {side(r.initiator), side(r.target), r.op, r.mode, r.message_size};
}

// The later result of each key (started_ms, then row id).
std::map<Key, const TestResult*> latestByKey(const std::vector<TestResult>& rows) {
  std::map<Key, const TestResult*> out;
  for (const TestResult& r : rows) {
    const TestResult*& slot = out[keyOf(r)];
    if (slot == nullptr || std::tie(r.started_ms, r.id) > std::tie(slot->started_ms, slot->id)) {
      slot = &r;
    }
  }
  return out;
}

// The judged figure of a result for its mode, if it has one.
std::optional<double> figure(const TestResult& r) {
  const Measurement& m = r.measurement;
  if (r.mode == Mode::kLatency) {
    if (m.has_latency && std::isfinite(m.lat.median_us)) return m.lat.median_us;
    return std::nullopt;
  }
  if (m.has_bandwidth && std::isfinite(m.bw.avg_gbps)) return m.bw.avg_gbps;
  return std::nullopt;
}

std::string pct(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%+.1f%%", v);
  return buf;
}

// How much worse B is than A in % (positive: worse), for ordering; 0 without a change.
double regression(const ComparisonRow& r) {
  if (!r.change_pct) return 0;
  return r.mode == Mode::kLatency ? *r.change_pct : -*r.change_pct;
}

int rank(ChangeKind c) {
  switch (c) {
    case ChangeKind::kWorse:
      return 0;
    case ChangeKind::kMissing:
      return 1;
    case ChangeKind::kNew:
      return 2;
    case ChangeKind::kBetter:
      return 3;
    case ChangeKind::kUnchanged:
      return 4;
  }
  return 5;
}

ComparisonRow classify(const Key& key, const TestResult* a, const TestResult* b, double tol) {
  ComparisonRow row;
  std::tie(row.src, row.dst, row.op, row.mode, row.message_size) = key;
  row.unit = row.mode == Mode::kLatency ? "us" : "Gb/s";
  if (a != nullptr) {
    row.a = figure(*a);
    row.a_status = a->status;
    row.a_test_id = a->test_id;
  }
  if (b != nullptr) {
    row.b = figure(*b);
    row.b_status = b->status;
    row.b_test_id = b->test_id;
  }
  if (a == nullptr) {
    row.change = ChangeKind::kNew;
    // (Callers pass at least one side; a key with neither has nothing to read.)
    row.reason =
        std::string("only in B (") + (b != nullptr ? toString(b->status) : "no result") + ")";
    return row;
  }
  if (b == nullptr) {
    row.change = ChangeKind::kMissing;
    row.reason = std::string("only in A (") + toString(a->status) + ")";
    return row;
  }
  if (row.a && row.b && *row.a != 0) row.change_pct = (*row.b - *row.a) / *row.a * 100.0;
  const bool a_pass = a->status == TestStatus::kPassed;
  const bool b_pass = b->status == TestStatus::kPassed;
  const std::string status_change = std::string(toString(a->status)) + " -> " + toString(b->status);
  if (a_pass && !b_pass) {
    row.change = ChangeKind::kWorse;
    row.reason = status_change + (b->reason.empty() ? "" : ": " + b->reason);
    return row;
  }
  if (!a_pass && b_pass) {
    row.change = ChangeKind::kBetter;
    row.reason = status_change;
    return row;
  }
  if (!a_pass) {
    row.change = ChangeKind::kUnchanged;
    row.reason = a->status == b->status ? std::string("not passed in either") : status_change;
    return row;
  }
  if (!row.change_pct) {
    row.change = ChangeKind::kUnchanged;
    row.reason = !row.a || !row.b ? "no figure to compare" : "A's figure is 0";
    return row;
  }
  const double worse_by = regression(row);
  if (worse_by > tol) {
    row.change = ChangeKind::kWorse;
  } else if (-worse_by > tol) {
    row.change = ChangeKind::kBetter;
  } else {
    row.change = ChangeKind::kUnchanged;
  }
  row.reason = pct(*row.change_pct) + (row.mode == Mode::kLatency ? " latency" : " bandwidth");
  return row;
}

std::string knownList(const std::vector<WorkerStatus>& known) {
  if (known.empty()) return "none";
  constexpr size_t kShown = 12;
  std::string out;
  for (size_t i = 0; i < known.size() && i < kShown; ++i) {
    out += (i ? ", " : "") + known[i].name;
  }
  if (known.size() > kShown) out += ", ... (" + std::to_string(known.size() - kShown) + " more)";
  return out;
}

}  // namespace

const char* toString(ChangeKind c) {
  switch (c) {
    case ChangeKind::kWorse:
      return "worse";
    case ChangeKind::kBetter:
      return "better";
    case ChangeKind::kUnchanged:
      return "unchanged";
    case ChangeKind::kNew:
      return "new";
    case ChangeKind::kMissing:
      return "missing";
  }
  return "unchanged";
}

SweepComparison compareSweepResults(const std::string& a_id, const std::vector<TestResult>& a,
                                    const std::string& b_id, const std::vector<TestResult>& b,
                                    double tolerance_pct) {
  SweepComparison out;
  out.a = a_id;
  out.b = b_id;
  out.tolerance_pct = tolerance_pct;
  const auto in_a = latestByKey(a);
  const auto in_b = latestByKey(b);
  std::map<Key, std::pair<const TestResult*, const TestResult*>> keys;
  for (const auto& [k, r] : in_a) keys[k].first = r;
  for (const auto& [k, r] : in_b) keys[k].second = r;
  for (const auto& [k, ab] : keys) {
    out.rows.push_back(classify(k, ab.first, ab.second, tolerance_pct));
    switch (out.rows.back().change) {
      case ChangeKind::kWorse:
        ++out.worse;
        break;
      case ChangeKind::kBetter:
        ++out.better;
        break;
      case ChangeKind::kUnchanged:
        ++out.unchanged;
        break;
      case ChangeKind::kNew:
        ++out.added;
        break;
      case ChangeKind::kMissing:
        ++out.missing;
        break;
    }
  }
  // `keys` is ordered by (src, dst, op, mode, size): a stable sort keeps that for ties.
  std::stable_sort(out.rows.begin(), out.rows.end(),
                   [](const ComparisonRow& x, const ComparisonRow& y) {
                     if (rank(x.change) != rank(y.change)) return rank(x.change) < rank(y.change);
                     if (x.change == ChangeKind::kWorse) {
                       // A status regression before any figure regression.
                       const bool xs = x.b_status != TestStatus::kPassed;
                       const bool ys = y.b_status != TestStatus::kPassed;
                       if (xs != ys) return xs;
                       return regression(x) > regression(y);
                     }
                     if (x.change == ChangeKind::kBetter) return regression(x) < regression(y);
                     return false;
                   });
  return out;
}

HistoryQueries::HistoryQueries(ResultRecords& results, SweepRecords& sweeps,
                               const WorkerDirectory& workers)
    : results_(results), sweeps_(sweeps), workers_(workers) {}

Status HistoryQueries::checkKnownWorkers(const std::vector<std::string>& names) {
  std::vector<std::string> unknown;
  for (const std::string& n : names) {
    if (n.empty() || std::find(unknown.begin(), unknown.end(), n) != unknown.end()) continue;
    if (workers_.get(n) != nullptr) continue;
    // Not registered now (a simulated worker, or one from before a restart): known if any
    // stored result names it (one row from the (worker, started_ms) indexes).
    ResultQuery q;
    q.worker = n;
    q.limit = 1;
    GDR_ASSIGN_OR_RETURN(std::vector<TestResult> rows, results_.queryResults(q));
    if (rows.empty()) unknown.push_back(n);
  }
  if (unknown.empty()) return Status();
  std::string names_text;
  for (const std::string& n : unknown) names_text += (names_text.empty() ? "'" : ", '") + n + "'";
  return notFound(
      std::string(unknown.size() == 1 ? "unknown worker " : "unknown workers ") + names_text +
          ": never registered and in no stored result (known: " + knownList(workers_.list()) + ")",
      "check the spelling; `gdrmesh workers` lists the workers");
}

Result<std::vector<TestResult>> HistoryQueries::history(const HistoryQuery& query) {
  if (query.src.empty() || query.dst.empty()) {
    return invalidArgument(std::string(query.src.empty() ? "SRC" : "DST") + " is empty",
                           "name both workers of the pair: gdrmesh history SRC DST");
  }
  if (query.until_ms <= query.since_ms) {
    return invalidArgument("--until (" + std::to_string(query.until_ms) +
                               " ms) is not after --since (" + std::to_string(query.since_ms) +
                               " ms)",
                           "give --since an earlier time than --until");
  }
  GDR_RETURN_IF_ERROR(checkKnownWorkers({query.src, query.dst}));
  return results_.queryHistory(query);
}

Result<ResultsPage> HistoryQueries::results(const ResultQuery& query) {
  GDR_RETURN_IF_ERROR(checkKnownWorkers({query.worker}));
  ResultsPage page;
  GDR_ASSIGN_OR_RETURN(page.rows, results_.queryResults(query));
  GDR_ASSIGN_OR_RETURN(page.total, results_.countResults(query));
  // A result stored between the two reads can make the count lag the rows by a little.
  page.total = std::max<uint64_t>(page.total, page.rows.size());
  return page;
}

Result<TestResult> HistoryQueries::result(const std::string& test_id) {
  if (test_id.empty()) {
    return invalidArgument("TEST_ID is empty", "give a test id as `gdrmesh results` prints it");
  }
  GDR_ASSIGN_OR_RETURN(std::optional<TestResult> r, results_.getResult(test_id));
  if (!r) {
    return notFound("no result has test id '" + test_id + "'",
                    "copy a TEST ID from `gdrmesh results` or `gdrmesh history`");
  }
  return std::move(*r);
}

Result<std::vector<TestResult>> HistoryQueries::plannedResults(const std::string& sweep_id) {
  GDR_ASSIGN_OR_RETURN(std::optional<SweepRecord> sweep, sweeps_.getSweep(sweep_id));
  if (!sweep) {
    return notFound("sweep '" + sweep_id + "' is not stored",
                    "give a sweep id as `gdrmesh sweeps` lists it");
  }
  ResultQuery q;
  q.run_id = sweep_id;
  q.limit = 0;
  GDR_ASSIGN_OR_RETURN(std::vector<TestResult> rows, results_.queryResults(q));
  // Retests (localisation) come after the plan: they test other pairs, not this sweep's.
  const uint32_t planned = sweep->tests_total;
  rows.erase(std::remove_if(rows.begin(), rows.end(),
                            [planned](const TestResult& r) {
                              return planned > 0 && r.plan_index >= 0 &&
                                     static_cast<uint32_t>(r.plan_index) >= planned;
                            }),
             rows.end());
  return rows;
}

Result<SweepComparison> HistoryQueries::compare(const std::string& a, const std::string& b,
                                                double tolerance_pct) {
  if (!std::isfinite(tolerance_pct) || tolerance_pct < 0 || tolerance_pct > 1000) {
    return invalidArgument("--tolerance " + std::to_string(tolerance_pct) + "% is outside 0..1000%",
                           "give a percentage such as 5%");
  }
  if (a.empty() || b.empty()) {
    return invalidArgument(std::string(a.empty() ? "SWEEP_A" : "SWEEP_B") + " is empty",
                           "give two sweep ids as `gdrmesh sweeps` lists them");
  }
  GDR_ASSIGN_OR_RETURN(std::vector<TestResult> rows_a, plannedResults(a));
  GDR_ASSIGN_OR_RETURN(std::vector<TestResult> rows_b, plannedResults(b));
  return compareSweepResults(a, rows_a, b, rows_b, tolerance_pct);
}

}  // namespace gdrmesh
