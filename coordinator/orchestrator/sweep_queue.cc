#include "coordinator/orchestrator/sweep_queue.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "common/log.h"
#include "common/sync/mutex.h"

namespace gdrmesh {

namespace {

// What a stored plan was made for: its hosts, size, rounds and seed (the plan itself is made
// again from the spec).
struct StoredPlan {
  bool known = false;  // plan_json could be read
  std::vector<std::string> hosts;
  size_t plan_size = 0;
  int rounds = 0;
  uint64_t seed = 0;
};

StoredPlan storedPlanOf(const SweepRecord& rec) {
  StoredPlan p;
  p.plan_size = rec.tests_total;
  auto pj = nlohmann::json::parse(rec.plan_json, nullptr, false);
  if (!pj.is_object()) return p;
  p.known = true;
  p.hosts = pj.value("hosts", std::vector<std::string>{});
  p.plan_size = pj.value("plan_size", p.plan_size);
  p.rounds = pj.value("rounds", 0);
  const std::string seed_text = pj.value("seed", std::string());
  (void)std::from_chars(seed_text.data(), seed_text.data() + seed_text.size(), p.seed);
  return p;
}

TestResult interruptedResult(const SweepTestStart& u, const std::string& sweep_id, int64_t now_ms) {
  TestResult e;
  e.test_id = u.test_id;
  e.run_id = sweep_id;
  e.plan_index = -1;  // the test runs again under its plan index
  e.started_ms = u.started_ms;
  e.finished_ms = now_ms;
  e.initiator.worker = u.initiator_worker;
  e.initiator.nic = u.initiator_nic;
  e.target.worker = u.target_worker;
  e.target.nic = u.target_nic;
  e.message_size = u.message_size;
  e.status = TestStatus::kError;
  e.reason = "interrupted: the coordinator stopped while this test ran; it is run again";
  return e;
}

}  // namespace

SweepQueue::SweepQueue(SweepRunner& runner, SweepBoard& board)
    : runner_(runner), board_(board), thread_([this] { loop(); }) {}

SweepQueue::~SweepQueue() {
  shutdown();
}

void SweepQueue::shutdown() {
  {
    MutexLock lock(board_.mu);
    board_.stopping = true;
    if (current_ && current_->executor) current_->executor->cancel();
    board_.cv.notify_all();
  }
  // Joined once, whoever stopped the board; a second caller waits for the first join.
  MutexLock join(join_mu_);
  if (thread_.joinable()) thread_.join();
}

void SweepQueue::enqueue(const std::shared_ptr<LiveSweep>& s) {
  queue_.push_back(s);
  board_.recent[s->id] = s;
  board_.cv.notify_all();
}

Result<SweepProgress> SweepQueue::start(const SweepSpec& spec) {
  GDR_ASSIGN_OR_RETURN(std::shared_ptr<LiveSweep> s, runner_.plan(spec));
  SweepRecord rec;
  {
    MutexLock lock(board_.mu);
    if (board_.stopping) return unavailable("the coordinator is shutting down");
    if ((current_ || !queue_.empty()) && !spec.queue) {
      const std::string running = current_ ? current_->id : queue_.front()->id;
      return failedPrecondition("another sweep is running: " + running,
                                "wait for it (`gdrmesh sweep follow " + running +
                                    "`), cancel it, or pass --queue to run after it");
    }
    rec = runner_.recordOf(*s);
  }
  GDR_RETURN_IF_ERROR(runner_.deps().sweeps.createSweep(rec));
  MutexLock lock(board_.mu);
  enqueue(s);
  return board_.snapshot(*s);
}

void SweepQueue::loop() {
  UniqueLock lock(board_.mu);
  while (!board_.stopping) {
    if (queue_.empty()) {
      board_.cv.wait(lock.native());
      continue;
    }
    current_ = queue_.front();
    queue_.pop_front();
    auto s = current_;
    lock.unlock();
    runner_.run(s);
    lock.lock();
    current_.reset();
    board_.cv.notify_all();
  }
}

std::optional<SweepProgress> SweepQueue::cancel(const std::string& id) {
  std::shared_ptr<LiveSweep> dequeued;
  {
    MutexLock lock(board_.mu);
    auto it =
        std::find_if(queue_.begin(), queue_.end(), [&](const auto& s) { return s->id == id; });
    if (it != queue_.end()) {
      dequeued = *it;
      queue_.erase(it);
      dequeued->state = SweepState::kCancelled;
      dequeued->cancel_requested = true;
      dequeued->reason = "cancelled before it started";
      dequeued->finished_ms = runner_.deps().clock.unixMs();
      board_.publish(*dequeued);
    } else if (current_ && current_->id == id) {
      current_->cancel_requested = true;
      current_->reason = "cancelled by request";
      if (current_->executor) current_->executor->cancel();
      board_.publish(*current_);
      board_.cv.notify_all();  // a run waiting for its workers to come back stops waiting
      return board_.snapshot(*current_);
    }
  }
  if (!dequeued) return std::nullopt;
  runner_.checkpoint(dequeued, true);
  MutexLock lock(board_.mu);
  return board_.snapshot(*dequeued);
}

bool SweepQueue::busy() {
  MutexLock lock(board_.mu);
  return current_ != nullptr || !queue_.empty();
}

void SweepQueue::resumeInterrupted() {
  SweepStore& sweeps = runner_.deps().sweeps;
  auto running = sweeps.listSweeps(0, "running");
  auto queued = sweeps.listSweeps(0, "queued");
  std::vector<SweepRecord> recs;
  if (running.ok()) recs = *running;
  if (queued.ok()) recs.insert(recs.end(), queued->begin(), queued->end());
  // A shutdown stores a running sweep as interrupted, saying that it resumes (a kill leaves it
  // running); other interrupted sweeps stay ended.
  auto stopped = sweeps.listSweeps(0, toString(SweepState::kInterrupted));
  if (stopped.ok()) {
    for (auto& rec : *stopped) {
      if (rec.reason == kSweepShutdownReason) recs.push_back(std::move(rec));
    }
  }
  std::sort(recs.begin(), recs.end(),
            [](const SweepRecord& x, const SweepRecord& y) { return x.created_ms < y.created_ms; });
  for (const auto& rec : recs) {
    auto s = restore(rec);
    if (!s) continue;
    SweepRecord r = rec;
    r.state = toString(SweepState::kQueued);
    r.reason = "resumed after a coordinator restart";
    (void)sweeps.updateSweep(r);
    MutexLock lock(board_.mu);
    s->reason = r.reason;
    enqueue(s);
  }
}

void SweepQueue::recordInterrupted(const SweepRecord& rec, size_t plan_size) {
  const SweepDeps& deps = runner_.deps();
  auto unfinished = deps.sweeps.unfinishedSweepTests(rec.id);
  if (!unfinished.ok()) return;
  std::vector<TestResult> errors;
  for (const auto& u : *unfinished) {
    if (u.plan_index < 0 || static_cast<size_t>(u.plan_index) >= plan_size) continue;
    // Recorded by an earlier start that did not get to run it again.
    auto known = deps.results.getResult(u.test_id);
    if (known.ok() && known->has_value()) continue;
    errors.push_back(interruptedResult(u, rec.id, deps.clock.unixMs()));
  }
  if (errors.empty()) return;
  auto stored = deps.results.insertResults(errors);
  if (!stored.ok()) {
    ComponentLog("coordinator", &deps.clock)
        .error("sweep " + rec.id + ": recording " + std::to_string(errors.size()) +
                   " interrupted tests: " + stored.status().toString(),
               {{"sweep", rec.id}});
  }
}

void SweepQueue::keepFinished(LiveSweep& s) {
  ResultQuery q;
  q.run_id = s.id;
  q.limit = 0;
  auto rows = runner_.deps().results.queryResults(q);
  if (!rows.ok()) return;
  for (auto& r : *rows) {
    if (r.plan_index < 0 || static_cast<size_t>(r.plan_index) >= s.plan_size) continue;
    if (r.status == TestStatus::kError && r.reason.rfind("interrupted:", 0) == 0) continue;
    s.done.insert(r.plan_index);
    if (r.status == TestStatus::kFailed || r.status == TestStatus::kError) ++s.failed;
    if (r.status == TestStatus::kSkipped) ++s.skipped;
    s.rows.add(r, isRetestResult(r, s.plan_size));
  }
}

std::shared_ptr<LiveSweep> SweepQueue::restore(const SweepRecord& rec) {
  const SweepDeps& deps = runner_.deps();
  // A report stored by an earlier end (the coordinator shut down mid-sweep) is replaced by the
  // one this run stores at its end; until then the sweep has none.
  Status cleared = deps.sweeps.clearSweepReport(rec.id);
  if (!cleared.ok()) {
    ComponentLog("coordinator", &deps.clock)
        .error("sweep " + rec.id + ": " + cleared.toString(), {{"sweep", rec.id}});
  }
  const StoredPlan stored = storedPlanOf(rec);
  // Whether or not the sweep can run again; the tests run again under their plan index.
  recordInterrupted(rec, stored.plan_size);
  auto fail = [&](const std::string& why) {
    SweepRecord r = rec;
    r.state = toString(SweepState::kInterrupted);
    r.reason = why;
    r.finished_ms = deps.clock.unixMs();
    (void)deps.sweeps.updateSweep(r);
    return nullptr;
  };
  auto spec = deps.codec.decode(rec.spec_json);
  if (!spec.ok()) {
    return fail("interrupted by a coordinator restart; its spec cannot be read back: " +
                spec.status().message());
  }
  auto config = sweepConfigOf(deps.parse_config, *spec);
  if (!config.ok())
    return fail("interrupted by a coordinator restart; its config no longer parses");
  auto s = std::make_shared<LiveSweep>();
  s->id = rec.id;
  s->spec = std::move(*spec);
  s->config = std::move(*config);
  s->created_ms = rec.created_ms;
  s->started_ms = rec.started_ms;
  s->resumed = true;
  // The plan is made again for the hosts it was made for, from the same spec and seed, once
  // they are back (the run): a worker known only while connected (a simulated one) is not in
  // the directory before it reconnects.
  if (stored.known) {
    s->spec.hosts = stored.hosts;
    s->spec.exclude.clear();
    s->spec.select.clear();
  }
  s->needs_plan = true;
  s->plan_size = stored.plan_size;
  s->stored_total = rec.tests_total;
  s->rounds = stored.rounds;
  s->seed = stored.seed;
  s->hosts = s->spec.hosts;
  keepFinished(*s);  // finished results are kept
  // So are the port counters of the rounds that ran before the restart, stored as they were
  // read: judged with the rest at the end, a link with errors before the restart still fails
  // the sweep (docs/fabric.md). A port whose counters did not change left one row of 0, so it
  // is judged ok as it would have been without the restart.
  if (deps.link_counters != nullptr) {
    auto counters = deps.link_counters->sweepLinkCounters(rec.id);
    if (counters.ok()) {
      for (auto& r : *counters) {
        s->counter_ports_read.emplace(r.switch_guid, r.port);
        s->counter_rows.push_back(std::move(r));
      }
    } else {
      s->counter_notes.push_back(
          "fabric counters: those stored before the restart were not read back: " +
          counters.status().toString());
    }
  }
  return s;
}

}  // namespace gdrmesh
