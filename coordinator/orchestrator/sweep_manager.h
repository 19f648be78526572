// Sweeps, from request to verdict: validates and plans a sweep, stores it, runs it on the
// Executor (one sweep at a time; a second is refused or queued), writes results in batches,
// judges them, retests failing pairs with known-good partners, localises, and closes the
// sweep with its verdict and report. A coordinator killed mid-sweep resumes it on restart:
// finished results are kept, the tests that were in flight are recorded as ERROR and run
// again, nothing runs twice.
//
// Thread contract: thread-safe. Sweeps run on the manager's own thread; callers never block
// on a running sweep except through waitForChange().
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/lifeline.h"
#include "common/result.h"
#include "coordinator/orchestrator/cluster_config.h"
#include "coordinator/orchestrator/executor.h"
#include "coordinator/orchestrator/judge_row.h"
#include "coordinator/orchestrator/sweep_summary.h"
#include "coordinator/orchestrator/sweep_types.h"
#include "coordinator/orchestrator/worker_channel.h"
#include "coordinator/store/result_writer.h"
#include "coordinator/store/store.h"

namespace gdrmesh {

// Turns a SweepSpec into stored text and back (the service implements it with the wire
// format's JSON, so a stored spec reads like the API).
class SweepCodec {
 public:
  virtual ~SweepCodec() = default;
  virtual std::string encode(const SweepSpec& spec) const = 0;
  virtual Result<SweepSpec> decode(const std::string& text) const = 0;
};

// What a reader asks of a sweep's report. A 1024-host all-pairs has 523,776 verdicts and
// results (about 130 MB of verdicts alone): readers page through them.
struct SweepReportQuery {
  bool with_results = false;
  uint32_t results_limit = 0;  // 0 = all
  std::string results_after;   // SweepReportData::results_next of the page before; "" = first
  VerdictFilter verdicts = VerdictFilter::kAll;
  VerdictPage page;
};

struct SweepReportData {
  SweepProgress progress;
  SweepSpec spec;
  std::vector<TestResult> results;    // the page of them asked for, in plan order
  std::vector<PairVerdict> verdicts;  // the page of them asked for, in plan order
  std::vector<Suspect> suspects;
  std::vector<std::string> notes;
  VerdictCounts verdict_counts;        // over every verdict
  uint64_t verdicts_matching = 0;      // verdicts the filter keeps, on every page
  std::string results_next;            // the cursor of the next page of results; "" = no more
  std::vector<SweepPart> parts;        // what ran: the config's sweeps, or the spec as one part
  std::vector<FigureSummary> figures;  // over every verdict, not only the page
};

// The report a finished sweep stores (SweepRecord::report_json): verdicts, suspects, notes.
// SweepManager::report reads it back; tools that write sweeps (tests/bench/gen_history) use it.
std::string sweepReportJson(const std::vector<PairVerdict>& verdicts,
                            const std::vector<Suspect>& suspects,
                            const std::vector<std::string>& notes);
// The same, each verdict made by `verdict(i)` as it is written (no vector of them is held).
std::string sweepReportJson(size_t verdict_count,
                            const std::function<PairVerdict(size_t i)>& verdict,
                            const std::vector<Suspect>& suspects,
                            const std::vector<std::string>& notes);
// Reads it back, one verdict at a time (no DOM of the whole report); text that is not a
// report gives empty parts.
struct SweepReportParts {
  std::vector<PairVerdict> verdicts;
  std::vector<Suspect> suspects;
  std::vector<std::string> notes;
};
SweepReportParts parseSweepReportJson(const std::string& text);

struct SweepManagerOptions {
  ExecutorOptions executor;
  int max_retests = 64;
  double checkpoint_seconds = 1.0;  // how often a running sweep's progress is stored
  // Called on the sweep's thread once an ended sweep is judged, before its report is stored;
  // the lines it returns join the sweep's notes (coordinator/actions: what was done about the
  // verdict). Must not block for long: actuators bound their commands.
  std::function<std::vector<std::string>(const SweepEnding& end)> on_end;
};

class SweepManager {
 public:
  using ConfigParser = std::function<Result<ClusterConfig>(const std::string& yaml)>;

  SweepManager(WorkerDirectory& workers, Clock& clock, SweepStore& sweeps, ResultStore& results,
               ResultWriter& writer, const SweepCodec& codec, ConfigParser parse_config,
               SweepManagerOptions options);
  ~SweepManager();

  // Validates, plans and starts (or queues) a sweep. Errors name the field and the fix.
  Result<SweepProgress> start(const SweepSpec& spec);
  Result<SweepProgress> cancel(const std::string& id);
  Result<SweepProgress> progress(const std::string& id);
  Result<SweepReportData> report(const std::string& id, const SweepReportQuery& query = {});
  // Recomputes verdicts from the stored rows: same rows and config, same answer. The result
  // carries the page of verdicts `page` asks for and no results.
  Result<SweepReportData> judge(const std::string& id, const std::string& config_yaml,
                                const std::string& baseline, VerdictFilter filter = {},
                                VerdictPage page = {});
  Result<std::vector<SweepProgress>> list(uint32_t limit);
  bool running() const;
  // Blocks until the sweep's progress changes after `version` or the deadline passes; returns
  // the progress and its version.
  Result<std::pair<SweepProgress, uint64_t>> waitForChange(const std::string& id, uint64_t version,
                                                           Clock::TimePoint deadline);
  // At start-up: sweeps left running or queued by a previous coordinator are resumed.
  void resumeInterrupted();
  // At start-up: the newest ended sweep's report is read and parsed into the cache, so the
  // status page's first view and /metrics do not pay for it.
  void warmLatestReport();
  void shutdown();

 private:
  struct Active;
  void loop();
  void execute(const std::shared_ptr<Active>& a);
  Result<ClusterConfig> configOf(const SweepSpec& spec) const;
  Result<std::vector<PlannedTest>> planAll(const SweepSpec& spec, const ClusterConfig& config,
                                           std::vector<PairTestSpec>* templates,
                                           std::vector<int>* template_of,
                                           std::vector<std::string>* notes, int* rounds,
                                           uint64_t* seed,
                                           const std::set<std::string>& assume_online);
  SweepProgress snapshot(const Active& a) const;
  // The state others see: running until an ended sweep's report is stored.
  static SweepState visibleState(const Active& a);
  // The live snapshot when the sweep is recent, else from the stored row (`rec`; nullopt:
  // kNotFound) and the store's counts.
  Result<SweepProgress> progressOf(const std::string& id, const std::optional<SweepRecord>& rec);
  SweepRecord recordOf(const Active& a) const;
  void publish(const std::shared_ptr<Active>& a);
  void checkpoint(const std::shared_ptr<Active>& a, bool final);
  // The running sweep's next periodic checkpoint (checkpoint_seconds on, on the clock's thread),
  // which stores its progress and schedules the next into *timer, while `line` is open.
  Clock::TimerId scheduleTick(Lifeline::Ref line, Clock::TimerId* timer,
                              const std::shared_ptr<Active>& a);
  // The judge over a sweep's rows with the workers' labels and port rates of now.
  JudgeVerdicts judgeSweepRows(const JudgeRows& rows, const ClusterConfig& config,
                               const JudgeRows& baseline) const;
  // The rows of the baseline sweep (`baseline`: an id, "previous" or "" for none).
  Result<JudgeRows> baselineRows(const std::string& baseline, const std::string& except_id);
  static constexpr uint32_t kBaselinePage = 10000;
  std::string reportJson(const JudgeRows& rows, const JudgeVerdicts& verdicts,
                         const std::vector<Suspect>& s,
                         const std::vector<std::string>& notes) const;

  // A stored report, parsed (SweepRecord::report_json and spec_json).
  struct ParsedReport {
    std::string key;  // state/finished_ms/report revision it was parsed from
    SweepSpec spec;
    std::vector<PairVerdict> verdicts;
    std::vector<Suspect> suspects;
    std::vector<std::string> notes;
    std::vector<SweepPart> parts;
    std::vector<FigureSummary> figures;
  };
  // At most 8 parsed reports and, beyond the newest one, 1M verdicts in all (~200 MB): eight
  // 1024-host all-pairs reports (523k verdicts each) would otherwise hold ~1.5 GB.
  static constexpr size_t kReportCacheSize = 8;
  static constexpr size_t kReportCacheVerdicts = 1'000'000;
  static constexpr size_t kWarmReportMaxBytes = 64u << 20;  // ~250k verdicts
  static constexpr uint32_t kWarmLookback = 50;
  void warmReport(const std::string& id);
  // `header` is the sweep's row read without its report; the report is read (and parsed) only
  // when the cache has no parse of its revision.
  Result<std::shared_ptr<const ParsedReport>> parsedReport(const SweepRecord& header);
  // A stored sweep's parts: its spec (and config's sweeps), with the plan's counts per part.
  std::vector<SweepPart> partsOf(const SweepSpec& spec, const std::string& plan_json) const;

  WorkerDirectory& workers_;
  Clock& clock_;
  SweepStore& sweeps_;
  ResultStore& results_;
  ResultWriter& writer_;
  const SweepCodec& codec_;
  ConfigParser parse_config_;
  const SweepManagerOptions options_;

  mutable std::mutex mu_;  // guards everything below
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Active>> queue_;
  std::shared_ptr<Active> current_;
  std::map<std::string, std::shared_ptr<Active>> recent_;  // by id, for follow
  bool stopping_ = false;
  std::thread thread_;

  std::mutex cache_mu_;  // guards report_cache_
  // Parsed reports of ended sweeps, most recently used first.
  std::list<std::pair<std::string, std::shared_ptr<const ParsedReport>>> report_cache_;
};

}  // namespace gdrmesh
