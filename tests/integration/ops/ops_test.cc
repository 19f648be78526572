// Operating a real coordinator (issue #21), end to end through the built `gdrmesh`:
//   - `coordinator --log-format json` writes nothing but JSON objects on stderr, one a line, with
//     the time in RFC 3339 UTC and the fields of the call site (worker, sweep), and nothing on
//     stdout (its announcements are lines of the log too).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

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

}  // namespace
}  // namespace gdrmesh::testing
