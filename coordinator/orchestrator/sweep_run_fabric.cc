// The run of one sweep, its fabric part (sweep_run.h): the port counters read around each
// round, the paths of the rows traced through the fabric current when each test started, and at
// the end the links blamed by the paths and judged by the counters.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string_view>
#include <utility>

#include "common/capabilities.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/sync/event.h"
#include "common/sync/mutex.h"
#include "common/units.h"
#include "coordinator/orchestrator/judge.h"
#include "coordinator/orchestrator/localiser.h"
#include "coordinator/orchestrator/outliers.h"
#include "coordinator/orchestrator/planner.h"
#include "coordinator/orchestrator/sweep_report_rows.h"
#include "coordinator/orchestrator/sweep_run.h"

namespace gdrmesh {

namespace {

// How long past its deadline a counter read is waited for: the channel fails the call at the
// deadline (its contract), possibly on another thread; this is the margin for that answer.
constexpr std::chrono::seconds kCounterReadGrace{1};

// The sweeps' log lines (as sweep_run.cc's), timed by the run's clock.
ComponentLog sweepFabricLog(const Clock& clock) {
  return ComponentLog("coordinator", &clock);
}

}  // namespace

Result<fabric::CounterReadOutcome> SweepRunner::readCounters(
    const std::vector<fabric::CounterPort>& ports) {
  const std::string& reader = options_.counters.reader;
  std::shared_ptr<WorkerChannel> channel = deps_.workers.channel(reader);
  if (!channel) {
    return unavailable("fabric_reader " + reader + " is not online",
                       "start `gdrmesh worker` on that InfiniBand host, or name another real "
                       "worker as fabric_reader in the coordinator's config");
  }
  fabric::CounterReadRequest req;
  req.ports = ports;
  req.reset = options_.counters.reset;
  // The channel answers by its deadline on the clock (WorkerChannel's contract). The wait is on
  // the clock too, a moment past that deadline: a channel that broke its contract holds the
  // round no longer than one that kept it (issue #19: no wait outside gdrmesh::Clock).
  struct Answer {
    Mutex mu;
    std::condition_variable cv;
    std::optional<Result<fabric::CounterReadOutcome>> got ABSL_GUARDED_BY(mu);
  };
  auto answer = std::make_shared<Answer>();
  const Clock::TimePoint deadline = deps_.clock.after(options_.counters.read_timeout_seconds);
  channel->readPortCounters(req, deadline, [answer](Result<fabric::CounterReadOutcome> r) {
    MutexLock lock(answer->mu);
    answer->got = std::move(r);
    answer->cv.notify_all();
  });
  Result<fabric::CounterReadOutcome> r = fabric::CounterReadOutcome{};
  {
    UniqueLock lock(answer->mu);
    const bool answered = waitUntil(
        deps_.clock, lock.native(), answer->cv, deadline + kCounterReadGrace,
        [&answer]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(answer->mu) { return answer->got.has_value(); });
    if (!answered) {
      return Status(Code::kDeadlineExceeded,
                    "fabric_reader " + reader + " did not answer the counter read within " +
                        std::to_string(options_.counters.read_timeout_seconds) + " s",
                    "check that worker's link to the coordinator, or name another real "
                    "worker as fabric_reader in the coordinator's config");
    }
    r = std::move(*answer->got);
  }
  if (r.ok() && !r->status.ok()) return r->status.withContext("fabric_reader " + reader);
  if (!r.ok()) return r.status().withContext("fabric_reader " + reader);
  return r;
}

void SweepRunner::runRoundsWithCounters(const std::shared_ptr<LiveSweep>& s,
                                        const std::vector<int>& pending) {
  std::map<int, std::vector<int>> by_round;
  for (int i : pending) by_round[s->plan.round(static_cast<size_t>(i))].push_back(i);
  {
    // The rows of every round at once: each round's own reserve (tasksOf) is then a no-op
    // instead of a copy of every row so far (1,023 rounds at 1,024 hosts).
    MutexLock lock(board_.mu);
    s->rows.reserve(s->rows.size() + pending.size());
  }
  const ComponentLog log = sweepFabricLog(deps_.clock);
  for (auto& [round, indexes] : by_round) {
    {
      MutexLock lock(board_.mu);
      if (s->cancel_requested || board_.stopping) return;
    }
    std::vector<std::pair<EndpointSelector, EndpointSelector>> pairs;
    for (int i : indexes) {
      const auto k = static_cast<size_t>(i);
      pairs.emplace_back(s->plan.initiator(k), s->plan.target(k));
    }
    // The tables of now: a snapshot stored since the last round moves the paths it reads.
    const std::shared_ptr<const SweepFabric> now = fabricNow();
    const SweepFabric& fab = *now;
    const fabric::HostMatch match = fab.match(deps_.workers.list());
    size_t untraced = 0;
    const std::vector<fabric::CounterPort> ports = roundCounterPorts(fab, match, pairs, &untraced);
    Result<fabric::CounterReadOutcome> before = fabric::CounterReadOutcome{};
    if (!ports.empty()) {
      before = readCounters(ports);
      log.info("sweep " + s->id + ": round " + std::to_string(round) + ": counters of " +
                   std::to_string(ports.size()) + " switch ports read before it by " +
                   options_.counters.reader + (before.ok() ? "" : " (failed)"),
               {{"sweep", s->id}, {"round", round}, {"ports", ports.size()}});
    }
    const Clock::TimePoint started = deps_.clock.now();
    runPending(s, std::make_shared<std::vector<int>>(std::move(indexes)));
    if (ports.empty()) continue;
    if (!before.ok()) {
      s->counter_notes.push_back("fabric counters: round " + std::to_string(round) +
                                 " not read before it: " + before.status().toString());
      log.warn("sweep " + s->id + ": " + s->counter_notes.back(), {{"sweep", s->id}});
      continue;
    }
    Result<fabric::CounterReadOutcome> after = readCounters(ports);
    const double seconds = std::chrono::duration<double>(deps_.clock.now() - started).count();
    if (!after.ok()) {
      s->counter_notes.push_back("fabric counters: round " + std::to_string(round) +
                                 " not read after it: " + after.status().toString());
      log.warn("sweep " + s->id + ": " + s->counter_notes.back(), {{"sweep", s->id}});
      continue;
    }
    RoundCounterDeltas d = roundCounterDeltas(fab, s->id, round, seconds, *before, *after);
    for (const auto& p : after->ports) {
      if (p.status.ok()) s->counter_ports_read.emplace(p.port.guid, p.port.port);
    }
    for (auto& f : d.findings) s->counter_notes.push_back(std::move(f));
    if (options_.link_counters != nullptr && !d.rows.empty()) {
      Status st = options_.link_counters->putLinkCounters(d.rows);
      if (!st.ok()) {
        s->counter_notes.push_back("fabric counters: round " + std::to_string(round) +
                                   " not stored: " + st.toString());
      }
    }
    s->counter_rows.insert(s->counter_rows.end(), std::make_move_iterator(d.rows.begin()),
                           std::make_move_iterator(d.rows.end()));
  }
}

std::shared_ptr<const SweepFabric> SweepRunner::fabricNow() const {
  return options_.fabric_source ? options_.fabric_source->current() : options_.fabric;
}

RowPaths SweepRunner::rowPaths(
    const LiveSweep& s, const JudgeRows& rows, const std::shared_ptr<const SweepFabric>& current,
    std::vector<std::pair<std::shared_ptr<const SweepFabric>, size_t>>* used,
    std::vector<PathHopRecord>* hops) {
  // Each row's snapshot: 0 the current one, k the sweep's k-th.
  std::vector<size_t> of(rows.size(), 0);
  std::vector<size_t> count(s.fabrics.size() + 1, 0);
  for (size_t i = 0; i < rows.size(); ++i) {
    const int32_t pi = rows[i].plan_index;
    size_t k = 0;
    if (pi >= 0 && static_cast<size_t>(pi) < s.test_fabric.size()) k = s.test_fabric[pi];
    // The current snapshot is traced as itself, whichever entry recorded it.
    if (k > 0 && s.fabrics[k - 1] == current) k = 0;
    of[i] = k;
    ++count[k];
  }
  const std::vector<WorkerStatus> workers = deps_.workers.list();
  RowPaths out;
  for (size_t k = 0; k < count.size(); ++k) {
    if (count[k] == 0) continue;
    const std::shared_ptr<const SweepFabric>& fk = k == 0 ? current : s.fabrics[k - 1];
    const SweepFabric& f = *fk;
    if (count[k] == rows.size()) {  // one snapshot for every row: as before any change
      out = f.paths(rows, f.match(workers));
      *hops = f.hopRecords(rows, out, s.id);
      used->emplace_back(fk, count[k]);
      break;
    }
    std::vector<bool> only(rows.size(), false);
    for (size_t i = 0; i < rows.size(); ++i) only[i] = of[i] == k;
    RowPaths p = f.paths(rows, f.match(workers), &only);
    // The hops first: the merge below moves the paths out of `p`.
    std::vector<PathHopRecord> h = f.hopRecords(rows, p, s.id);
    hops->insert(hops->end(), std::make_move_iterator(h.begin()), std::make_move_iterator(h.end()));
    if (out.known.empty()) {
      out.known.assign(rows.size(), false);
      out.forward.resize(rows.size());
      out.reverse.resize(rows.size());
      out.forward_links.resize(rows.size());
      out.reverse_links.resize(rows.size());
    }
    for (size_t i = 0; i < rows.size(); ++i) {
      if (!only[i] || !p.known[i]) continue;
      out.known[i] = true;
      out.forward[i] = std::move(p.forward[i]);
      out.reverse[i] = std::move(p.reverse[i]);
      out.forward_links[i] = std::move(p.forward_links[i]);
      out.reverse_links[i] = std::move(p.reverse_links[i]);
    }
    out.untraced += p.untraced;
    if (out.first_error.empty()) out.first_error = p.first_error;
    used->emplace_back(fk, count[k]);
  }
  if (out.known.empty()) out = current->paths(rows, current->match(workers));  // no rows
  // The snapshots in the order they were seen, the current one last.
  if (used->size() > 1 && used->front().first == current) {
    std::rotate(used->begin(), used->begin() + 1, used->end());
  }
  return out;
}

namespace {

// The snapshots a sweep's paths were traced through, and how many tests each.
using UsedFabrics = std::vector<std::pair<std::shared_ptr<const SweepFabric>, size_t>>;

// The notes on the paths: the snapshots they were traced through when the tables changed during
// the sweep, and the tests between matched workers that have none.
void pathNotes(const UsedFabrics& used, const RowPaths& paths, const SweepFabric& current,
               std::vector<std::string>* notes) {
  if (used.size() > 1) {
    std::string line =
        "fabric: the tables changed during the sweep (a newer snapshot was stored);"
        " each test's path is traced through the snapshot current when it started:";
    for (size_t k = 0; k < used.size(); ++k) {
      line += (k == 0 ? " " : ", ") + std::to_string(used[k].second) + " tests through " +
              used[k].first->source();
    }
    notes->push_back(line);
  }
  if (paths.untraced > 0) {
    std::string sources;
    for (const auto& u : used) sources += (sources.empty() ? "" : ", ") + u.first->source();
    notes->push_back("fabric: " + std::to_string(paths.untraced) +
                     " tests between matched workers have no path in the LFTs of " +
                     (sources.empty() ? current.source() : sources) +
                     " (first: " + paths.first_error +
                     "); rediscover the fabric (`gdrmesh fabric discover --save`)");
  }
}

// The tests' hops into `store`, in batches of about 10,000 hops (a test's hops in one batch),
// each its own short transaction; a failed write is a note and ends the writing.
void storeTestPaths(TestPathStore& store, const std::vector<PathHopRecord>& hops,
                    std::vector<std::string>* notes) {
  size_t from = 0;
  while (from < hops.size()) {
    size_t to = std::min(hops.size(), from + 10000);
    while (to < hops.size() && hops[to].test_id == hops[to - 1].test_id) ++to;
    std::vector<PathHopRecord> batch(hops.begin() + static_cast<std::ptrdiff_t>(from),
                                     hops.begin() + static_cast<std::ptrdiff_t>(to));
    Status st = store.putTestPaths(batch);
    if (!st.ok()) {
      notes->push_back("fabric: the tests' paths were not stored: " + st.toString());
      break;
    }
    from = to;
  }
}

// A bisection round's tests ran at once: a note per round of their summed bandwidth against the
// fabric's bound.
void bisectionNotes(const LiveSweep& s, const JudgeRows& rows, std::vector<std::string>* notes) {
  struct RoundSum {
    size_t tests = 0;
    double gbps = 0;
    bool bidirectional = false;
  };
  std::map<int, RoundSum> sums;
  for (const JudgeRow& r : rows) {
    if (r.retest || !r.has_bandwidth || r.plan_index < 0 ||
        static_cast<size_t>(r.plan_index) >= s.plan.size()) {
      continue;
    }
    const auto k = static_cast<size_t>(r.plan_index);
    if (s.bisection_rounds.count(s.plan.round(k)) == 0) continue;
    RoundSum& sum = sums[s.plan.round(k)];
    ++sum.tests;
    sum.gbps += r.bw_avg_gbps;
    sum.bidirectional = sum.bidirectional || s.plan.bidirectional(k);
  }
  for (const auto& [round, sum] : sums) {
    notes->push_back(SweepFabric::bisectionNote(round, sum.tests, sum.gbps, s.bisection_gbps,
                                                sum.bidirectional));
  }
}

}  // namespace

std::vector<BlamedLink> SweepRunner::fabricEnd(const LiveSweep& s, const JudgeRows& rows,
                                               const JudgeVerdicts& verdicts,
                                               std::vector<std::string>* notes,
                                               std::vector<DirectedLink>* never) {
  const std::shared_ptr<const SweepFabric> now = fabricNow();
  if (!now) return {};
  const SweepFabric& fab = *now;
  const std::vector<WorkerStatus> workers = deps_.workers.list();
  const fabric::HostMatch match = fab.match(workers);
  const std::string matched = fabric::describeMatch(match, workers.size());
  notes->push_back(matched);
  if (!match.workers_without_hca.empty() || !match.hcas_without_worker.empty() ||
      !match.problems.empty()) {
    sweepFabricLog(deps_.clock).warn("sweep " + s.id + ": " + matched, {{"sweep", s.id}});
  }
  UsedFabrics used;
  std::vector<PathHopRecord> hops;
  const RowPaths paths = rowPaths(s, rows, now, &used, &hops);
  pathNotes(used, paths, fab, notes);
  if (options_.paths != nullptr) storeTestPaths(*options_.paths, hops, notes);
  const FabricCoverage coverage = fab.coverage(rows, paths);
  for (auto& line : fab.coverageNotes(coverage)) notes->push_back(std::move(line));
  *never = coverage.never;
  if (!s.bisection_rounds.empty()) bisectionNotes(s, rows, notes);
  return blameLinks(rows, verdicts, paths, fab);
}

std::vector<Suspect> SweepRunner::counterEnd(const LiveSweep& s,
                                             const std::vector<DirectedLink>& never,
                                             std::vector<BlamedLink>* blamed,
                                             std::vector<std::string>* notes,
                                             std::vector<LinkVerdictRecord>* links) {
  const std::shared_ptr<const SweepFabric> now = fabricNow();
  if (!now) return {};
  if (options_.counters.reader.empty()) {
    notes->push_back(
        "fabric counters: not read (no fabric_reader in the coordinator's config; name a real "
        "worker on an InfiniBand host, `fabric_reader: WORKER`, to read the switch ports' "
        "counters around each round)");
    // The cables the slow pairs share are judged from the paths alone: slow_pairs verdicts
    // (stored, and failing the sweep with a reason that names them), said to rest on no counters.
    *links = linkVerdictsFromPaths(*now, s.id, *blamed);
    if (options_.link_counters != nullptr && !links->empty()) {
      Status st = options_.link_counters->putLinkVerdicts(s.id, *links);
      if (!st.ok()) {
        notes->push_back("fabric: the links' verdicts were not stored: " + st.toString());
      }
    }
    return {};
  }
  const SweepFabric& fab = *now;
  notes->insert(notes->end(), s.counter_notes.begin(), s.counter_notes.end());
  const std::vector<CounterExcess> excess =
      judgeCounters(s.counter_rows, options_.counters.thresholds);
  std::set<DirectedLink> read;
  for (const auto& [guid, port] : s.counter_ports_read) read.insert({guid, port});
  LinkJudgement j = judgeLinks(fab, s.id, read, excess, *blamed, never);
  size_t bad = 0;
  for (const auto& v : j.verdicts) bad += fabric::linkVerdictFails(v.verdict) ? 1 : 0;
  notes->push_back("fabric counters: " + std::to_string(s.counter_ports_read.size()) +
                   " switch ports read around the rounds by " + options_.counters.reader + "; " +
                   std::to_string(excess.size()) + " counters over their thresholds; " +
                   std::to_string(bad) + " of " + std::to_string(j.verdicts.size()) +
                   " links not ok");
  for (const CounterExcess& e : excess) notes->push_back("fabric counters: " + e.text);
  if (options_.link_counters != nullptr) {
    Status st = options_.link_counters->putLinkVerdicts(s.id, j.verdicts);
    if (!st.ok()) notes->push_back("fabric: the links' verdicts were not stored: " + st.toString());
  }
  *links = j.verdicts;
  // The first |blamed| suspects are link_blame's, with the counters' evidence merged in.
  for (size_t i = 0; i < blamed->size() && i < j.link_suspects.size(); ++i) {
    (*blamed)[i].suspect = j.link_suspects[i];
  }
  return {j.link_suspects.begin() +
              static_cast<std::ptrdiff_t>(std::min(blamed->size(), j.link_suspects.size())),
          j.link_suspects.end()};
}

}  // namespace gdrmesh
