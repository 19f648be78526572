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
// results: readers page through them (verdicts and results are rows of the store, paged, filtered
// and counted in SQL).
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
  // Stores the ended sweep's report as rows (sweep_report_rows.h), before its row says it ended.
  Status storeReport(const Active& a);
  // The stored report of `rec` into `d`: the page of verdicts `query` asks for, suspects,
  // notes, counts and figures (none while the sweep runs or its report is being stored).
  Status readReport(const SweepRecord& rec, const SweepReportQuery& query, SweepReportData* d);
  // The figures of a report converted by migration 9 (none stored): summed up over its verdict
  // rows once and stored with it.
  Result<std::vector<FigureSummary>> figuresOfConverted(const std::string& id,
                                                        SweepReportSummary summary);
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
};

}  // namespace gdrmesh
