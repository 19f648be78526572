#include "coordinator/orchestrator/single_test.h"

#include <memory>
#include <utility>
#include <vector>

#include "common/log.h"
#include "common/sync/event.h"
#include "common/sync/mutex.h"
#include "common/units.h"
#include "coordinator/orchestrator/executor.h"

namespace gdrmesh {
namespace {

// A side's worker: known and online, or the error that names the side and the fix.
Status checkSingleTestWorker(const WorkerDirectory& workers, const char* field,
                             const std::string& name) {
  auto w = workers.get(name);
  if (!w) {
    std::string known;
    for (const auto& k : workers.list()) {
      known += (known.empty() ? "" : ", ") + k.name + (k.online() ? "" : " (offline)");
    }
    return notFound(std::string(field) + ": unknown worker '" + name +
                        "' (known: " + (known.empty() ? "none" : known) + ")",
                    "start a worker with --name " + name + " or pick a known one");
  }
  if (!w->online()) {
    return failedPrecondition(
        std::string(field) + ": worker '" + name + "' is offline (last heartbeat " +
            (w->last_heartbeat_ms > 0 ? formatRfc3339(w->last_heartbeat_ms) : "never") + ")",
        "restart the worker, or pick an online one (`gdrmesh workers`)");
  }
  return {};
}

// What the run's callbacks share: the marker's fate, then the end.
struct SingleTestRunState {
  Mutex mu;
  bool marked ABSL_GUARDED_BY(mu) = false;
  std::shared_ptr<const SweepFabric> fabric ABSL_GUARDED_BY(mu);
  TestResult result ABSL_GUARDED_BY(mu);
};

}  // namespace

Status SingleTests::check(const PairTestSpec& spec) const {
  if (Status st = validatePairTestSpec(spec, options_.limits); !st.ok()) return st;
  if (Status st = checkSingleTestWorker(deps_.workers, "initiator", spec.initiator.worker);
      !st.ok()) {
    return st;
  }
  if (Status st = checkSingleTestWorker(deps_.workers, "target", spec.target.worker); !st.ok()) {
    return st;
  }
  auto ini = deps_.workers.get(spec.initiator.worker);
  auto tgt = deps_.workers.get(spec.target.worker);
  if (!ini || !tgt) return unavailable("a worker of the test went away", "run the test again");
  return checkPairAgainstInventory(spec, *ini, *tgt);
}

Status SingleTests::start(const PairTestSpec& spec, std::function<void(SingleTestEnd)> done) {
  if (Status st = check(spec); !st.ok()) return st;
  ExecutorOptions eo;
  eo.retries = 0;  // one test, as asked: a failure is the answer
  eo.pair = options_.pair;
  eo.locks = &deps_.locks;
  auto ex = std::make_shared<Executor>(deps_.workers, deps_.clock, eo);
  auto state = std::make_shared<SingleTestRunState>();
  ExecutorCallbacks cb;
  // A marker in the store while the test runs: if the coordinator dies before the result is
  // stored, the next start records the test as interrupted instead of losing it.
  cb.on_start = [this, spec, state](int, const std::string& test_id) {
    PairEndpoints ep;
    ep.initiator = deps_.workers.get(spec.initiator.worker);
    ep.target = deps_.workers.get(spec.target.worker);
    Status marked =
        deps_.markers.markTestStarted(startedResult(spec, ep, test_id, deps_.clock.unixMs()));
    if (!marked.ok()) {
      ComponentLog("coordinator", &deps_.clock)
          .error("test " + test_id + " runs unmarked: " + marked.toString(), {{"test", test_id}});
    }
    // The tables of the time the test runs: a discovery stored meanwhile applies to later tests.
    std::shared_ptr<const SweepFabric> fab =
        deps_.fabric != nullptr ? deps_.fabric->current() : nullptr;
    MutexLock lock(state->mu);
    state->marked = marked.ok();
    state->fabric = std::move(fab);
  };
  cb.on_result = [state](int, const TestResult& r) {
    MutexLock lock(state->mu);
    state->result = r;
    state->result.plan_index = -1;  // not a sweep's test
  };
  // The executor lives until its end: on_done holds it, and is its last touch.
  cb.on_done = [ex, state, done = std::move(done)](size_t) {
    SingleTestEnd end;
    {
      MutexLock lock(state->mu);
      end.result = std::move(state->result);
      end.marked = state->marked;
      end.fabric = std::move(state->fabric);
    }
    done(std::move(end));
  };
  std::vector<ExecutorTask> tasks(1);
  tasks[0].index = 0;
  tasks[0].spec = spec;
  tasks[0].resources = resourceKeys(spec);
  ex->start(std::move(tasks), std::move(cb));
  return {};
}

SingleTestOutcome SingleTests::store(SingleTestEnd end) {
  // Through the writer sweeps use: a refused result is spooled, held (listed) and stored once
  // the database takes writes again. Its marker goes when it is stored, not before: a
  // coordinator killed meanwhile stores it from the spool at its next start.
  ResultWriter::OnStored clear_marker;
  if (end.marked) {
    clear_marker = [&markers = deps_.markers,
                    test_id = end.result.test_id](const Result<int64_t>& stored) {
      if (stored.ok()) (void)markers.clearTestStarted(test_id);
    };
  }
  SingleTestOutcome out;
  out.result = std::move(end.result);
  if (end.fabric) storePath(*end.fabric, &out);
  auto id = deps_.writer.write(out.result, std::move(clear_marker));
  if (id.ok()) {
    out.result.id = *id;
  } else {
    out.store_error = id.status();
    ComponentLog("coordinator", &deps_.clock)
        .error("result " + out.result.test_id + " not stored: " + id.status().toString(),
               {{"test", out.result.test_id}});
  }
  return out;
}

void SingleTests::storePath(const SweepFabric& fab, SingleTestOutcome* out) const {
  const fabric::HostMatch match = fab.match(deps_.workers.list());
  JudgeRows rows;
  rows.add(out->result);
  const RowPaths paths = fab.paths(rows, match);
  if (!paths.known[0]) {
    out->path_note =
        paths.untraced > 0
            ? "no path in the LFTs of " + fab.source() + ": " + paths.first_error +
                  " (fix: rediscover the fabric, `gdrmesh fabric discover --worker NAME`)"
            : "no path: a worker of the test has no HCA in " + fab.source() +
                  " (fix: `fabric_hosts:` in the coordinator's config maps workers to HCAs)";
  } else if (deps_.paths != nullptr) {
    const std::vector<PathHopRecord> hops = fab.hopRecords(rows, paths, "");
    Status st = deps_.paths->putTestPaths(hops);
    if (st.ok()) {
      out->path_hops = hops.size();
    } else {
      out->path_note = "the path was not stored: " + st.toString();
    }
  }
  if (!out->path_note.empty()) {
    ComponentLog("coordinator", &deps_.clock)
        .warn("test " + out->result.test_id + ": " + out->path_note,
              {{"test", out->result.test_id}});
  }
}

Result<SingleTestOutcome> SingleTests::run(const PairTestSpec& spec) {
  Event ended;
  SingleTestEnd end;
  Status st = start(spec, [&](SingleTestEnd e) {
    end = std::move(e);
    ended.set();
  });
  if (!st.ok()) return st;
  ended.wait();
  return store(std::move(end));
}

}  // namespace gdrmesh
