#include "coordinator/actions/hooks.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "coordinator/store/sqlite_store.h"
#include "tests/support/temp_dir.h"

namespace gdrmesh {
namespace {

using nlohmann::json;

// A bound for waits on other threads: generous, never a pace.
constexpr auto kHookPrompt = std::chrono::seconds(30);

SweepEnding hookEnding(const std::string& id, std::vector<std::string> hosts,
                       std::vector<Suspect> suspects) {
  SweepEnding e;
  e.sweep_id = id;
  e.state = SweepState::kFinished;
  e.verdict = suspects.empty() ? "PASS" : "FAIL";
  e.hosts = std::move(hosts);
  e.suspects = std::move(suspects);
  return e;
}

// An HTTP receiver on 127.0.0.1:0 that records every request and answers from a script.
class Receiver {
 public:
  struct Request {
    std::string method, path, content_type, authorization, body;
  };
  Receiver() {
    server_.Post(".*", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back({req.method, req.path, req.get_header_value("Content-Type"),
                           req.get_header_value("Authorization"), req.body});
      res.status = statuses_.empty() ? 200 : statuses_.front();
      if (!statuses_.empty()) statuses_.erase(statuses_.begin());
      cv_.notify_all();
    });
    // Bound and listening on return: a request waits in the backlog until listen_after_bind.
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~Receiver() {
    server_.stop();
    thread_.join();
  }
  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  void answer(std::vector<int> statuses) {
    std::lock_guard<std::mutex> lock(mu_);
    statuses_ = std::move(statuses);
  }
  // Waits (bounded) until `n` requests arrived; returns them.
  std::vector<Request> waitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, kHookPrompt, [&] { return requests_.size() >= n; });
    return requests_;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Request> requests_;
  std::vector<int> statuses_;
};

TEST(HookEventsTest, SuspectsAppearAndClearOnlyWhenTheirHostsWereTested) {
  std::set<std::string> previous;
  const Suspect h2{"host", "h2", 1, {"failed with 3 of 3 partners"}};
  auto e =
      hookEvents(hookEnding("s1", {"h1", "h2", "h3"}, {h2}), {"action drain h2: taken"}, &previous);
  ASSERT_EQ(e.size(), 2u);
  auto end = json::parse(e[0]);
  EXPECT_EQ(end["event"], "sweep-end");
  EXPECT_EQ(end["sweep"]["id"], "s1");
  EXPECT_EQ(end["sweep"]["verdict"], "FAIL");
  EXPECT_EQ(end["sweep"]["actions"][0], "action drain h2: taken");
  auto appeared = json::parse(e[1]);
  EXPECT_EQ(appeared["event"], "suspect-appeared");
  EXPECT_EQ(appeared["suspect"]["name"], "h2");
  // Named again: no new event.
  EXPECT_EQ(hookEvents(hookEnding("s2", {"h1", "h2"}, {h2}), {}, &previous).size(), 1u);
  // A sweep that did not test h2 does not clear it.
  EXPECT_EQ(hookEvents(hookEnding("s3", {"h1", "h3"}, {}), {}, &previous).size(), 1u);
  e = hookEvents(hookEnding("s4", {"h1", "h2"}, {}), {}, &previous);
  ASSERT_EQ(e.size(), 2u);
  auto cleared = json::parse(e[1]);
  EXPECT_EQ(cleared["event"], "suspect-cleared");
  EXPECT_EQ(cleared["suspect"]["kind"], "host");
  EXPECT_EQ(cleared["suspect"]["name"], "h2");
  EXPECT_EQ(cleared["sweep"]["id"], "s4");
  // A cancelled sweep: its end only.
  auto cancelled = hookEnding("s5", {"h1", "h2"}, {h2});
  cancelled.state = SweepState::kCancelled;
  EXPECT_EQ(hookEvents(cancelled, {}, &previous).size(), 1u);
}

TEST(HooksTest, WebhookPostsTheJsonWithTheBearerTokenAndRetries) {
  Receiver receiver;
  receiver.answer({503});  // the first try fails
  gdrmesh::testing::TempDir dir;
  dir.write("token", "s3cret\n");
  HookOptions h;
  h.url = receiver.url("/gdrmesh/events");
  h.token_file = dir.file("token");
  h.attempts = 3;
  h.backoff_seconds = 5;
  ManualClock clock;
  ProcessRunner runner(clock);
  DefaultHookTransport transport(runner);
  std::vector<std::string> log;
  std::mutex log_mu;
  Hooks hooks({h}, transport, clock, [&](const std::string& l) {
    std::lock_guard<std::mutex> lock(log_mu);
    log.push_back(l);
  });
  hooks.onSweepEnd(hookEnding("s1", {"h1", "h2"}, {}), {});
  auto got = receiver.waitFor(1);
  ASSERT_EQ(got.size(), 1u);
  // The retry waits on the clock: nothing more until it moves.
  hooks.waitCounters([](const Hooks::Counters& c) { return c.retried == 1; });
  clock.advanceSeconds(4.9);
  EXPECT_EQ(clock.pendingTimers(), 1u);  // the retry, not due yet
  clock.advanceSeconds(0.1);
  EXPECT_EQ(clock.pendingTimers(), 0u);
  got = receiver.waitFor(2);
  ASSERT_EQ(got.size(), 2u);
  hooks.waitIdle();
  for (const auto& r : got) {
    EXPECT_EQ(r.method, "POST");
    EXPECT_EQ(r.path, "/gdrmesh/events");
    EXPECT_EQ(r.content_type, "application/json");
    EXPECT_EQ(r.authorization, "Bearer s3cret");
    EXPECT_EQ(json::parse(r.body)["sweep"]["id"], "s1");
  }
  const auto c = hooks.counters();
  EXPECT_EQ(c.delivered, 1u);
  EXPECT_EQ(c.retried, 1u);
  EXPECT_EQ(c.dropped, 0u);
}

TEST(HooksTest, GivesUpAfterItsAttempts) {
  Receiver receiver;
  receiver.answer({500, 500});
  HookOptions h;
  h.url = receiver.url("/x");
  h.attempts = 2;
  h.backoff_seconds = 1;
  ManualClock clock;
  ProcessRunner runner(clock);
  DefaultHookTransport transport(runner);
  Hooks hooks({h}, transport, clock, [](const std::string&) {});
  hooks.onSweepEnd(hookEnding("s1", {"h1"}, {}), {});
  hooks.waitCounters([](const Hooks::Counters& c) { return c.retried == 1; });
  clock.advanceSeconds(1);
  receiver.waitFor(2);
  hooks.waitIdle();
  EXPECT_EQ(hooks.counters().dropped, 1u);
  EXPECT_EQ(hooks.counters().delivered, 0u);
}

TEST(HooksTest, CommandGetsTheEventOnStdinAndNeverBlocksTheCaller) {
  gdrmesh::testing::TempDir dir;
  HookOptions slow;
  slow.command = {"sleep", "600"};  // a hook that hangs: killed at its timeout
  slow.timeout_seconds = 0.3;
  slow.attempts = 1;
  HookOptions tee;
  tee.command = {"tee", "-a", dir.file("events")};
  ManualClock clock;
  ProcessRunner runner(clock);
  DefaultHookTransport transport(runner);
  Hooks hooks({slow, tee}, transport, clock, [](const std::string&) {});
  // Returns while the slow hook runs: the sweep never waits for a hook.
  hooks.onSweepEnd(hookEnding("s1", {"h1", "h2"}, {Suspect{"host", "h2", 1, {"x"}}}), {});
  // Each run of the slow hook ends when the clock passes its deadline (a timer on the clock
  // from the moment it starts): moved only then, never on real time.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (hooks.counters().dropped < 2 && std::chrono::steady_clock::now() < give_up) {
    if (clock.pendingTimers() > 0) {
      clock.advanceSeconds(0.3);
    } else {
      std::this_thread::yield();
    }
  }
  hooks.waitIdle();
  const std::string text = [&] {
    std::ifstream f(dir.file("events"));
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }();
  // Two events (the end and h2 appearing), one JSON object each, no newline between them.
  EXPECT_NE(text.find("\"event\":\"sweep-end\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"event\":\"suspect-appeared\""), std::string::npos) << text;
  EXPECT_EQ(hooks.counters().delivered, 2u);
  EXPECT_EQ(hooks.counters().dropped, 2u);  // the slow hook's two events, each timed out
}

// Records every event delivered (one hook), in order.
class RecordingHookTransport final : public HookTransport {
 public:
  Status deliver(const HookOptions&, const std::string& event) override {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(json::parse(event));
    return Status::okStatus();
  }
  // "appeared h2", "cleared h3", ... (sweep-end left out).
  std::vector<std::string> suspectEvents() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> out;
    for (const json& e : events_) {
      const std::string ev = e["event"];
      if (ev == "sweep-end") continue;
      out.push_back(ev.substr(ev.find('-') + 1) + " " + e["suspect"]["name"].get<std::string>());
    }
    events_.clear();
    return out;
  }

 private:
  std::mutex mu_;
  std::vector<json> events_;
};

// Issue #21: what the hooks last announced survives a coordinator restart (the database's
// hook_suspects). A standing suspect is not announced again, and one whose hosts pass after the
// restart clears. Kept in memory only, the restarted hooks announced h2 again and never cleared
// it.
TEST(HooksTest, ARestartedCoordinatorRemembersTheSuspectsItAnnounced) {
  gdrmesh::testing::TempDir dir;
  const std::string db = dir.file("results.db");
  HookOptions h;
  h.command = {"unused"};
  RecordingHookTransport transport;
  ManualClock clock;
  const Suspect h2{"host", "h2", 1, {"failed with 2 of 2 partners"}};
  const Suspect h3{"host", "h3", 1, {"failed with 2 of 2 partners"}};
  {
    auto store = SqliteStore::open(db);
    ASSERT_TRUE(store.ok()) << store.status().toString();
    Hooks hooks(
        {h}, transport, clock, [](const std::string&) {}, store->get());
    hooks.onSweepEnd(hookEnding("s1", {"h1", "h2", "h3"}, {h2}), {});
    hooks.waitIdle();
  }
  EXPECT_EQ(transport.suspectEvents(), std::vector<std::string>{"appeared h2"});
  {
    auto store = SqliteStore::open(db);  // the coordinator restarted
    ASSERT_TRUE(store.ok()) << store.status().toString();
    Hooks hooks(
        {h}, transport, clock, [](const std::string&) {}, store->get());
    hooks.onSweepEnd(hookEnding("s2", {"h1", "h2", "h3"}, {h2, h3}), {});
    hooks.waitIdle();
  }
  EXPECT_EQ(transport.suspectEvents(), std::vector<std::string>{"appeared h3"});
  {
    auto store = SqliteStore::open(db);  // again; h2 and h3 were repaired meanwhile
    ASSERT_TRUE(store.ok()) << store.status().toString();
    Hooks hooks(
        {h}, transport, clock, [](const std::string&) {}, store->get());
    hooks.onSweepEnd(hookEnding("s3", {"h1", "h2", "h3"}, {}), {});
    hooks.waitIdle();
    auto kept = (*store)->hookSuspects();
    ASSERT_TRUE(kept.ok()) << kept.status().toString();
    EXPECT_TRUE(kept->empty());
  }
  EXPECT_EQ(transport.suspectEvents(), (std::vector<std::string>{"cleared h2", "cleared h3"}));
}

}  // namespace
}  // namespace gdrmesh
