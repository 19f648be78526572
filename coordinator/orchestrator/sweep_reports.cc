#include "coordinator/orchestrator/sweep_reports.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>

#include "common/limits.h"
#include "common/sync/mutex.h"
#include "common/units.h"
#include "coordinator/orchestrator/judge.h"
#include "coordinator/orchestrator/link_counters.h"
#include "coordinator/orchestrator/localiser.h"
#include "coordinator/orchestrator/outliers.h"
#include "coordinator/orchestrator/sweep_report_rows.h"

namespace gdrmesh {

namespace {

// How long a query of an ended sweep's results waits for the writer to store its last ones.
constexpr double kResultsStoredWaitSeconds = 30.0;

SweepProgress sweepProgressFromRecord(const SweepRecord& r) {
  SweepProgress p;
  p.id = r.id;
  p.state = parseSweepState(r.state).value_or(SweepState::kFailed);
  p.pattern = r.pattern;
  p.name = r.name;
  p.created_ms = r.created_ms;
  p.started_ms = r.started_ms;
  p.finished_ms = r.finished_ms;
  p.tests_total = r.tests_total;
  p.reason = r.reason;
  p.verdict = r.verdict;
  p.verdict_counts.pass = r.verdicts_pass;
  p.verdict_counts.fail = r.verdicts_fail;
  p.verdict_counts.skip = r.verdicts_skip;
  if (r.finished_ms > 0 && r.started_ms > 0) {
    p.elapsed_seconds = static_cast<double>(r.finished_ms - r.started_ms) / 1000.0;
    p.eta_seconds = 0;
  }
  return p;
}

}  // namespace

SweepReports::SweepReports(SweepDeps deps, SweepBoard& board)
    : deps_(std::move(deps)), board_(board) {}

Result<SweepProgress> SweepReports::progress(const std::string& id) {
  {
    MutexLock lock(board_.mu);
    auto it = board_.recent.find(id);
    if (it != board_.recent.end()) return board_.snapshot(*it->second);
  }
  auto rec = deps_.sweeps.getSweep(id);
  if (!rec.ok()) return rec.status();
  return progressOf(id, *rec);
}

Result<SweepProgress> SweepReports::progressOf(const std::string& id,
                                               const std::optional<SweepRecord>& rec) {
  {
    MutexLock lock(board_.mu);
    auto it = board_.recent.find(id);
    if (it != board_.recent.end()) return board_.snapshot(*it->second);
  }
  if (!rec) {
    return notFound("sweep '" + id + "' is not known", "list sweeps with `gdrmesh sweeps`");
  }
  SweepProgress p = sweepProgressFromRecord(*rec);
  // Counted by the store (from an index, or the totals kept when the sweep was aggregated:
  // retention may have deleted its raw rows), never by reading every row here.
  auto totals = deps_.sweeps.sweepTotals(id, p.tests_total);
  if (totals.ok()) {
    p.tests_done = totals->tests_done;
    p.tests_failed = totals->tests_failed;
    p.tests_skipped = totals->tests_skipped;
  }
  return p;
}

std::vector<SweepPart> SweepReports::partsOf(const SweepSpec& spec,
                                             const std::string& plan_json) const {
  std::vector<SweepSpec> config_sweeps;
  if (spec.pattern_from_config) {
    auto config = sweepConfigOf(deps_.parse_config, spec);
    if (!config.ok()) return {};  // the stored config no longer parses: no parts to tell
    config_sweeps = std::move(config->sweeps);
  }
  std::vector<uint64_t> planned;
  const auto pj = nlohmann::json::parse(plan_json, nullptr, false);
  if (pj.is_object() && pj.contains("parts") && pj["parts"].is_array()) {
    for (const auto& n : pj["parts"]) {
      if (!n.is_number_unsigned()) return sweepParts(spec, config_sweeps, {});
      planned.push_back(n.get<uint64_t>());
    }
  }
  return sweepParts(spec, config_sweeps, planned);
}

Result<std::vector<FigureSummary>> SweepReports::figuresOfConverted(const std::string& id,
                                                                    SweepReportSummary summary) {
  VerdictQuery all;
  all.sweep_id = id;
  GDR_ASSIGN_OR_RETURN(std::vector<VerdictRecord> rows, deps_.sweeps.sweepVerdicts(all));
  FigureAccumulator acc;
  for (VerdictRecord& r : rows) acc.add(pairVerdictOf(std::move(r)));
  std::vector<FigureSummary> figures = acc.result();
  summary.figures_json = figuresJson(figures);
  // Kept for the next reader; a report stored anew meanwhile is not replaced.
  auto now = deps_.sweeps.sweepReportSummary(id);
  if (now.ok() && *now && (*now)->figures_json.empty()) {
    (void)deps_.sweeps.putSweepReportSummary(id, summary);
  }
  return figures;
}

Status SweepReports::readReport(const SweepRecord& rec, const SweepReportQuery& query,
                                SweepReportData* d) {
  // A sweep that runs shows no report: one stored by an earlier end (a resumed sweep) is
  // replaced at its end. One judged whose rows are being stored is read from memory.
  if (runningHere(rec.id)) return Status();
  if (readPendingReport(rec.id, query, d)) return Status();
  GDR_ASSIGN_OR_RETURN(std::optional<SweepReportSummary> summary,
                       deps_.sweeps.sweepReportSummary(rec.id));
  if (!summary) return Status();
  auto figures = figuresFromJson(summary->figures_json);
  if (figures) {
    d->figures = std::move(*figures);
  } else {
    GDR_ASSIGN_OR_RETURN(d->figures, figuresOfConverted(rec.id, *summary));
  }
  for (SuspectRecord& s : summary->suspects) d->suspects.push_back(suspectOf(std::move(s)));
  d->notes = std::move(summary->notes);
  // The counts are the row's (stored with the report, as `gdrmesh sweeps` lists them).
  d->verdict_counts = {rec.verdicts_pass, rec.verdicts_fail, rec.verdicts_skip};
  if (query.verdicts == VerdictFilter::kNone) return Status();
  d->verdicts_matching =
      query.verdicts == VerdictFilter::kFailed
          ? d->verdict_counts.fail
          : d->verdict_counts.pass + d->verdict_counts.fail + d->verdict_counts.skip;
  VerdictQuery q;
  q.sweep_id = rec.id;
  q.verdict = verdictWord(query.verdicts);
  q.offset = query.page.offset;
  q.limit = query.page.limit;
  if (q.offset >= d->verdicts_matching) return Status();
  GDR_ASSIGN_OR_RETURN(std::vector<VerdictRecord> rows, deps_.sweeps.sweepVerdicts(q));
  d->verdicts.reserve(rows.size());
  for (VerdictRecord& r : rows) d->verdicts.push_back(pairVerdictOf(std::move(r)));
  return Status();
}

namespace {

// The results cursor: "PLAN_INDEX:ROW_ID" of the last result of the page before.
std::string sweepResultsCursor(const TestResult& last) {
  return std::to_string(last.plan_index) + ":" + std::to_string(last.id);
}

std::optional<int64_t> parseSweepCursorPart(std::string_view text) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return v;
}

Status parseSweepResultsCursor(const std::string& text, ResultQuery* q) {
  const auto bad = [&] {
    return invalidArgument("results_after '" + cleanText(text, 40) + "' is not a results cursor",
                           "pass the results_next of the page before, or \"\" for the first");
  };
  const size_t colon = text.find(':');
  if (colon == std::string::npos) return bad();
  const auto plan = parseSweepCursorPart(std::string_view(text).substr(0, colon));
  const auto row = parseSweepCursorPart(std::string_view(text).substr(colon + 1));
  if (!plan || !row || *plan < -1 || *row < 0) return bad();
  q->after_plan_index = *plan;
  q->after_id = *row;
  return Status::okStatus();
}

}  // namespace

// Declared in sweep_run.h: the run's judge and `sweep judge` read a baseline alike.
Result<JudgeRows> sweepBaselineRows(SweepStore& sweeps, ResultStore& results,
                                    const std::string& baseline, const std::string& except_id) {
  constexpr uint32_t kBaselinePage = 10000;
  if (baseline.empty()) return JudgeRows{};
  std::string id = baseline;
  if (baseline == "previous") {
    auto list = sweeps.listSweeps(20, "finished");
    if (!list.ok()) return list.status();
    id.clear();
    for (const auto& s : *list) {
      if (s.id != except_id) {
        id = s.id;
        break;
      }
    }
    if (id.empty()) return JudgeRows{};
  }
  // A page at a time: only the compact rows of a large baseline are ever held together.
  JudgeRows rows;
  ResultQuery q;
  q.run_id = id;
  q.limit = kBaselinePage;
  for (;;) {
    GDR_ASSIGN_OR_RETURN(std::vector<TestResult> page, results.queryResults(q));
    for (const auto& r : page) rows.add(r);
    if (page.size() < kBaselinePage) break;
    q.before_started_ms = page.back().started_ms;
    q.before_id = page.back().id;
  }
  return rows;
}

Status SweepReports::awaitResults(const std::string& id) {
  // A sweep is judged while the writer stores its last results: they are read once every one
  // is stored.
  if (board_.awaitResultsStored(id, deps_.clock.after(kResultsStoredWaitSeconds))) {
    return Status::okStatus();
  }
  return unavailable("sweep " + id + ": its last results are still being written to the store",
                     "retry in a moment (if it lasts, the store is slow or refuses writes: see "
                     "the coordinator's log)");
}

Result<SweepReportData> SweepReports::report(const std::string& id, const SweepReportQuery& query) {
  SweepReportData d;
  auto rec = deps_.sweeps.getSweep(id);
  if (!rec.ok()) return rec.status();
  GDR_ASSIGN_OR_RETURN(d.progress, progressOf(id, *rec));
  if (*rec) {
    auto spec = deps_.codec.decode((*rec)->spec_json);
    if (spec.ok()) d.spec = std::move(*spec);
    d.parts = partsOf(d.spec, (*rec)->plan_json);
    GDR_RETURN_IF_ERROR(readReport(**rec, query, &d));
    if (deps_.link_counters != nullptr) {
      GDR_ASSIGN_OR_RETURN(d.links, deps_.link_counters->sweepLinkVerdicts(id));
    }
  }
  {
    MutexLock lock(board_.mu);
    auto it = board_.recent.find(id);
    if (it != board_.recent.end() && d.notes.empty()) d.notes = it->second->notes;
  }
  if (query.with_results) {
    GDR_RETURN_IF_ERROR(awaitResults(id));
    ResultQuery q;
    q.run_id = id;
    q.plan_order = true;
    q.limit = query.results_limit;
    if (!query.results_after.empty())
      GDR_RETURN_IF_ERROR(parseSweepResultsCursor(query.results_after, &q));
    GDR_ASSIGN_OR_RETURN(d.results, deps_.results.queryResults(q));
    if (query.results_limit > 0 && d.results.size() == query.results_limit) {
      d.results_next = sweepResultsCursor(d.results.back());
    }
  }
  return d;
}

Result<SweepReportData> SweepReports::judge(const std::string& id, const std::string& config_yaml,
                                            const std::string& baseline, VerdictFilter filter,
                                            VerdictPage page) {
  SweepReportQuery all_results;
  all_results.with_results = true;
  all_results.verdicts = VerdictFilter::kNone;
  GDR_ASSIGN_OR_RETURN(SweepReportData d, report(id, all_results));
  auto rec = deps_.sweeps.getSweep(id);
  if (!rec.ok()) return rec.status();
  // The plan proper (tests_total counts the retests too): results beyond it are retests.
  size_t plan_size = d.progress.tests_total;
  if (*rec) {
    const auto pj = nlohmann::json::parse((*rec)->plan_json, nullptr, false);
    if (pj.is_object() && pj.contains("plan_size") && pj["plan_size"].is_number_unsigned()) {
      plan_size = pj["plan_size"].get<size_t>();
    }
  }
  std::string yaml = config_yaml.empty() ? d.spec.config_yaml : config_yaml;
  ClusterConfig config;
  if (!yaml.empty()) {
    if (!deps_.parse_config) {
      return unimplemented("config: this coordinator cannot parse configs");
    }
    GDR_ASSIGN_OR_RETURN(config, deps_.parse_config(yaml));
  }
  GDR_ASSIGN_OR_RETURN(auto base,
                       sweepBaselineRows(deps_.sweeps, deps_.results,
                                         baseline.empty() ? d.spec.baseline : baseline, id));
  // The live judge's path over the stored rows: same rows, same verdicts, same order.
  JudgeRows rows;
  rows.reserve(d.results.size());
  for (const auto& r : d.results) rows.add(r, isRetestResult(r, plan_size));
  rows.sortByPlanIndex();
  const JudgeVerdicts verdicts = judgeSweepRows(deps_.workers, rows, config, base);
  const OutlierFindings outliers = findOutliers(rows, config.outliers);
  Localisation located = localiseSweep(rows, verdicts);
  SweepVerdict judged = sweepVerdict(rows, verdicts, outliers, config, located.noise_rows);
  // The stored links' verdicts weigh as at the sweep's end (judgeEnd).
  judgeSweepLinks(d.links, &judged);
  d.suspects = mergeSuspects(std::move(located.suspects), outliers.suspects);
  // The stored notes hold those of the live judge; a changed config may add others.
  for (const std::vector<std::string>* notes :
       {&std::as_const(located.notes), &outliers.notes, &std::as_const(judged.notes)}) {
    for (const auto& n : *notes) {
      if (std::find(d.notes.begin(), d.notes.end(), n) == d.notes.end()) d.notes.push_back(n);
    }
  }
  const std::vector<PairVerdict> all = verdictsOf(rows, verdicts);
  d.progress.verdict = judged.pass ? "PASS" : "FAIL";
  if (!judged.reason.empty()) d.progress.reason = judged.reason;
  d.figures = summariseFigures(all);
  d.results.clear();
  d.verdict_counts = {};
  d.verdicts.clear();
  d.verdicts_matching = selectVerdicts(all, filter, page, &d.verdict_counts, &d.verdicts);
  return d;
}

Result<std::vector<SweepProgress>> SweepReports::list(uint32_t limit) {
  GDR_ASSIGN_OR_RETURN(auto recs, deps_.sweeps.listSweeps(limit, ""));
  std::vector<SweepProgress> out(recs.size());
  std::vector<size_t> stored;  // sweeps this coordinator has not run: counted by the store
  {
    MutexLock lock(board_.mu);
    for (size_t i = 0; i < recs.size(); ++i) {
      auto it = board_.recent.find(recs[i].id);
      if (it != board_.recent.end()) {
        out[i] = board_.snapshot(*it->second);
      } else {
        out[i] = sweepProgressFromRecord(recs[i]);
        stored.push_back(i);
      }
    }
  }
  // As progress() counts them (the kept totals of an ended sweep: one row each), outside the
  // lock. Without this, every sweep from before a restart was listed as 0/N with 0 failed.
  for (size_t i : stored) {
    auto totals = deps_.sweeps.sweepTotals(recs[i].id, recs[i].tests_total);
    if (!totals.ok()) continue;
    out[i].tests_done = totals->tests_done;
    out[i].tests_failed = totals->tests_failed;
    out[i].tests_skipped = totals->tests_skipped;
  }
  return out;
}

bool SweepReports::readPendingReport(const std::string& id, const SweepReportQuery& query,
                                     SweepReportData* d) {
  MutexLock lock(board_.mu);
  auto it = board_.recent.find(id);
  if (it == board_.recent.end() || !it->second->report_pending) return false;
  // The run only reads these until it clears report_pending (under mu), so they are read in
  // place: the same verdicts, in the same order, as the rows being stored will read back.
  const LiveSweep& s = *it->second;
  d->figures = s.figures;
  d->suspects = s.suspects;
  d->notes = s.notes;
  d->verdict_counts = s.verdict_counts;
  if (query.verdicts == VerdictFilter::kNone) return true;
  const bool failed_only = query.verdicts == VerdictFilter::kFailed;
  d->verdicts_matching =
      failed_only ? d->verdict_counts.fail
                  : d->verdict_counts.pass + d->verdict_counts.fail + d->verdict_counts.skip;
  uint64_t seen = 0;
  for (size_t i = 0; i < s.verdicts.kind.size(); ++i) {
    if (query.page.limit > 0 && d->verdicts.size() >= query.page.limit) break;
    if (failed_only && s.verdicts.kind[i] != VerdictKind::kFail) continue;
    if (seen++ < query.page.offset) continue;
    PairVerdict v = verdictOf(s.rows, s.verdicts, i);
    if (!std::isfinite(v.value)) v.value = 0.0;  // as the stored row reads back
    d->verdicts.push_back(std::move(v));
  }
  return true;
}

bool SweepReports::runningHere(const std::string& id) {
  MutexLock lock(board_.mu);
  auto it = board_.recent.find(id);
  return it != board_.recent.end() && SweepBoard::visibleState(*it->second) == SweepState::kRunning;
}

}  // namespace gdrmesh
