// Issue #9 ("Trust") end to end: a real coordinator, real workers, the real CLI, real HTTP.
//  - `gdrmesh worker remove`: a junk worker registered with a huge inventory is removed (with
//    --force, since it is online) and `gdrmesh workers` is small and clean again, also after a
//    coordinator restart; an offline worker is removed and its results stay; unknown names and
//    online workers without --force are refused naming them; a reader may not remove; a
//    worker removed while a sweep that includes it runs ends its tests, and the sweep finishes.
//  - the status page's reader token: 401 without it, the API with `Authorization: Bearer`, the
//    browser's /login cookie; a non-loopback page without a token is refused at start.
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <regex>
#include <thread>

#include "tests/support/local_cluster.h"
#include "tests/support/stream_worker.h"

namespace gdrmesh::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

bool listed(const json& ws, const std::string& name) {
  for (const auto& w : ws) {
    if (w.contains("name") && w["name"] == name) return true;
  }
  return false;
}

bool online(const json& ws, const std::string& name) {
  for (const auto& w : ws) {
    if (w.contains("name") && w["name"] == name) return w["state"] == "online";
  }
  return false;
}

// The largest inventory the registration limits allow (common/limits.h): 32 NICs x 4 ports x
// 64 GIDs and 64 notes of 2000 characters, about 1 MB on every `gdrmesh workers`.
v1::Inventory hugeInventory() {
  v1::Inventory inv = StreamWorker::emulatedInventory("junk-host");
  for (int n = 0; n < 32; ++n) {
    auto* nic = inv.add_nics();
    nic->set_name("junk" + std::to_string(n));
    for (int p = 1; p <= 4; ++p) {
      auto* port = nic->add_ports();
      port->set_port(p);
      port->set_state("ACTIVE");
      port->set_link_layer("Ethernet");
      port->set_rate_gbps(400);  // an ACTIVE port has a rate (issue #23)
      for (int g = 0; g < 64; ++g) {
        auto* gid = port->add_gids();
        gid->set_index(g);
        gid->set_gid("fe80:0000:0000:0000:0000:0000:0000:" + std::to_string(1000 + g));
        gid->set_type("RoCE v2");
      }
    }
  }
  for (int i = 0; i < 64; ++i) inv.add_notes(std::string(2000, 'j'));
  return inv;
}

TEST(WorkerRemove, AJunkWorkerIsRemovedAndWorkersIsCleanAgain) {
  LocalCluster c;
  c.startCoordinator();
  c.startWorker("a");
  c.startWorker("b");
  StreamWorker junk(c.address(), "junk", hugeInventory());
  ASSERT_TRUE(junk.waitRegistered(milliseconds(15000) * testTimeScale()))
      << junk.status().error_message();
  auto before = c.cli({"workers", "-o", "json"});
  ASSERT_EQ(before.exit_code, 0) << before.err;
  EXPECT_GT(before.out.size(), 500u * 1024) << "the junk inventory is on every listing";
  EXPECT_TRUE(listed(json::parse(before.out), "junk"));

  // Online: refused without --force, naming the worker and the fix.
  auto r = c.cli({"worker", "remove", "junk"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("worker 'junk' is online"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--force"), std::string::npos) << r.err;
  EXPECT_TRUE(listed(c.workersJson(), "junk"));

  r = c.cli({"worker", "remove", "junk", "--force", "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  json j = json::parse(r.out, nullptr, false);
  EXPECT_EQ(j["name"], "junk") << r.out;
  EXPECT_EQ(j["was_online"], true) << r.out;
  EXPECT_TRUE(junk.waitEnded(milliseconds(10000) * testTimeScale()))
      << "--force ends the worker's stream";

  auto after = c.cli({"workers", "-o", "json"});
  ASSERT_EQ(after.exit_code, 0) << after.err;
  json ws = json::parse(after.out);
  EXPECT_FALSE(listed(ws, "junk")) << after.out.substr(0, 500);
  EXPECT_EQ(ws.size(), 2u);
  EXPECT_LT(after.out.size(), 20u * 1024);
  auto table = c.cli({"workers"});
  EXPECT_EQ(table.exit_code, 0) << table.err;
  EXPECT_EQ(table.out.find("junk"), std::string::npos) << table.out;
  EXPECT_TRUE(c.query("SELECT name FROM workers WHERE name = 'junk'").empty())
      << "the stored registration is gone";
  const std::string log = readFile(c.dir() + "/coordinator.err");
  EXPECT_NE(log.find("worker junk removed while online"), std::string::npos) << log;
  EXPECT_NE(log.find("by an unauthenticated client (--insecure) from"), std::string::npos) << log;

  // It stays gone after a restart (only registrations come back from the store).
  const int port = c.port();
  c.stopCoordinator();
  c.startCoordinator({}, port);
  // The workers redial (with backoff) and register again.
  ASSERT_TRUE(c.waitFor([](const json& w) { return online(w, "a") && online(w, "b"); }));
  EXPECT_FALSE(listed(c.workersJson(), "junk"));
  // Tests between the others run on.
  r = c.cli({"test", "a", "b", "--size", "64KiB", "--iters", "10"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST(WorkerRemove, AnOfflineWorkerGoesAndItsResultsStay) {
  LocalCluster c;
  c.startCoordinator();
  c.startWorker("a");
  c.startWorker("old");
  auto r = c.cli({"test", "a", "old", "--size", "64KiB", "--iters", "10", "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string test_id = json::parse(r.out)["test_id"];
  c.killWorker("old");
  ASSERT_TRUE(c.waitFor([](const json& ws) {
    for (const auto& w : ws) {
      if (w["name"] == "old") return w["state"] == "offline";
    }
    return false;
  }));

  r = c.cli({"worker", "remove", "nosuch"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("unknown worker 'nosuch'"), std::string::npos) << r.err;

  r = c.cli({"worker", "remove", "old"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("worker old removed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("results stay"), std::string::npos) << r.out;
  EXPECT_FALSE(listed(c.workersJson(), "old"));
  // Its result is still in the history, by id and by worker.
  r = c.cli({"result", test_id, "-o", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  r = c.cli({"results", "--worker", "old", "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(json::parse(r.out).size(), 1u) << r.out;
  EXPECT_EQ(c.query("SELECT id FROM results").size(), 1u);
  // Removing twice: now unknown.
  r = c.cli({"worker", "remove", "old"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  // A worker that comes back registers again.
  c.startWorker("old");
  EXPECT_TRUE(listed(c.workersJson(), "old"));
}

TEST(WorkerRemove, AReaderMayNotRemoveAndTheRefusalIsLogged) {
  LocalCluster c{Security::kTls};
  c.startCoordinator();
  c.startWorker("a");
  const std::string reader = c.issue("reader", "rita");
  auto r = c.cli({"worker", "remove", "a", "--force", "--tls-dir", reader});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("RemoveWorker needs an admin credential"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("reader 'rita'"), std::string::npos) << r.err;
  EXPECT_TRUE(listed(c.workersJson(), "a"));
  // The admin (LocalCluster's CLI default) may; the log names who asked.
  c.killWorker("a");
  ASSERT_TRUE(c.waitFor([](const json& ws) {
    return !ws.empty() && ws[0]["name"] == "a" && ws[0]["state"] == "offline";
  }));
  r = c.cli({"worker", "remove", "a"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string log = readFile(c.dir() + "/coordinator.err");
  EXPECT_NE(log.find("RemoveWorker by reader 'rita'"), std::string::npos) << log;
  EXPECT_NE(log.find("refused (permission denied)"), std::string::npos) << log;
  EXPECT_NE(log.find("worker a removed by admin '"), std::string::npos) << log;
}

// ------------------------------------------------------------------ the status page's token

const std::string kToken = "c0ffee0123456789c0ffee0123456789";

std::string writeToken(const LocalCluster& c, mode_t mode) {
  const std::string path = c.dir() + "/http.token";
  {
    std::ofstream f(path, std::ios::trunc);
    f << kToken << "\n";
  }
  ::chmod(path.c_str(), mode);
  return path;
}

int httpPort(const LocalCluster& c) {
  const std::regex line(R"(status page on http://[^:]+:(\d+)/)");
  for (int i = 0; i < 500; ++i) {  // bounded: 10 s
    std::smatch m;
    const std::string out = readFile(c.dir() + "/coordinator.out");
    if (std::regex_search(out, m, line)) return std::stoi(m[1]);
    std::this_thread::sleep_for(milliseconds(20));
  }
  return 0;
}

// Removing a worker while a sweep that includes it runs: a worker that hangs inside a
// command (it heartbeats, so it is never lost) holds its pair test; `worker remove --force`
// ends its stream, the test waiting on it ends at once as a recorded failure naming it (not at
// the command deadline, set far away here), and the sweep goes on to its end with every
// planned test accounted for.
TEST(WorkerRemove, RemovingAWorkerMidSweepEndsItsTestsAndTheSweepFinishes) {
  LocalCluster c;
  c.startCoordinator({"--command-timeout", "60s"});
  c.startWorker("a");
  c.startWorker("b");
  StreamWorker hung(c.address(), "hung", StreamWorker::emulatedInventory("hung-host"));
  ASSERT_TRUE(hung.waitRegistered(milliseconds(15000) * testTimeScale()))
      << hung.status().error_message();

  auto r = c.cli({"sweep", "run", "--pattern", "all-pairs", "--size", "4KiB", "--iters", "10",
                  "--retries", "0", "--detach", "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string id = json::parse(r.out)["id"].get<std::string>();
  ASSERT_TRUE(hung.waitCommands(1, milliseconds(15000) * testTimeScale()))
      << "the sweep never reached 'hung'";

  const auto t0 = std::chrono::steady_clock::now();
  r = c.cli({"worker", "remove", "hung", "--force"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto followed = c.cli({"sweep", "follow", id});
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_LT(took, seconds(30)) << "the sweep waited for the 60 s command deadline";

  r = c.cli({"sweep", "show", id, "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  json sweep = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(sweep.is_object()) << r.out;
  const json& progress = sweep.contains("progress") ? sweep["progress"] : sweep;
  EXPECT_EQ(progress["state"], "finished") << sweep.dump(2).substr(0, 2000);
  EXPECT_EQ(progress["tests_done"], progress["tests_total"]) << progress.dump();
  // 3 hosts: 3 pairs, plus the localiser's retests of the failures with known-good partners.
  EXPECT_GE(progress["tests_total"].get<int>(), 3) << progress.dump();
  // The pair tests with 'hung' failed naming it; the others passed.
  auto rows = c.query(
      "SELECT initiator_worker AS initiator, target_worker AS target, status, reason FROM results "
      "WHERE run_id = '" +
      id + "'");
  ASSERT_EQ(rows.size(), progress["tests_total"].get<size_t>());
  int with_hung = 0;
  for (const auto& row : rows) {
    const bool hung_side = row.at("initiator") == "hung" || row.at("target") == "hung";
    if (!hung_side) {
      EXPECT_EQ(row.at("status"), "PASSED") << row.at("reason");
      continue;
    }
    ++with_hung;
    EXPECT_NE(row.at("status"), "PASSED");
    EXPECT_NE(row.at("reason").find("hung"), std::string::npos) << row.at("reason");
  }
  EXPECT_GE(with_hung, 2);
  EXPECT_FALSE(listed(c.workersJson(), "hung"));
  // The coordinator serves on: a and b run a test of their own.
  r = c.cli({"test", "a", "b", "--size", "4KiB", "--iters", "10"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST(StatusPageToken, EveryRequestNeedsTheTokenAndTheBrowserLoginSetsACookie) {
  LocalCluster c;
  c.startCoordinator({"--http", "127.0.0.1:0", "--http-token-file", writeToken(c, 0600)});
  c.startWorker("a");
  const int port = httpPort(c);
  ASSERT_GT(port, 0) << readFile(c.dir() + "/coordinator.out");
  EXPECT_NE(readFile(c.dir() + "/coordinator.out").find("reader token required"),
            std::string::npos);
  httplib::Client http("127.0.0.1", port);

  for (const char* path : {"/", "/api/workers", "/api/results", "/metrics", "/healthz"}) {
    auto res = http.Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 401) << path << ": " << res->body;
    EXPECT_NE(res->body.find("--http-token-file"), std::string::npos) << res->body;
    EXPECT_EQ(res->body.find("\"name\""), std::string::npos) << "nothing of the cluster leaks";
  }
  auto wrong = http.Get("/api/workers", {{"Authorization", "Bearer " + kToken.substr(1) + "0"}});
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);

  auto ok = http.Get("/api/workers", {{"Authorization", "Bearer " + kToken}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  auto ws = json::parse(ok->body, nullptr, false);
  EXPECT_TRUE(listed(ws, "a")) << ok->body;
  // The API's own answers are unchanged behind the gate.
  auto bad = http.Get("/api/results?limit=0", {{"Authorization", "Bearer " + kToken}});
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400) << bad->body;

  // A browser: /login?token= sets the cookie and sends it to /.
  auto login = http.Get("/login?token=" + kToken);
  ASSERT_TRUE(login);
  EXPECT_EQ(login->status, 303) << login->body;
  EXPECT_EQ(login->get_header_value("Location"), "/");
  const std::string cookie = login->get_header_value("Set-Cookie");
  EXPECT_NE(cookie.find("HttpOnly"), std::string::npos) << cookie;
  EXPECT_NE(cookie.find("SameSite=Strict"), std::string::npos) << cookie;
  auto page = http.Get("/", {{"Cookie", cookie.substr(0, cookie.find(';'))}});
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("<html"), std::string::npos);
  auto bad_login = http.Get("/login?token=guess-guess-guess-guess");
  ASSERT_TRUE(bad_login);
  EXPECT_EQ(bad_login->status, 401);
  EXPECT_TRUE(bad_login->get_header_value("Set-Cookie").empty());

  // curl, as docs/security.md shows it.
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/api/workers";
  const std::string cmd = "curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer " +
                          kToken + "' " + url + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[64] = {0};
  const size_t n = std::fread(buf, 1, sizeof(buf) - 1, p);
  EXPECT_EQ(::pclose(p), 0) << "curl failed: " << std::string(buf, n);
  EXPECT_EQ(std::string(buf, n), "200");
}

TEST(StatusPageToken, ANonLoopbackPageWithoutATokenIsRefusedAtStart) {
  LocalCluster c;
  const std::string db = c.dir() + "/refused.db";
  auto r = c.cli(
      {"coordinator", "--listen", "127.0.0.1:0", "--db", db, "--insecure", "--http", "0.0.0.0:0"},
      false);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--http-token-file"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--http-allow-anonymous"), std::string::npos) << r.err;

  // A token file others can read is refused too, naming the chmod.
  const std::string loose = writeToken(c, 0644);
  r = c.cli({"coordinator", "--listen", "127.0.0.1:0", "--db", db, "--insecure", "--http",
             "0.0.0.0:0", "--http-token-file", loose},
            false);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("chmod 600 " + loose), std::string::npos) << r.err;
  r = c.cli({"coordinator", "--listen", "127.0.0.1:0", "--db", db, "--insecure",
             "--http-token-file", loose},
            false);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("only with --http"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace gdrmesh::testing
