// Operating a real coordinator (issue #21), end to end through the built `gdrmesh`:
//   - `coordinator --log-format json` writes nothing but JSON objects on stderr, one a line, with
//     the time in RFC 3339 UTC and the fields of the call site (worker, sweep), and nothing on
//     stdout (its announcements are lines of the log too);
//   - `gdrmesh actions` lists what a dry-run of the Slurm actions recorded, with its filters and
//     in each output format.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/local_cluster.h"

namespace gdrmesh::testing {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

bool allOnline(const json& ws, size_t n) {
  size_t online = 0;
  for (const auto& w : ws) online += w["state"] == "online" ? 1 : 0;
  return online == n;
}

TEST(CoordinatorLog, JsonFormatWritesOnlyJsonLinesWithTheirFields) {
  LocalCluster c;
  c.startCoordinator({"--log-format", "json"});
  c.startWorker("a");
  c.startWorker("b");
  auto sweep = c.cli({"sweep", "run", "--pattern", "all-pairs", "--size", "4KiB", "--iters", "10"});
  ASSERT_EQ(sweep.exit_code, 0) << sweep.out << sweep.err;
  c.stopCoordinator(SIGTERM);  // its last line ("stopped") is written before it exits

  const std::string err = readFile(c.dir() + "/coordinator.err");
  EXPECT_EQ(readFile(c.dir() + "/coordinator.out"), "");
  const std::regex rfc3339(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)");
  std::istringstream lines(err);
  std::string line;
  std::vector<json> logged;
  while (std::getline(lines, line)) {
    json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(j.is_object()) << "not a JSON object: " << line << "\nwhole log:\n" << err;
    ASSERT_TRUE(j["ts"].is_string()) << line;
    EXPECT_TRUE(std::regex_match(j["ts"].get<std::string>(), rfc3339)) << line;
    EXPECT_THAT(j["level"].get<std::string>(), ::testing::AnyOf("debug", "info", "warn", "error"))
        << line;
    EXPECT_EQ(j["component"], "coordinator") << line;
    ASSERT_TRUE(j["msg"].is_string()) << line;
    logged.push_back(std::move(j));
  }
  ASSERT_FALSE(logged.empty());
  EXPECT_TRUE(err.back() == '\n');
  const auto has = [&](const std::string& msg_part, const std::string& key,
                       const std::string& value) {
    for (const json& j : logged) {
      if (j["msg"].get<std::string>().find(msg_part) != std::string::npos &&
          j.value(key, std::string()) == value) {
        return true;
      }
    }
    return false;
  };
  EXPECT_TRUE(has("listening on", "db", c.dbPath())) << err;
  EXPECT_TRUE(has("worker a registered from", "worker", "a")) << err;
  EXPECT_TRUE(has("worker b registered from", "worker", "b")) << err;
  const auto ids = c.query("SELECT id FROM sweeps ORDER BY created_ms DESC LIMIT 1");
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_TRUE(has("started", "sweep", ids[0].at("id"))) << err;
  EXPECT_TRUE(has("finished: verdict PASS", "sweep", ids[0].at("id"))) << err;
  EXPECT_EQ(logged.back()["msg"], "stopped") << err;
}

TEST(ActionsCommand, ListsTheDryRunDecisionsWithFiltersInEveryFormat) {
  LocalCluster c;
  // A stand-in scontrol: every node is idle; dry-run only reads the nodes.
  const std::string scontrol = c.dir() + "/scontrol";
  std::ofstream(scontrol) << "#!/bin/sh\necho \"NodeName=$4 State=IDLE Reason=(null)\"\n";
  ASSERT_EQ(::chmod(scontrol.c_str(), 0755), 0);
  const std::string cfg = c.dir() + "/cluster.yaml";
  std::ofstream(cfg) << "actions:\n  mode: dry-run\n  actuator: slurm\n  scontrol: " << scontrol
                     << "\n";
  c.startCoordinator({"--config", cfg});
  c.startWorker("sim-0000",
                {"--simulate", "4", "--sim-test-ms", "5", "--sim-fault", "fail:sim-0001"});
  ASSERT_TRUE(c.waitFor([](const json& ws) { return allOnline(ws, 4); }));

  auto none = c.cli({"actions"});
  ASSERT_EQ(none.exit_code, 0) << none.out << none.err;
  EXPECT_THAT(none.out, HasSubstr("no node actions recorded"));

  auto failing =
      c.cli({"sweep", "run", "--pattern", "all-pairs", "--size", "64KiB", "--iters", "10"});
  ASSERT_EQ(failing.exit_code, 1) << failing.out << failing.err;
  const auto ids = c.query("SELECT id FROM sweeps ORDER BY created_ms DESC LIMIT 1");
  ASSERT_EQ(ids.size(), 1u);
  const std::string sweep_id = ids[0].at("id");

  auto j = c.cli({"actions", "-o", "json"});
  ASSERT_EQ(j.exit_code, 0) << j.out << j.err;
  const json listed = json::parse(j.out);
  ASSERT_EQ(listed["actions"].size(), 1u) << j.out;
  const json& a = listed["actions"][0];
  EXPECT_EQ(a["node"], "sim-0001");
  EXPECT_EQ(a["action"], "drain");
  EXPECT_EQ(a["outcome"], "dry-run");
  EXPECT_EQ(a["actuator"], "slurm");
  EXPECT_EQ(a["sweep_id"], sweep_id);
  EXPECT_THAT(a["reason"].get<std::string>(), HasSubstr("gdrmesh: host suspect"));
  EXPECT_THAT(a["detail"].get<std::string>(), HasSubstr("would run: "));
  // The same row as the database holds.
  const auto rows = c.query("SELECT node, action, outcome, sweep_id FROM node_actions");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].at("sweep_id"), sweep_id);

  auto table = c.cli({"actions", "--host", "sim-0001", "--since", "1h"});
  ASSERT_EQ(table.exit_code, 0) << table.out << table.err;
  EXPECT_THAT(table.out, HasSubstr("NODE"));
  EXPECT_THAT(table.out, HasSubstr("sim-0001"));
  EXPECT_THAT(table.out, HasSubstr("dry-run"));
  EXPECT_THAT(table.out, HasSubstr(sweep_id));

  auto csv = c.cli({"actions", "-o", "csv", "--sweep", sweep_id});
  ASSERT_EQ(csv.exit_code, 0) << csv.out << csv.err;
  EXPECT_THAT(csv.out, HasSubstr("node"));
  EXPECT_THAT(csv.out, HasSubstr("sim-0001"));

  auto other = c.cli({"actions", "--host", "sim-0000", "-o", "json"});
  ASSERT_EQ(other.exit_code, 0) << other.out << other.err;
  EXPECT_TRUE(json::parse(other.out).value("actions", json::array()).empty()) << other.out;
  auto later = c.cli({"actions", "--since", "2099-01-01", "-o", "json"});
  ASSERT_EQ(later.exit_code, 0) << later.out << later.err;
  EXPECT_TRUE(json::parse(later.out).value("actions", json::array()).empty()) << later.out;
  auto bad = c.cli({"actions", "--since", "yesterday"});
  EXPECT_EQ(bad.exit_code, 2) << bad.out << bad.err;
  EXPECT_THAT(bad.err, HasSubstr("--since"));
}

}  // namespace
}  // namespace gdrmesh::testing
