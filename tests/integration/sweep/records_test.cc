// Issue #22, with real processes: a coordinator binary on a real SQLite file, simulated workers
// (`gdrmesh worker --simulate`), the CLI and the HTTP API, and a coordinator killed (-9) or
// stopped (SIGTERM) and started again on the same database.
//
//   - the sweeps list keeps every earlier sweep's counts (done, failed, skipped) and its failing
//     verdicts across restarts (it showed 0/N tests and 0 failed);
//   - a sweep over simulated workers resumes after a kill -9 (it ended "no worker named
//     'sim-0000'"), and the test it had in flight gets its ERROR row.
//
// Every wait is a bounded poll of an observable state (the database file, the CLI's answer).
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <thread>

#include "tests/support/local_cluster.h"

namespace gdrmesh::testing {
namespace {

using nlohmann::json;

// The status page's port, from the coordinator's "status page on http://HOST:PORT/" line.
int httpPort(const LocalCluster& c) {
  const std::regex line(R"(status page on http://[^:]+:(\d+)/)");
  for (int i = 0; i < 500; ++i) {  // bounded: 10 s
    std::smatch m;
    const std::string out = readFile(c.dir() + "/coordinator.out");
    if (std::regex_search(out, m, line)) return std::stoi(m[1]);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return 0;
}

// A JSON number: the CLI and the API write integers as numbers (docs/json.md, "One encoding");
// a string (protobuf's JSON mapping of 64-bit integers) fails the test.
uint64_t num(const json& j) {
  EXPECT_TRUE(j.is_number()) << j.dump();
  return j.is_number() ? j.get<uint64_t>() : 0;
}

// What a list says of one sweep: "done/total failed skipped verdicts pass/fail/skip".
std::string countsOf(const json& p) {
  const json& vc = p.contains("verdict_counts") ? p["verdict_counts"] : json::object();
  // One encoding (docs/json.md): the CLI and the API both count {pass, fail, skip}.
  auto count = [&](const char* key) { return vc.contains(key) ? num(vc[key]) : 0; };
  return std::to_string(num(p["tests_done"])) + "/" + std::to_string(num(p["tests_total"])) +
         " failed " + std::to_string(num(p["tests_failed"])) + " skipped " +
         std::to_string(num(p["tests_skipped"])) + " verdicts " + std::to_string(count("pass")) +
         "/" + std::to_string(count("fail")) + "/" + std::to_string(count("skip")) + " " +
         (p.contains("verdict") ? p["verdict"].get<std::string>() : "");
}

class RecordsTest : public ::testing::Test {
 protected:
  // id -> counts, from `gdrmesh sweeps -o json`.
  std::map<std::string, std::string> cliCounts() {
    auto r = c_.cli({"sweeps", "-o", "json"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    std::map<std::string, std::string> out;
    auto j = json::parse(r.out, nullptr, false);
    if (j.is_discarded() || !j.contains("sweeps")) {
      ADD_FAILURE() << "not a sweeps list: " << r.out;
      return out;
    }
    for (const auto& p : j["sweeps"]) out[p["id"]] = countsOf(p);
    return out;
  }
  // id -> counts, from GET /api/sweeps.
  std::map<std::string, std::string> httpCounts() {
    const int port = httpPort(c_);
    EXPECT_GT(port, 0) << readFile(c_.dir() + "/coordinator.out");
    httplib::Client http("127.0.0.1", port);
    auto res = http.Get("/api/sweeps");
    std::map<std::string, std::string> out;
    if (!res || res->status != 200) {
      ADD_FAILURE() << "GET /api/sweeps failed";
      return out;
    }
    for (const auto& p : json::parse(res->body)) out[p["id"]] = countsOf(p);
    return out;
  }
  std::string lastSweepId() {
    auto rows = c_.query("SELECT id FROM sweeps ORDER BY created_ms DESC LIMIT 1");
    return rows.empty() ? "" : rows[0]["id"];
  }
  LocalCluster c_;
};

// Three simulated workers (100 Gb/s each), a sweep that FAILs on a 1000 Gb/s floor with every
// test PASSED, and one that passes; then kill -9 and SIGTERM, each followed by a new start.
TEST_F(RecordsTest, TheSweepsListKeepsItsCountsAcrossRestarts) {
  c_.startCoordinator({"--http", "127.0.0.1:0"});
  const int port = c_.port();
  c_.startWorker("sim-0000", {"--simulate", "3", "--sim-test-ms", "5"});
  const std::string cfg = c_.dir() + "/floor.yaml";
  std::ofstream(cfg) << "thresholds:\n  bandwidth_gbps_min: 1000\n";
  auto failing = c_.cli({"sweep", "run", "--pattern", "all-pairs", "--config", cfg, "--no-localise",
                         "--size", "64KiB", "--iters", "10"});
  ASSERT_EQ(failing.exit_code, 1) << failing.out << failing.err;
  const std::string fail_id = lastSweepId();
  auto passing =
      c_.cli({"sweep", "run", "--pattern", "all-pairs", "--no-localise", "--sizes", "4KiB,64KiB"});
  ASSERT_EQ(passing.exit_code, 0) << passing.out << passing.err;
  const std::string pass_id = lastSweepId();
  ASSERT_NE(fail_id, pass_id);

  const auto before = cliCounts();
  ASSERT_EQ(before.size(), 2u);
  EXPECT_EQ(before.at(fail_id), "3/3 failed 0 skipped 0 verdicts 0/3/0 FAIL")
      << "the list must show the failing verdicts of a sweep whose tests all passed";
  EXPECT_EQ(before.at(pass_id), "6/6 failed 0 skipped 0 verdicts 6/0/0 PASS");
  EXPECT_EQ(httpCounts(), before);
  auto table = c_.cli({"sweeps"});
  EXPECT_NE(table.out.find("FAIL (3 of 3)"), std::string::npos) << table.out;

  c_.stopCoordinator(SIGKILL);
  c_.startCoordinator({"--http", "127.0.0.1:0"}, port);
  EXPECT_EQ(cliCounts(), before) << "after kill -9";
  EXPECT_EQ(httpCounts(), before) << "after kill -9";

  c_.stopCoordinator(SIGTERM);
  c_.startCoordinator({"--http", "127.0.0.1:0"}, port);
  EXPECT_EQ(cliCounts(), before) << "after SIGTERM";
  EXPECT_EQ(httpCounts(), before) << "after SIGTERM";
  // `sweep show` agreed all along; the list now agrees with it.
  auto show = c_.cli({"sweep", "show", fail_id, "-o", "json"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  const auto shown = json::parse(show.out);
  EXPECT_EQ(num(shown["verdict_counts"]["fail"]), 3u) << show.out;
}

// A sweep over simulated workers, killed (-9) with a test in flight: the simulated workers
// reconnect, the sweep resumes and finishes with every planned test once, and the test that
// was in flight has an ERROR row naming its pair.
TEST_F(RecordsTest, ASimulatedSweepResumesAfterACoordinatorKill) {
  c_.startCoordinator();
  const int port = c_.port();
  c_.startWorker("sim-0000", {"--simulate", "4", "--sim-test-ms", "400"});
  auto r = c_.cli({"sweep", "run", "--pattern", "all-pairs", "--no-localise", "--sizes",
                   "4KiB,8KiB,16KiB,32KiB", "--detach"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string id = lastSweepId();
  ASSERT_FALSE(id.empty());
  // Kill once a test's in-flight marker is stored and its result is not.
  const std::string in_flight_sql =
      "SELECT st.test_id FROM sweep_test_starts st "
      "WHERE st.sweep_id = '" +
      id +
      "' AND NOT EXISTS (SELECT 1 FROM results r WHERE r.run_id = st.sweep_id AND "
      "r.plan_index = st.plan_index)";
  std::vector<std::map<std::string, std::string>> marked;
  for (int i = 0; i < 1500 && marked.empty(); ++i) {  // bounded: 30 s
    marked = c_.query(in_flight_sql);
    if (marked.empty()) ::usleep(20000);
  }
  ASSERT_FALSE(marked.empty()) << "no test was ever marked in flight";
  c_.stopCoordinator(SIGKILL);
  std::set<std::string> cut;
  for (const auto& m : c_.query(in_flight_sql)) cut.insert(m.at("test_id"));
  ASSERT_FALSE(cut.empty());

  c_.startCoordinator({}, port);
  auto f = c_.collect(c_.cliAsync({"sweep", "follow", id}, "follow"), "follow",
                      std::chrono::seconds(200));
  EXPECT_EQ(f.exit_code, 0) << f.out << f.err << readFile(c_.dir() + "/coordinator.err");
  auto sweep = c_.query("SELECT state, verdict, reason FROM sweeps WHERE id = '" + id + "'");
  ASSERT_EQ(sweep.size(), 1u);
  EXPECT_EQ(sweep[0]["state"], "finished") << sweep[0]["reason"];
  EXPECT_EQ(sweep[0]["verdict"], "PASS") << sweep[0]["reason"];
  auto planned = c_.query("SELECT plan_index, COUNT(*) AS n FROM results WHERE run_id = '" + id +
                          "' AND plan_index >= 0 GROUP BY plan_index");
  EXPECT_EQ(planned.size(), 24u) << "6 pairs x 4 sizes";
  for (auto& row : planned) EXPECT_EQ(row["n"], "1") << "plan index " << row["plan_index"];
  for (const std::string& test_id : cut) {
    auto rows = c_.query(
        "SELECT status, reason, initiator_worker, target_worker, plan_index FROM results WHERE "
        "test_id = '" +
        test_id + "'");
    ASSERT_EQ(rows.size(), 1u) << "the test in flight left no row: " << test_id;
    EXPECT_EQ(rows[0]["status"], "ERROR");
    EXPECT_EQ(rows[0]["reason"].rfind("interrupted:", 0), 0u) << rows[0]["reason"];
    EXPECT_EQ(rows[0]["initiator_worker"].rfind("sim-", 0), 0u) << rows[0]["initiator_worker"];
    EXPECT_EQ(rows[0]["target_worker"].rfind("sim-", 0), 0u) << rows[0]["target_worker"];
  }
}

}  // namespace
}  // namespace gdrmesh::testing
