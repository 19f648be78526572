// The sweep vocabulary of the orchestrator: what a sweep is asked to do, the plan it runs,
// the verdicts it reaches and the suspects it names. Domain types only (no protobuf); the
// service layer converts them at its edge, once.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/pair_spec.h"

namespace gdrmesh {

enum class SweepPattern { kPairs, kAllPairs, kRails, kLoopback, kRandom, kCover, kBisection };
// one: each unordered pair once (A->B); both: A->B and B->A as two tests; bidir: one
// bidirectional test per pair.
enum class SweepDirection { kOne, kBoth, kBidir };

const char* toString(SweepPattern p);
std::optional<SweepPattern> parseSweepPattern(const std::string& s);  // "all-pairs", ...
const char* toString(SweepDirection d);
std::optional<SweepDirection> parseSweepDirection(const std::string& s);

struct SweepSpec {
  SweepPattern pattern = SweepPattern::kAllPairs;
  // Acceptance: no pattern of its own; runs the sweeps of config_yaml one after the other, as
  // one sweep (hosts/exclude/select here narrow every one of them).
  bool pattern_from_config = false;
  // kPairs: explicit (initiator, target) selectors; only worker and device are read.
  std::vector<std::pair<EndpointSelector, EndpointSelector>> pairs;
  // kCover: the rounds of disjoint pairs the cover planner (common/fabric/cover.h) made from the
  // coordinator's fabric, as workers and NICs; kBisection: the bisection planner's one round
  // (common/fabric/bisection.h). Filled by the sweep's run before planning (from the fabric of
  // now, on a resume too); never stored or sent.
  std::vector<std::vector<std::pair<EndpointSelector, EndpointSelector>>> cover_rounds;
  SweepDirection direction = SweepDirection::kOne;
  uint32_t random_rounds = 3;                 // kRandom: k perfect matchings
  uint64_t seed = 0;                          // kRandom: 0 = chosen by the coordinator and recorded
  std::vector<std::string> hosts;             // only these workers (empty = every online worker)
  std::vector<std::string> exclude;           // never these
  std::map<std::string, std::string> select;  // label selector: every KEY=VALUE must match
  PairTestSpec test;             // template; initiator/target supply memory, gpu, reg only
  std::vector<uint64_t> sizes;   // empty = test.message_size
  uint32_t max_concurrency = 0;  // 0 = limited by resources only
  uint32_t retries = 1;          // for transient errors, never for integrity failures
  std::string config_yaml;       // thresholds and host classes ("" = none)
  std::string name;              // e.g. the schedule that started it
  bool queue = false;            // wait behind a running sweep instead of being refused
  bool localise = true;          // retest failing pairs with known-good partners
  std::string baseline;          // sweep id, "previous", or "" for none
};

// What a sweep request may ask for (checked where it is converted; docs/security.md).
struct SweepLimits {
  size_t hosts = 100000;   // --hosts and --exclude entries, each
  size_t pairs = 1000000;  // explicit pairs
  size_t selectors = 32;   // --select KEY=VALUE entries
  size_t label_key = 63;   // as worker labels
  size_t label_value = 256;
  size_t device = 256;            // a pair's NIC name
  size_t text = 128;              // name, baseline
  size_t config_yaml = 1u << 20;  // 1 MiB
  size_t sizes = 64;
  uint32_t random_rounds = 100000;
  uint32_t retries = 10;
};

// One pair test the plan asks for. `round` orders the plan: tests of one round share no
// resource (NIC port, GPU, or whole host when no NIC is named).
struct PlannedTest {
  int round = 0;
  EndpointSelector initiator;  // worker, device (may be ""), memory, gpu, reg
  EndpointSelector target;
  uint64_t message_size = 0;
  bool bidirectional = false;
  std::string rail;  // "rail0", ... for kRails; "" otherwise
  bool retest = false;
  std::string retest_of;  // test id this retest re-examines
};

struct SweepPlan {
  std::vector<PlannedTest> tests;  // ordered by round
  int rounds = 0;
  uint64_t seed = 0;               // the seed used (kRandom)
  std::vector<std::string> notes;  // e.g. "hosts with unequal NIC counts: h3 has 1, others 2"
};

enum class VerdictKind { kPass, kFail, kSkip };
const char* toString(VerdictKind v);  // PASS, FAIL, SKIP

// The judge's word on one result.
struct PairVerdict {
  std::string test_id;
  std::string src;  // WORKER/NIC as tested ("h1/mlx5_0"; "h1" when no NIC)
  std::string dst;
  uint64_t message_size = 0;
  VerdictKind verdict = VerdictKind::kSkip;
  std::vector<std::string> reasons;  // each names the rule, the figure and the threshold
  double value = 0;                  // the judged figure
  std::string unit;                  // "Gb/s" or "us"
  std::string topo_class;
  bool retest = false;
  Op op = Op::kWrite;  // what the test ran
  Mode mode = Mode::kBandwidth;
};

// Which of two verdicts of one pair (or one cell of a matrix) speaks for it: a FAIL if any, else
// a PASS, else a SKIP; among those the largest message size. The status page and the terminal
// matrix and report use this one rule.
bool speaksBetter(const PairVerdict& a, const PairVerdict& b);

// Which of a report's verdicts a reader asks for, and which page of them (the CLI through
// GetSweep and JudgeSweep, the status page through /api/sweeps/ID).
enum class VerdictFilter { kAll, kFailed, kNone };  // kFailed: FAIL only
struct VerdictPage {
  uint64_t offset = 0;  // among the verdicts the filter keeps, in report order
  uint32_t limit = 0;   // 0 = no limit
};
// How many verdicts of each kind a report has, on every page.
struct VerdictCounts {
  uint64_t pass = 0, fail = 0, skip = 0;
  void add(VerdictKind v) {
    ++(v == VerdictKind::kPass ? pass : v == VerdictKind::kFail ? fail : skip);
  }
};
// Counts `all` and copies the page of the verdicts that `filter` keeps into `page_out`;
// returns how many the filter keeps on all pages.
uint64_t selectVerdicts(const std::vector<PairVerdict>& all, VerdictFilter filter, VerdictPage page,
                        VerdictCounts* counts, std::vector<PairVerdict>* page_out);

// A localisation suspect, ranked by score (higher = more likely at fault).
struct Suspect {
  std::string kind;  // host | nic | link | threshold (the whole fleet misses one)
  std::string name;  // "h3", "h3/mlx5_1", "h1/mlx5_0<->h3/mlx5_0"
  double score = 0;
  std::vector<std::string> evidence;  // "failed with 5 of 7 partners", ...
};

enum class SweepState { kQueued, kRunning, kFinished, kCancelled, kInterrupted, kFailed };
const char* toString(SweepState s);  // queued, running, finished, cancelled, interrupted, failed
std::optional<SweepState> parseSweepState(const std::string& s);

// What the end of a sweep tells those who act on it (SweepManagerOptions::on_end).
struct SweepEnding {
  std::string sweep_id;
  SweepState state = SweepState::kFinished;
  std::string verdict;             // PASS | FAIL
  std::string reason;              // why it failed, was cancelled, ...
  std::vector<std::string> hosts;  // the hosts the sweep tested
  std::vector<Suspect> suspects;   // ranked
  std::set<std::string> passing;   // hosts with at least one PASS verdict
  // The hosts of the cluster when the sweep ended: every worker the coordinator knows, online
  // or not (the circuit breaker's base: a share of the cluster, not of the sweep). 0: unknown,
  // the sweep's hosts stand in.
  size_t cluster_hosts = 0;
};

struct SweepProgress {
  std::string id;
  SweepState state = SweepState::kQueued;
  std::string pattern;
  std::string name;
  int64_t created_ms = 0, started_ms = 0, finished_ms = 0;
  uint32_t tests_total = 0, tests_done = 0, tests_failed = 0, tests_skipped = 0;
  uint32_t tests_running = 0, rounds_total = 0, retests = 0;
  double elapsed_seconds = 0;
  double eta_seconds = -1;
  std::string reason;
  std::string verdict;  // PASS | FAIL | "" while running
  // Every verdict of the report by kind (retests included, as `sweep show` counts them); zero
  // until judged. A sweep can FAIL on its thresholds with no failed test: these say so.
  VerdictCounts verdict_counts;
  // Ended and judged; the report is read from memory while its rows are being stored (final,
  // not yet durable). False for every sweep read from the store.
  bool report_pending = false;
};

}  // namespace gdrmesh
