// The run of one sweep: plans it (validation, capabilities), executes its plan on an Executor,
// retests failing pairs with known-good partners, judges, localises, and closes it with its
// verdict and report stored as rows. Progress is stored on the injected clock's timers; a
// resumed sweep waits for its hosts on directory events (a worker that registers), bounded by
// the clock. The queue (sweep_queue.h) decides which sweep runs when.
//
// Thread contract: plan() and checkpoint() from any thread; run() on one thread per sweep (the
// queue's), which is the only thread that changes a sweep's plan, rows and verdicts.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/lifeline.h"
#include "common/result.h"
#include "coordinator/orchestrator/cluster_config.h"
#include "coordinator/orchestrator/executor.h"
#include "coordinator/orchestrator/fabric_source.h"
#include "coordinator/orchestrator/judge_row.h"
#include "coordinator/orchestrator/link_blame.h"
#include "coordinator/orchestrator/link_counters.h"
#include "coordinator/orchestrator/outliers.h"
#include "coordinator/orchestrator/sweep_board.h"
#include "coordinator/orchestrator/sweep_fabric.h"
#include "coordinator/orchestrator/sweep_lldp.h"
#include "coordinator/orchestrator/sweep_types.h"
#include "coordinator/orchestrator/worker_channel.h"
#include "coordinator/store/result_writer.h"
#include "coordinator/store/store.h"

namespace gdrmesh {

// Turns a SweepSpec into stored text and back (the service's StoredSweepCodec: the domain
// encoding of docs/json.md, the form reports print; rows of older builds in protobuf's JSON).
class SweepCodec {
 public:
  virtual ~SweepCodec() = default;
  virtual std::string encode(const SweepSpec& spec) const = 0;
  virtual Result<SweepSpec> decode(const std::string& text) const = 0;
};

// The fabric reader of a sweep's rounds (ClusterConfig's fabric_reader, fabric_counters_reset,
// fabric_thresholds).
struct FabricCounterOptions {
  std::string reader;  // "": counters are not read
  bool reset = false;
  std::vector<CounterThreshold> thresholds = defaultCounterThresholds();
  double read_timeout_seconds = 60;
};

struct SweepManagerOptions {
  ExecutorOptions executor;
  int max_retests = 64;
  double checkpoint_seconds = 1.0;  // how often a running sweep's progress is stored
  // How long (on the clock) a resumed sweep waits for its hosts to register again before its
  // tests on those still missing end as "offline".
  double resume_wait_seconds = 30.0;
  // Called on the sweep's thread once an ended sweep is judged, before its report is stored;
  // the lines it returns join the sweep's notes (coordinator/actions: what was done about the
  // verdict). Must not block for long: actuators bound their commands.
  std::function<std::vector<std::string>(const SweepEnding& end)> on_end;
  // The coordinator's fabric (`--fabric`, the config's `fabric:`; null: none). At a sweep's end
  // every test between two workers matched to HCAs has its path traced from the LFTs and stored
  // in `paths` (when set), the localiser blames inter-switch links (link_blame.h) and the report's
  // notes tell the match and the sweep's coverage of the links.
  std::shared_ptr<const SweepFabric> fabric;
  // Where the fabric changes while the coordinator runs (fabric_source.h: a newer snapshot a
  // discovery stored); when set, it is read instead of `fabric`: at a sweep's planning, at each
  // test's start (its path is traced through the snapshot current then) and before each round's
  // counter reads.
  std::shared_ptr<FabricSource> fabric_source;
  // OpenSM's compute-node order (`fabric_ca_order:`, `--fabric-ca-order`; fabric::
  // parseFtreeCaOrder), read at the coordinator's start: a `cover` sweep's plan starts from it as
  // `gdrmesh sweep plan --ca-order` does, so both plan the same rounds. Empty: the greedy's alone.
  std::vector<uint16_t> fabric_ca_order;
  std::string fabric_ca_order_file;  // named in the plan's note
  // Or a RoCE fabric known from LLDP (sweep_lldp.h): the report's notes estimate which host
  // switch ports the tests touched and name a port that slow pairs share, labelled as estimates.
  std::shared_ptr<const fabric::EthFabric> lldp_fabric;
  TestPathStore* paths = nullptr;
  // With a fabric and a `fabric_reader:` (docs/fabric.md, "Counters"): the rounds run one after
  // the other, and the reader reads the port counters of every switch port on each round's
  // paths before and after it (bounded by read_timeout_seconds on the clock; a failed read is a
  // note, the sweep goes on). The changes are stored in `link_counters` (when set), judged by
  // the thresholds, and the links' verdicts stored there at the sweep's end.
  FabricCounterOptions counters;
  LinkCounterStore* link_counters = nullptr;
};

using SweepConfigParser = std::function<Result<ClusterConfig>(const std::string& yaml)>;

// What the run of a sweep and the reports share: the parts of the coordinator a sweep touches.
struct SweepDeps {
  WorkerDirectory& workers;
  Clock& clock;
  SweepStore& sweeps;
  ResultStore& results;
  ResultWriter& writer;
  const SweepCodec& codec;
  SweepConfigParser parse_config;
  // The links' verdicts for the reports (SweepManagerOptions::link_counters; null: none).
  LinkCounterStore* link_counters = nullptr;
};

// The sweep's config (none when its spec has no YAML).
Result<ClusterConfig> sweepConfigOf(const SweepConfigParser& parse, const SweepSpec& spec);
// The judge over a sweep's rows with the workers' labels and port rates of now.
JudgeVerdicts judgeSweepRows(const WorkerDirectory& workers, const JudgeRows& rows,
                             const ClusterConfig& config, const JudgeRows& baseline);
// The rows of the baseline sweep (`baseline`: an id, "previous" or "" for none), a page at a
// time.
Result<JudgeRows> sweepBaselineRows(SweepStore& sweeps, ResultStore& results,
                                    const std::string& baseline, const std::string& except_id);
// The reason stored with a sweep that a coordinator's shutdown stopped: the queue resumes such a
// sweep at the next start, as one left running by a kill.
constexpr const char* kSweepShutdownReason =
    "the coordinator shut down during the sweep; it resumes at the next start";
// A result of a retest: its plan index comes after the plan proper.
bool isRetestResult(const TestResult& r, size_t plan_size);
// How many tests of the plan proper each part (template) planned; parts are consecutive.
std::vector<uint64_t> sweepPartSizes(size_t parts, const std::vector<int>& template_of,
                                     size_t plan_size);

class SweepRunner {
 public:
  SweepRunner(SweepDeps deps, SweepBoard& board, SweepManagerOptions options);

  // Validates and plans `spec` into a new queued sweep (not yet on the board nor stored).
  // Errors name the field and the fix.
  Result<std::shared_ptr<LiveSweep>> plan(const SweepSpec& spec);
  // Runs the sweep to its end (or until it is cancelled or the board stops) and stores it.
  void run(const std::shared_ptr<LiveSweep>& s);
  // Stores the sweep's row, marks its tests in flight started and, when `final`, its report
  // and aggregates first.
  void checkpoint(const std::shared_ptr<LiveSweep>& s, bool final);
  // The sweep's stored row. board.mu held.
  SweepRecord recordOf(const LiveSweep& s) const;
  const SweepDeps& deps() const { return deps_; }

 private:
  Result<PlanTable> planAll(LiveSweep& s, const std::set<std::string>& assume_online,
                            std::vector<std::string>* notes);
  // A planned test that no transport of its workers can serve refuses the sweep.
  Status checkPlanCapabilities(const LiveSweep& s) const;
  // Marks the sweep running; false when the board stops first.
  bool begin(const std::shared_ptr<LiveSweep>& s);
  // A resumed sweep: waits (on directory events, bounded by the clock) for its hosts.
  void awaitHosts(const std::shared_ptr<LiveSweep>& s);
  // A resumed sweep's plan, made again; false (and the sweep ended) when it cannot be.
  bool replan(const std::shared_ptr<LiveSweep>& s);
  // Runs the plan's tests from index `from` that have no result yet; with a fabric reader, the
  // plan proper round by round with the counters read around each.
  void runTasks(const std::shared_ptr<LiveSweep>& s, size_t from);
  void runPending(const std::shared_ptr<LiveSweep>& s, std::shared_ptr<std::vector<int>> pending);
  void runRoundsWithCounters(const std::shared_ptr<LiveSweep>& s, const std::vector<int>& pending);
  // One read by the fabric reader, bounded by the clock (the channel's deadline).
  Result<fabric::CounterReadOutcome> readCounters(const std::vector<fabric::CounterPort>& ports);
  ExecutorTasks tasksOf(const std::shared_ptr<LiveSweep>& s,
                        std::shared_ptr<std::vector<int>> pending);
  // The judge's verdicts and the outliers over the plan proper's rows, which planned the
  // retests: when none followed and no baseline is asked for, the end judges with them rather
  // than judging the same rows twice (at 1,024 hosts a third of a second, issue #19).
  struct FirstJudgement {
    JudgeVerdicts verdicts;
    OutlierFindings outliers;
  };
  // Retests with known-good partners, when the sweep localises; the first judgement when no
  // retest ran.
  std::optional<FirstJudgement> runRetests(const std::shared_ptr<LiveSweep>& s);
  // With a fabric: traces and stores the rows' paths, returns the links to blame, adds the
  // match and coverage lines to `notes` and the inter-switch links no test crossed to `never`.
  std::vector<BlamedLink> fabricEnd(const LiveSweep& s, const JudgeRows& rows,
                                    const JudgeVerdicts& verdicts, std::vector<std::string>* notes,
                                    std::vector<DirectedLink>* never);
  // The counters' judgement and the links' verdicts (stored, and in `links` for the sweep's
  // verdict); `blamed` gets the counters' evidence, and the suspects of links with errors only
  // are returned.
  std::vector<Suspect> counterEnd(const LiveSweep& s, const std::vector<DirectedLink>& never,
                                  std::vector<BlamedLink>* blamed, std::vector<std::string>* notes,
                                  std::vector<LinkVerdictRecord>* links);
  // Judges the rows and sets the sweep's end (report_pending until checkpoint(final)).
  void judgeEnd(const std::shared_ptr<LiveSweep>& s, std::optional<FirstJudgement> first,
                SweepEnding* ending);
  // The end's state and verdict. board.mu held.
  void setEndState(LiveSweep& s, bool pass) ABSL_EXCLUSIVE_LOCKS_REQUIRED(board_.mu);
  // SweepManagerOptions::on_end and its lines as notes.
  void logEnd(const std::shared_ptr<LiveSweep>& s);
  // The log's account of the end: from the plan's last test to the retests' end, the verdict
  // and every result stored.
  struct EndTimes {
    Clock::TimePoint tests_ended, retests_ended, judged, stored;
  };
  void logEndTimes(const LiveSweep& s, const EndTimes& t);
  void tellEnd(const std::shared_ptr<LiveSweep>& s, SweepEnding ending);
  // The next periodic checkpoint (checkpoint_seconds on, on the clock's thread), which stores
  // progress and schedules the next into *timer, while `line` is open.
  Clock::TimerId scheduleTick(Lifeline::Ref line, Clock::TimerId* timer,
                              const std::shared_ptr<LiveSweep>& s);
  Status storeReport(const LiveSweep& s);
  // The fabric now: fabric_source's, else `fabric` (null: none).
  std::shared_ptr<const SweepFabric> fabricNow() const;
  // The rows' paths, each row's through the snapshot its test started on (the current one for a
  // row without a record); `used` gets the snapshots that traced some row and their row counts.
  RowPaths rowPaths(const LiveSweep& s, const JudgeRows& rows,
                    const std::shared_ptr<const SweepFabric>& current,
                    std::vector<std::pair<std::shared_ptr<const SweepFabric>, size_t>>* used,
                    std::vector<PathHopRecord>* hops);

  SweepDeps deps_;
  SweepBoard& board_;
  const SweepManagerOptions options_;
};

}  // namespace gdrmesh
