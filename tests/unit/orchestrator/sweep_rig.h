// The rig of the sweep manager's part tests: the in-memory store of tests/support (MemoryStore,
// held to the same contract suite as SQLite: tests/unit/store), fake workers and a ResultWriter
// on one ManualClock, and "coordinators" (a board, a runner, a queue and the reports) that can
// be built again over the same store, as a restart does. A test of what a database file keeps
// across a restart asks for SQLite in a temporary directory (RigStore::kSqlite).
//
// Time moves only when a test moves it: drive() advances the clock in small steps, and every
// reply of the fake workers (and every test that it ends and starts) runs inside advance() on
// the test's thread. The sweep's own thread only plans, dispatches and judges; drive() stops on
// a condition of the sweep (an event), never after a number of steps.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "coordinator/orchestrator/sweep_board.h"
#include "coordinator/orchestrator/sweep_queue.h"
#include "coordinator/orchestrator/sweep_reports.h"
#include "coordinator/orchestrator/sweep_run.h"
#include "coordinator/store/result_writer.h"
#include "coordinator/store/sqlite_store.h"
#include "tests/support/fake_worker_channel.h"
#include "tests/support/memory_store.h"
#include "tests/support/sweep_wait.h"
#include "tests/support/temp_dir.h"

namespace gdrmesh::testing {

// The SweepManager tests' all-pairs sweep (tests/support/sweep_wait.h) with seed 7: stored as
// its name and read back as itself, so a resumed sweep plans again the same tests in the same
// order.
inline SweepSpec rigAllPairs() {
  SweepSpec spec = plainAllPairs();
  spec.seed = 7;
  return spec;
}

class RigCodec final : public SweepCodec {
 public:
  std::string encode(const SweepSpec& spec) const override {
    return spec.queue ? "all-pairs queued" : "all-pairs";
  }
  Result<SweepSpec> decode(const std::string& text) const override {
    if (text.rfind("all-pairs", 0) != 0) return invalidArgument("spec: not a rig spec", "");
    SweepSpec spec = rigAllPairs();
    spec.queue = text == "all-pairs queued";
    return spec;
  }
};

// One coordinator's sweep manager, in its parts.
struct RigCoordinator {
  RigCoordinator(const SweepDeps& deps, Clock& clock, SweepManagerOptions options)
      : board(clock),
        runner(deps, board, std::move(options)),
        reports(runner.deps(), board),  // as SweepManager: with the options' link store
        queue(runner, board) {}
  SweepBoard board;
  SweepRunner runner;
  SweepReports reports;
  SweepQueue queue;
};

enum class RigStore { kMemory, kSqlite };

class SweepRig {
 public:
  explicit SweepRig(int hosts = 4, RigStore kind = RigStore::kMemory) {
    if (kind == RigStore::kSqlite) {
      EXPECT_TRUE(dir.ok());
      auto opened = SqliteStore::open(dir.file("results.db"));
      EXPECT_TRUE(opened.ok()) << opened.status().toString();
      store = std::move(opened).value();
    } else {
      store = std::make_unique<MemoryStore>();
    }
    writer = std::make_unique<ResultWriter>(*store, clock);
    for (int i = 0; i < hosts; ++i) workers.add("h" + std::to_string(i));
  }
  ~SweepRig() {
    // Stops the coordinators with time still moving: a run waits for its tests in flight.
    // The writer's last batch waits for its delay on the clock too.
    std::atomic<bool> stopped{false};
    std::thread stopper([&] {
      for (auto& c : coordinators) c->queue.shutdown();
      writer.reset();
      stopped = true;
    });
    (void)drive([&] { return stopped.load(); });
    stopper.join();
  }

  SweepDeps deps() { return SweepDeps{workers, clock, *store, *store, *writer, codec, nullptr}; }
  // A coordinator over the rig's store and workers (a second one is a restart).
  RigCoordinator& start(SweepManagerOptions options = {}) {
    coordinators.push_back(std::make_unique<RigCoordinator>(deps(), clock, std::move(options)));
    return *coordinators.back();
  }

  // Moves the clock in steps of `step` seconds until `done()` holds; false when it did not
  // within a minute of real time (a safety net against a hang, not a timing). Before each look
  // and each step it waits for the starts in flight (settled()): a sweep's thread that starts
  // its first tests takes their deadlines from the clock, and a step taken meanwhile would
  // spend time those tests never had (seen on a loaded machine: "worker h0 did not answer").
  template <typename F>
  bool drive(F done, double step = 0.05) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (true) {
      if (!await([&] { return settled(); })) return false;
      if (done()) return true;
      if (std::chrono::steady_clock::now() > give_up) return false;
      clock.advanceSeconds(step);
      std::this_thread::yield();
    }
  }
  // No coordinator's sweep is starting a test.
  bool settled() {
    for (auto& c : coordinators) {
      if (c->board.startingTests() > 0) return false;
    }
    return true;
  }
  // Waits, with the clock standing still, until `done()` holds (a sweep's thread acting on an
  // event, not on time); false when it did not within a minute of real time (a safety net).
  template <typename F>
  bool await(F done) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!done()) {
      if (std::chrono::steady_clock::now() > give_up) return false;
      std::this_thread::yield();
    }
    return true;
  }
  // Drives until sweep `id` of `c` has ended (neither queued nor running) and its report is
  // stored, and returns it.
  SweepProgress finish(RigCoordinator& c, const std::string& id) {
    SweepProgress p;
    const bool ended = drive([&] {
      auto now = c.reports.progress(id);
      if (!now.ok()) return false;
      p = *now;
      return p.state != SweepState::kQueued && p.state != SweepState::kRunning && !p.report_pending;
    });
    EXPECT_TRUE(ended) << "sweep " << id << " did not end: " << toString(p.state);
    return p;
  }
  // Every line the fake workers logged ("prepare t-1 +peer +arm", ...), in worker order.
  std::vector<std::string> logs() {
    std::vector<std::string> all;
    for (const auto& w : workers.list()) {
      for (auto& line : workers.fake(w.name).log()) all.push_back(std::move(line));
    }
    return all;
  }
  // The distinct test ids the workers were sent commands for.
  std::set<std::string> testsRun() {
    std::set<std::string> ids;
    for (const std::string& line : logs()) {
      const size_t sp = line.find(' ');
      if (sp == std::string::npos) continue;
      const size_t end = line.find(' ', sp + 1);
      ids.insert(line.substr(sp + 1, end == std::string::npos ? std::string::npos : end - sp - 1));
    }
    return ids;
  }

  TempDir dir;
  std::unique_ptr<Store> store;  // MemoryStore, or SqliteStore (RigStore::kSqlite)
  ManualClock clock;
  std::unique_ptr<ResultWriter> writer;
  FakeDirectory workers{clock};
  RigCodec codec;
  std::vector<std::unique_ptr<RigCoordinator>> coordinators;
};

}  // namespace gdrmesh::testing
