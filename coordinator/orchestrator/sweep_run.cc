#include "coordinator/orchestrator/sweep_run.h"

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

namespace gdrmesh {

namespace {

std::string newSweepId(int64_t unix_ms) {
  static std::mt19937 rng{std::random_device{}()};
  static Mutex mu;
  uint32_t r;
  {
    MutexLock lock(mu);
    r = rng() & 0xffff;
  }
  char buf[8];
  std::snprintf(buf, sizeof(buf), "%04x", r);
  std::string compact;
  for (char c : formatRfc3339(unix_ms).substr(0, 19)) {
    if (c != '-' && c != ':') compact += c;
  }
  return "s-" + compact + "-" + buf;
}

PairTestSpec sweepTestSpec(const PairTestSpec& tmpl, const PlannedTest& t,
                           const std::string& run_id) {
  PairTestSpec s = tmpl;
  s.initiator = t.initiator;
  s.target = t.target;
  s.message_size = t.message_size;
  s.bidirectional = t.bidirectional || tmpl.bidirectional;
  s.run_id = run_id;
  return s;
}

// The parts of a sweep: the config's sweeps for an acceptance sweep (no pattern of its own, a
// config with sweeps), run one after the other as one sweep; else the spec itself.
Result<std::vector<SweepSpec>> sweepPartsOf(const SweepSpec& spec, const ClusterConfig& config) {
  if (!spec.pattern_from_config) return std::vector<SweepSpec>{spec};
  if (config.sweeps.empty()) {
    return invalidArgument("config: no sweeps under `sweeps:`",
                           "add at least one sweep, e.g. `- pattern: all-pairs`");
  }
  std::vector<SweepSpec> parts;
  for (SweepSpec s : config.sweeps) {
    if (s.hosts.empty()) s.hosts = spec.hosts;
    if (s.exclude.empty()) s.exclude = spec.exclude;
    if (s.select.empty()) s.select = spec.select;
    parts.push_back(std::move(s));
  }
  return parts;
}

}  // namespace

Result<ClusterConfig> sweepConfigOf(const SweepConfigParser& parse, const SweepSpec& spec) {
  if (spec.config_yaml.empty()) return ClusterConfig{};
  if (!parse) return unimplemented("config: this coordinator cannot parse configs");
  return parse(spec.config_yaml);
}

JudgeVerdicts judgeSweepRows(const WorkerDirectory& workers, const JudgeRows& rows,
                             const ClusterConfig& config, const JudgeRows& baseline) {
  return judgeRows(rows, config, judgeContextFrom(workers.list()), baseline);
}

bool isRetestResult(const TestResult& r, size_t plan_size) {
  return r.plan_index >= 0 && static_cast<size_t>(r.plan_index) >= plan_size;
}

std::vector<uint64_t> sweepPartSizes(size_t parts, const std::vector<int>& template_of,
                                     size_t plan_size) {
  std::vector<uint64_t> n(parts, 0);
  for (size_t i = 0; i < plan_size && i < template_of.size(); ++i) {
    const auto t = static_cast<size_t>(template_of[i]);
    if (t < n.size()) ++n[t];
  }
  return n;
}

SweepRunner::SweepRunner(SweepDeps deps, SweepBoard& board, SweepManagerOptions options)
    : deps_(std::move(deps)), board_(board), options_(std::move(options)) {
  if (deps_.link_counters == nullptr) deps_.link_counters = options_.link_counters;
}

Result<PlanTable> SweepRunner::planAll(LiveSweep& s, const std::set<std::string>& assume_online,
                                       std::vector<std::string>* notes) {
  GDR_ASSIGN_OR_RETURN(std::vector<SweepSpec> parts, sweepPartsOf(s.spec, s.config));
  auto workers = deps_.workers.list();
  // A resumed sweep is planned again for the hosts it was made for, online or not yet.
  for (auto& w : workers) {
    if (assume_online.count(w.name)) w.state = "online";
  }
  PlanTable all;
  s.templates.clear();
  s.template_of.clear();
  s.rounds = 0;
  const std::shared_ptr<const SweepFabric> fab = fabricNow();
  for (size_t p = 0; p < parts.size(); ++p) {
    if (parts[p].pattern == SweepPattern::kCover) {
      if (!fab) {
        return failedPrecondition(
            "pattern cover: the coordinator has no fabric",
            "start it with --fabric FILE (a snapshot `gdrmesh fabric discover --save FILE` "
            "wrote), or `fabric: FILE` in its --config");
      }
      GDR_RETURN_IF_ERROR(fab->coverRounds(workers, &parts[p], notes, options_.fabric_ca_order,
                                           options_.fabric_ca_order_file));
    }
    double bisection_gbps = 0;
    if (parts[p].pattern == SweepPattern::kBisection) {
      if (!fab) {
        return failedPrecondition(
            "pattern bisection: the coordinator has no fabric to choose the halves from",
            "start it with --fabric FILE (a snapshot `gdrmesh fabric discover --save FILE` "
            "wrote), or `fabric: FILE` in its --config");
      }
      GDR_RETURN_IF_ERROR(fab->bisectionRounds(workers, &parts[p], notes, &bisection_gbps));
    }
    // The template names no workers (the plan does): validate the rest.
    PairTestSpec probe = parts[p].test;
    probe.initiator.worker = probe.target.worker = "planned";
    GDR_RETURN_IF_ERROR(validatePairTestSpec(probe, PairTestLimits{}));
    auto plan = planSweep(parts[p], workers);
    if (!plan.ok()) {
      return parts.size() > 1 ? plan.status().withContext("sweeps[" + std::to_string(p) + "]")
                              : plan.status();
    }
    s.templates.push_back(parts[p].test);
    all.reserve(all.size() + plan->tests.size());
    for (auto& t : plan->tests) {
      t.round += s.rounds;
      all.append(t);
      s.template_of.push_back(static_cast<int>(p));
    }
    if (parts[p].pattern == SweepPattern::kBisection) {
      s.bisection_gbps = bisection_gbps;
      for (int r = 0; r < plan->rounds; ++r) s.bisection_rounds.insert(s.rounds + r);
    }
    s.rounds += plan->rounds;
    s.seed = plan->seed;
    for (auto& n : plan->notes) notes->push_back(std::move(n));
  }
  if (all.empty()) {
    return failedPrecondition("sweep: the plan has no tests",
                              "check --hosts/--exclude/--select and that workers are online "
                              "(`gdrmesh workers`)");
  }
  return all;
}

Status SweepRunner::checkPlanCapabilities(const LiveSweep& s) const {
  // Capabilities before operations: a planned test that no transport of its workers can serve
  // refuses the sweep before any worker is contacted, naming it and how many share it.
  Status first;
  size_t impossible = 0;
  std::map<std::string, std::shared_ptr<const WorkerStatus>> seen;
  auto get = [&](const std::string& name) {
    auto it = seen.find(name);
    if (it == seen.end()) it = seen.emplace(name, deps_.workers.get(name)).first;
    return it->second;
  };
  for (size_t i = 0; i < s.plan.size(); ++i) {
    const PairTestSpec t =
        sweepTestSpec(s.templates[static_cast<size_t>(s.template_of[i])], s.plan[i], "");
    auto ini = get(t.initiator.worker);
    auto tgt = get(t.target.worker);
    if (!ini || !tgt) continue;  // gone since planning: the run reports it
    Status st = checkCapabilities(t, *ini, *tgt);
    if (!st.ok() && impossible++ == 0) first = st;
  }
  if (impossible == 0) return Status();
  return Status(first.code(),
                "sweep: " + std::to_string(impossible) + " of " + std::to_string(s.plan.size()) +
                    " planned tests cannot run; first: " + first.message(),
                first.fix());
}

Result<std::shared_ptr<LiveSweep>> SweepRunner::plan(const SweepSpec& spec) {
  auto s = std::make_shared<LiveSweep>();
  s->spec = spec;
  GDR_ASSIGN_OR_RETURN(s->config, sweepConfigOf(deps_.parse_config, spec));
  GDR_ASSIGN_OR_RETURN(s->plan, planAll(*s, {}, &s->notes));
  s->plan_size = s->plan.size();
  s->part_sizes = sweepPartSizes(s->templates.size(), s->template_of, s->plan_size);
  GDR_RETURN_IF_ERROR(checkPlanCapabilities(*s));
  if (s->spec.seed == 0) s->spec.seed = s->seed;
  std::set<std::string> hosts;
  for (const EndpointSelector& e : s->plan.endpoints()) hosts.insert(e.worker);
  s->hosts.assign(hosts.begin(), hosts.end());
  s->created_ms = deps_.clock.unixMs();
  s->id = newSweepId(s->created_ms);
  return s;
}

SweepRecord SweepRunner::recordOf(const LiveSweep& s) const {
  SweepRecord rec;
  rec.id = s.id;
  rec.state = toString(s.state);
  rec.pattern = s.spec.pattern_from_config ? "config" : toString(s.spec.pattern);
  rec.name = s.spec.name;
  rec.spec_json = deps_.codec.encode(s.spec);
  // The plan is rebuilt on resume from the spec (seed included) and these hosts.
  nlohmann::json pj;
  pj["hosts"] = s.hosts;
  pj["plan_size"] = s.plan_size;
  pj["parts"] = s.part_sizes;  // planned tests per part, in order (SweepPart)
  pj["rounds"] = s.rounds;
  pj["seed"] = std::to_string(s.seed);
  rec.plan_json = pj.dump();
  rec.created_ms = s.created_ms;
  rec.started_ms = s.started_ms;
  rec.finished_ms = s.finished_ms;
  rec.tests_total = s.needs_plan ? s.stored_total : static_cast<uint32_t>(s.plan.size());
  rec.reason = s.reason;
  rec.verdict = s.verdict;
  rec.verdicts_pass = static_cast<uint32_t>(s.verdict_counts.pass);
  rec.verdicts_fail = static_cast<uint32_t>(s.verdict_counts.fail);
  rec.verdicts_skip = static_cast<uint32_t>(s.verdict_counts.skip);
  return rec;
}

Clock::TimerId SweepRunner::scheduleTick(Lifeline::Ref line, Clock::TimerId* timer,
                                         const std::shared_ptr<LiveSweep>& s) {
  // Called inside one of `line`'s runs; `timer` is the caller's, reached only inside them.
  return deps_.clock.schedule(deps_.clock.after(options_.checkpoint_seconds),
                              [this, line, timer, s] {
                                line.run([&] {
                                  checkpoint(s, false);
                                  *timer = scheduleTick(line, timer, s);
                                });
                              });
}

namespace {

// The sweeps' log lines, timed by the run's clock.
ComponentLog sweepRunLog(const Clock& clock) {
  return ComponentLog("coordinator", &clock);
}

void logSweepError(const Clock& clock, const std::string& id, const std::string& what,
                   const Status& st) {
  if (st.ok()) return;
  sweepRunLog(clock).error("sweep " + id + ": " + what + st.toString(), {{"sweep", id}});
}

}  // namespace

void SweepRunner::checkpoint(const std::shared_ptr<LiveSweep>& s, bool final) {
  SweepRecord rec;
  std::vector<SweepTestStart> starts;
  {
    MutexLock lock(board_.mu);
    rec = recordOf(*s);
    for (const auto& [idx, tid] : s->in_flight) {
      if (!s->marked.insert(idx).second) continue;
      SweepTestStart m;
      m.plan_index = idx;
      m.test_id = tid;
      if (idx >= 0 && static_cast<size_t>(idx) < s->plan.size()) {
        const auto i = static_cast<size_t>(idx);
        m.initiator_worker = s->plan.initiator(i).worker;
        m.initiator_nic = s->plan.initiator(i).device;
        m.target_worker = s->plan.target(i).worker;
        m.target_nic = s->plan.target(i).device;
        m.message_size = s->plan.messageSize(i);
      }
      starts.push_back(std::move(m));
    }
  }
  // Tests in flight at this moment are marked started, with their pair: after a kill -9 they
  // are the ones recorded as interrupted.
  for (SweepTestStart& m : starts) {
    m.started_ms = deps_.clock.unixMs();
    (void)deps_.sweeps.markSweepTestStarted(s->id, m);
  }
  // An ended sweep's report rows are stored before its row says it ended. s->rows, verdicts,
  // suspects and notes change only on the sweep's own thread (this one), before this call.
  const Clock::TimePoint t0 = deps_.clock.now();
  if (final) logSweepError(deps_.clock, s->id, "storing its report: ", storeReport(*s));
  logSweepError(deps_.clock, s->id, "", deps_.sweeps.updateSweep(rec));
  const Clock::TimePoint t1 = deps_.clock.now();
  // An ended sweep's per-pair aggregates and totals are kept forever (retention deletes raw
  // rows only). Every result is stored by now (the run flushes the writer before judging).
  if (final && rec.state != toString(SweepState::kRunning) &&
      rec.state != toString(SweepState::kQueued)) {
    logSweepError(deps_.clock, s->id, "", deps_.sweeps.aggregateSweep(rec.id, rec.tests_total));
  }
  if (!final) return;
  // What the end of a sweep costs before its report can be read (at 1,024 hosts, half a
  // million verdict rows): operators and tests/bench/coordinator_scale.sh read it here.
  const auto ms = [](Clock::Duration d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  };
  const int64_t report_ms = ms(t1 - t0);
  const int64_t aggregates_ms = ms(deps_.clock.now() - t1);
  sweepRunLog(deps_.clock)
      .info("sweep " + s->id + ": report stored (" + std::to_string(s->verdicts.size()) +
                " verdicts) in " + std::to_string(report_ms) + " ms, aggregates in " +
                std::to_string(aggregates_ms) + " ms",
            {{"sweep", s->id},
             {"verdicts", s->verdicts.size()},
             {"report_ms", report_ms},
             {"aggregates_ms", aggregates_ms}});
}

Status SweepRunner::storeReport(const LiveSweep& s) {
  // Verdicts are made one at a time as they are written: never all at once (~180 MB of
  // PairVerdicts at 1024 hosts).
  return storeSweepReport(
      deps_.sweeps, s.id, s.verdicts.size(),
      [&](size_t i) { return verdictOf(s.rows, s.verdicts, i); }, s.suspects, s.notes,
      kReportVerdictBatch, &s.figures);
}

bool SweepRunner::begin(const std::shared_ptr<LiveSweep>& s) {
  {
    MutexLock lock(board_.mu);
    if (board_.stopping) return false;
    s->state = SweepState::kRunning;
    if (s->started_ms == 0) s->started_ms = deps_.clock.unixMs();
    s->started_at = deps_.clock.now();
    board_.publish(*s);
  }
  sweepRunLog(deps_.clock)
      .info("sweep " + s->id + (s->resumed ? " resumed" : " started") + ": " +
                std::to_string(s->hosts.size()) + " hosts",
            {{"sweep", s->id}, {"hosts", s->hosts.size()}, {"resumed", s->resumed}});
  checkpoint(s, false);
  return true;
}

void SweepRunner::awaitHosts(const std::shared_ptr<LiveSweep>& s) {
  // After a coordinator restart the workers dial back with backoff: give them a bounded moment
  // (on the clock) before their tests would end as "offline". Each registration is a directory
  // event that wakes the wait.
  const WorkerDirectory::WatchId watch = deps_.workers.watch([this](const std::string&) {
    { MutexLock wake(board_.mu); }  // the waiter waits or has not looked yet
    board_.cv.notify_all();
  });
  {
    UniqueLock lock(board_.mu);
    (void)waitUntil(
        deps_.clock, lock.native(), board_.cv, deps_.clock.after(options_.resume_wait_seconds),
        [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(board_.mu) {
          if (board_.stopping || s->cancel_requested) return true;
          return std::all_of(s->hosts.begin(), s->hosts.end(), [&](const std::string& h) {
            auto w = deps_.workers.get(h);
            return w && w->online();
          });
        });
  }
  deps_.workers.unwatch(watch);  // without board_.mu: a running callback takes it
}

bool SweepRunner::replan(const std::shared_ptr<LiveSweep>& s) {
  // The plan of a resumed sweep, made again now that its hosts had their moment to come back
  // (offline ones stay in it: their tests end as FAILED "offline", never vanish). Only this
  // thread reads the plan's fields while needs_plan is set.
  const std::set<std::string> recorded(s->hosts.begin(), s->hosts.end());
  LiveSweep fresh;
  fresh.spec = s->spec;
  fresh.config = s->config;
  std::vector<std::string> notes;
  auto plan = planAll(fresh, recorded, &notes);
  std::string why;
  if (!plan.ok()) {
    why = plan.status().message();
  } else if (s->plan_size != 0 && plan->size() != s->plan_size) {
    why = "the plan now has " + std::to_string(plan->size()) + " tests, not the " +
          std::to_string(s->plan_size) + " it was made with (the hosts' NICs changed?)";
  }
  {
    MutexLock lock(board_.mu);
    if (why.empty()) {
      s->plan = std::move(*plan);
      s->plan_size = s->plan.size();
      s->templates = std::move(fresh.templates);
      s->template_of = std::move(fresh.template_of);
      s->part_sizes = sweepPartSizes(s->templates.size(), s->template_of, s->plan_size);
      s->rounds = fresh.rounds;
      s->seed = fresh.seed;
      for (auto& n : notes) s->notes.push_back(std::move(n));
      s->needs_plan = false;
    } else {
      s->state = SweepState::kInterrupted;
      s->reason = "interrupted by a coordinator restart; it cannot be planned again: " + why +
                  " (run it again with `gdrmesh sweep run`)";
      s->finished_ms = deps_.clock.unixMs();
      board_.publish(*s);
    }
  }
  if (!why.empty()) checkpoint(s, false);
  return why.empty();
}

ExecutorTasks SweepRunner::tasksOf(const std::shared_ptr<LiveSweep>& s,
                                   std::shared_ptr<std::vector<int>> pending) {
  // Each test's spec is made when it starts. s->plan, templates and template_of change only on
  // the sweep's thread, between runs.
  {
    // One allocation for the run's rows: growing by doubling copies every row once more per
    // doubling, on the executor's callbacks.
    MutexLock lock(board_.mu);
    s->rows.reserve(s->rows.size() + pending->size());
  }
  ExecutorTasks tasks;
  tasks.count = pending->size();
  tasks.index = [pending](size_t j) { return (*pending)[j]; };
  tasks.spec = [pending, s](size_t j) {
    const auto k = static_cast<size_t>((*pending)[j]);
    return sweepTestSpec(s->templates[static_cast<size_t>(s->template_of[k])], s->plan[k], s->id);
  };
  tasks.resources = [pending, s](size_t j) {
    const auto k = static_cast<size_t>((*pending)[j]);
    return resourceKeys(s->plan.initiator(k), s->plan.target(k));
  };
  return tasks;
}

void SweepRunner::runTasks(const std::shared_ptr<LiveSweep>& s, size_t from) {
  // The plan indexes still to run.
  auto pending = std::make_shared<std::vector<int>>();
  for (size_t i = from; i < s->plan.size(); ++i) {
    if (!s->done.count(static_cast<int>(i))) pending->push_back(static_cast<int>(i));
  }
  if (from == 0 && fabricNow() && !options_.counters.reader.empty()) {
    runRoundsWithCounters(s, *pending);
    return;
  }
  runPending(s, std::move(pending));
}

void SweepRunner::runPending(const std::shared_ptr<LiveSweep>& s,
                             std::shared_ptr<std::vector<int>> pending) {
  ExecutorTasks tasks = tasksOf(s, std::move(pending));
  ExecutorOptions eo = options_.executor;
  if (s->spec.max_concurrency > 0) eo.max_concurrency = s->spec.max_concurrency;
  eo.retries = s->spec.retries;
  Executor ex(deps_.workers, deps_.clock, eo);
  {
    MutexLock lock(board_.mu);
    s->executor = &ex;
    if (s->cancel_requested || board_.stopping) ex.cancel();
  }
  // Progress is stored once a second while the sweep runs, from the clock's thread. A tick the
  // clock has taken cannot be cancelled, so the ticks reach this frame through a lifeline that
  // the end of the tests closes: it waits for a checkpoint being written (whose "running" record
  // must not land after the final one), and later ticks find nobody.
  Lifeline ticks;
  Clock::TimerId tick_timer = 0;  // written inside ticks' runs only
  ticks.ref().run([&] { tick_timer = scheduleTick(ticks.ref(), &tick_timer, s); });
  ExecutorCallbacks cb;
  cb.on_start = [&](int index, const std::string& test_id) {
    std::shared_ptr<const SweepFabric> fab = fabricNow();
    MutexLock lock(board_.mu);
    s->in_flight[index] = test_id;
    if (fab && index >= 0) {
      // Which snapshot the test runs on: its path is traced through it at the sweep's end.
      size_t k = s->fabrics.size();
      while (k > 0 && s->fabrics[k - 1] != fab) --k;
      if (k == 0 && s->fabrics.size() < UINT16_MAX) {
        s->fabrics.push_back(std::move(fab));
        k = s->fabrics.size();
      }
      const auto at = static_cast<size_t>(index);
      if (s->test_fabric.size() <= at) s->test_fabric.resize(std::max(at + 1, s->plan.size()), 0);
      s->test_fabric[at] = static_cast<uint16_t>(k);
    }
  };
  cb.on_result = [&](int index, const TestResult& r) {
    deps_.writer.submit(r);
    MutexLock lock(board_.mu);
    s->in_flight.erase(index);
    s->done.insert(index);
    s->rows.add(r, isRetestResult(r, s->plan_size));
    if (r.status == TestStatus::kFailed || r.status == TestStatus::kError) ++s->failed;
    if (r.status == TestStatus::kSkipped) ++s->skipped;
    board_.publish(*s);
  };
  // The tests' end is an event (on_done), on whichever thread ended the last test.
  Event ended;
  cb.on_done = [&ended](size_t) { ended.set(); };
  {
    MutexLock lock(board_.mu);
    s->starting_tests = true;
  }
  ex.start(std::move(tasks), cb);
  {
    MutexLock lock(board_.mu);
    s->starting_tests = false;
  }
  ended.wait();
  ticks.close();
  deps_.clock.cancel(tick_timer);
  MutexLock lock(board_.mu);
  s->executor = nullptr;
}

std::optional<SweepRunner::FirstJudgement> SweepRunner::runRetests(
    const std::shared_ptr<LiveSweep>& s) {
  // s->rows grows only on this thread's executor callbacks, which have all returned (and
  // published under board_.mu), so the judge reads it in place.
  JudgeRows& rows = s->rows;
  rows.sortByPlanIndex();
  auto verdicts = judgeSweepRows(deps_.workers, rows, s->config, JudgeRows{});
  // The outlier detector's low pairs are repeated too, before they are called links.
  const OutlierFindings low = findOutliers(rows, s->config.outliers);
  auto retests = planRetests(rows, verdicts, s->hosts, options_.max_retests, low.repeat);
  if (retests.empty()) return FirstJudgement{std::move(verdicts), low};
  // A retest runs with the template of the test it re-examines (its op, mode, memory and
  // iterations): a read pair's retest is a read, not the config's first sweep.
  std::map<std::string_view, int32_t> plan_index_of;
  for (const auto& r : rows) plan_index_of.emplace(rows.testId(r), r.plan_index);
  {
    MutexLock lock(board_.mu);
    for (auto& t : retests) {
      int tmpl = s->template_of.empty() ? 0 : s->template_of.front();
      auto it = plan_index_of.find(t.retest_of);
      if (it != plan_index_of.end() && it->second >= 0 &&
          static_cast<size_t>(it->second) < s->template_of.size()) {
        tmpl = s->template_of[static_cast<size_t>(it->second)];
      }
      s->plan.append(t);
      s->template_of.push_back(tmpl);
    }
    s->retests = static_cast<uint32_t>(retests.size());
    board_.publish(*s);
  }
  runTasks(s, s->plan_size);
  return std::nullopt;
}

void SweepRunner::setEndState(LiveSweep& s, bool pass) {
  s.finished_ms = deps_.clock.unixMs();
  s.report_pending = true;
  s.results_pending = true;
  if (board_.stopping && !s.cancel_requested) {
    s.state = SweepState::kInterrupted;
    s.reason = kSweepShutdownReason;
  } else if (s.cancel_requested) {
    s.state = SweepState::kCancelled;
    if (s.reason.empty()) s.reason = "cancelled";
    s.verdict = "FAIL";
  } else {
    // Every result is a row, a FAILED or ERROR one a FAIL verdict: the sweep's verdict reads
    // them all (retests are evidence for the localiser, never a verdict of their own).
    s.state = SweepState::kFinished;
    s.verdict = pass && s.skipped < s.plan_size ? "PASS" : "FAIL";
    if (s.skipped == s.plan_size) s.reason = "every test was skipped";
  }
}

namespace {

// The judge's phases one after another, as "name N ms, ..." for the log.
class JudgePhaseLog {
 public:
  explicit JudgePhaseLog(Clock& clock) : clock_(clock), start_(clock.now()) {}
  void operator()(const char* name) {
    const Clock::TimePoint now = clock_.now();
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - start_).count();
    text_ += std::string(text_.empty() ? "" : ", ") + name + " " + std::to_string(ms) + " ms";
    start_ = now;
  }
  const std::string& text() const { return text_; }

 private:
  Clock& clock_;
  Clock::TimePoint start_;
  std::string text_;
};

}  // namespace

void SweepRunner::judgeEnd(const std::shared_ptr<LiveSweep>& s, std::optional<FirstJudgement> first,
                           SweepEnding* ending) {
  // In plan order, as the store reads them back: `sweep judge` over the stored rows gives the
  // same verdicts in the same order.
  JudgeRows& rows = s->rows;
  // Where the judge's time goes, in the log (at 1,024 hosts it decides when the verdict shows).
  JudgePhaseLog phase(deps_.clock);
  rows.sortByPlanIndex();
  phase("sort");
  Result<JudgeRows> baseline = JudgeRows{};
  JudgeVerdicts verdicts;
  OutlierFindings outliers;
  if (first && s->spec.baseline.empty()) {
    // The same rows, judged the same way before the retests were planned (none were).
    verdicts = std::move(first->verdicts);
    outliers = std::move(first->outliers);
  } else {
    baseline = sweepBaselineRows(deps_.sweeps, deps_.results, s->spec.baseline, s->id);
    verdicts =
        judgeSweepRows(deps_.workers, rows, s->config, baseline.ok() ? *baseline : JudgeRows{});
    if (baseline.ok()) *baseline = JudgeRows{};
    outliers = findOutliers(rows, s->config.outliers);
  }
  phase("thresholds and outliers");
  Localisation located = localiseSweep(rows, verdicts);
  phase("localiser");
  std::vector<std::string> fabric_notes;
  std::vector<DirectedLink> never;
  std::vector<BlamedLink> blamed = fabricEnd(*s, rows, verdicts, &fabric_notes, &never);
  std::vector<LinkVerdictRecord> links;
  // Suspects from the fabric: a link's counters, or (RoCE) a host switch port slow pairs share.
  std::vector<Suspect> fabric_suspects = counterEnd(*s, never, &blamed, &fabric_notes, &links);
  if (options_.lldp_fabric) {
    const auto lldp_notes = lldpSweepNotes(*options_.lldp_fabric, rows, verdicts);
    fabric_notes.insert(fabric_notes.end(), lldp_notes.begin(), lldp_notes.end());
    fabric_suspects = mergeSuspects(std::move(fabric_suspects),
                                    lldpSweepSuspects(*options_.lldp_fabric, rows, verdicts));
  }
  phase("fabric");
  SweepVerdict judged = sweepVerdict(rows, verdicts, outliers, s->config, located.noise_rows);
  // A link with errors or slow pairs fails the sweep (docs/fabric.md); its reason goes first.
  judgeSweepLinks(links, &judged);
  if (options_.on_end) ending->passing = passingWorkers(rows, verdicts);
  // The report's figures as its rows will read back, summed up once: served from memory until
  // the rows are stored, then stored with them.
  std::vector<FigureSummary> figures = reportFigures(rows);
  phase("verdict and figures");
  sweepRunLog(deps_.clock)
      .info("sweep " + s->id + ": judge's phases: " + phase.text(), {{"sweep", s->id}});
  MutexLock lock(board_.mu);
  s->figures = std::move(figures);
  s->verdicts = std::move(verdicts);
  s->verdict_counts = {};
  for (VerdictKind k : s->verdicts.kind) s->verdict_counts.add(k);
  s->suspects = withLinkBlame(mergeSuspects(std::move(located.suspects), outliers.suspects), blamed,
                              rows, s->verdicts);
  if (!fabric_suspects.empty())
    s->suspects = mergeSuspects(std::move(s->suspects), fabric_suspects);
  if (!baseline.ok()) s->notes.push_back("baseline: " + baseline.status().message());
  for (const std::vector<std::string>* notes :
       {&std::as_const(located.notes), &std::as_const(outliers.notes), &std::as_const(judged.notes),
        &std::as_const(fabric_notes)}) {
    s->notes.insert(s->notes.end(), notes->begin(), notes->end());
  }
  setEndState(*s, judged.pass);
  if (s->state == SweepState::kFinished && !judged.reason.empty()) {
    // A resumed sweep's reason says so; what judged it goes first.
    s->reason = s->reason.empty() ? judged.reason : judged.reason + "; " + s->reason;
  }
  // Its end is seen from now on, with its report read from memory (SweepReports) while the
  // rows are stored (report_pending; the stored row says it ended only once they are).
  board_.publish(*s);
}

void SweepRunner::logEnd(const std::shared_ptr<LiveSweep>& s) {
  // The sweep's end and its suspects, in the log (an operator's first look).
  MutexLock lock(board_.mu);
  const ComponentLog log = sweepRunLog(deps_.clock);
  log.info("sweep " + s->id + " " + toString(s->state) + ": verdict " + s->verdict +
               (s->reason.empty() ? "" : " (" + s->reason + ")") + "; " +
               std::to_string(s->suspects.size()) + " suspect(s)",
           {{"sweep", s->id},
            {"state", toString(s->state)},
            {"verdict", s->verdict},
            {"tests", s->plan_size},
            {"suspects", s->suspects.size()}});
  for (const Suspect& sus : s->suspects) {
    log.warn("sweep " + s->id + ": suspect " + sus.kind + " " + sus.name +
                 (sus.evidence.empty() ? "" : ": " + sus.evidence.front()),
             {{"sweep", s->id}, {"suspect", sus.name}, {"kind", sus.kind}, {"score", sus.score}});
  }
}

void SweepRunner::logEndTimes(const LiveSweep& s, const EndTimes& t) {
  const auto ms = [](Clock::Duration d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  };
  const int64_t judge = ms(t.judged - t.tests_ended);
  const int64_t retests = ms(t.retests_ended - t.tests_ended);
  const int64_t stored = ms(t.stored - t.tests_ended);
  sweepRunLog(deps_.clock)
      .info("sweep " + s.id + ": judged " + std::to_string(judge) +
                " ms after its tests ended (of which retests planned and run " +
                std::to_string(retests) + " ms), every result stored after " +
                std::to_string(stored) + " ms",
            {{"sweep", s.id},
             {"judge_ms", judge},
             {"retests_ms", retests},
             {"results_stored_ms", stored}});
}

void SweepRunner::tellEnd(const std::shared_ptr<LiveSweep>& s, SweepEnding ending) {
  if (!options_.on_end) return;
  ending.cluster_hosts = deps_.workers.list().size();  // the directory's lock, without mu
  {
    MutexLock lock(board_.mu);
    ending.sweep_id = s->id;
    ending.state = s->state;
    ending.verdict = s->verdict;
    ending.reason = s->reason;
    ending.hosts = s->hosts;
    ending.suspects = s->suspects;
  }
  std::vector<std::string> lines = options_.on_end(ending);
  MutexLock lock(board_.mu);
  s->notes.insert(s->notes.end(), lines.begin(), lines.end());
}

void SweepRunner::run(const std::shared_ptr<LiveSweep>& s) {
  if (!begin(s)) return;
  if (s->resumed) awaitHosts(s);
  if (s->needs_plan && !replan(s)) return;
  runTasks(s, 0);
  bool cancelled;
  {
    MutexLock lock(board_.mu);
    cancelled = s->cancel_requested || board_.stopping;
  }
  EndTimes times;
  times.tests_ended = deps_.clock.now();
  std::optional<FirstJudgement> first;
  if (!cancelled && s->spec.localise) first = runRetests(s);
  times.retests_ended = deps_.clock.now();
  // The judge reads the rows held in memory, not the stored results: it runs while the writer
  // stores the last results (at 1,024 hosts its queue holds one to two seconds of them), and
  // a query of this sweep's results waits for them (results_pending).
  SweepEnding ending;
  judgeEnd(s, std::move(first), &ending);
  times.judged = deps_.clock.now();
  logEnd(s);
  tellEnd(s, std::move(ending));
  deps_.writer.flush();
  {
    MutexLock lock(board_.mu);
    s->results_pending = false;
    board_.cv.notify_all();
  }
  times.stored = deps_.clock.now();
  logEndTimes(*s, times);
  // Followers have seen the end since judgeEnd, and read the report from memory (rows,
  // verdicts, figures, suspects, notes: SweepReports) while it is stored here; the stored row
  // says the sweep ended only after its results and report rows (a coordinator killed
  // meanwhile runs what was not stored and judges it again at its next start). At 1,024 hosts
  // the rows and aggregates take 10-20 s: the verdict no longer waits for them (issue #19).
  checkpoint(s, true);
  MutexLock lock(board_.mu);
  s->report_pending = false;
  // The stored report holds the verdicts from now on; an ended sweep keeps only its progress.
  s->rows = JudgeRows{};
  s->verdicts = JudgeVerdicts{};
  s->figures.clear();
  s->figures.shrink_to_fit();
  board_.publish(*s);
}

}  // namespace gdrmesh
