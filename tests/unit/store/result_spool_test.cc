// The result writer's spool (ResultSpool): JSON lines a human can read, synced appends, a replay
// that skips what is stored and what a crash cut short, and a spool of the earlier format
// (tab-separated, percent-escaped) read once at start and rewritten when it cannot be stored.
#include "coordinator/store/result_spool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "coordinator/store/sqlite_store.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/store/store_contract_test.h"

namespace gdrmesh::testing {
namespace {

using ::testing::HasSubstr;

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<std::string> linesOf(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Written by the build before the JSON lines (its SpoolEncoder): a result with every kind of
// field (an escaped tab and newline and "%41" in the reason, a NaN figure, negative integers),
// one from before migration 8 (without the two cpu_binding fields), and an append a crash cut
// short.
const char* const kEarlierFormatSpool =
    "gdrmesh-spool-1\tt-v1-full\ts-"
    "legacy\t3\t1700000000000\t1700000001000\twrite\tbw\tverbs\th1\thost-1\tmlx5_0\t1\t0\t0000:17:"
    "00.0\tcuda\tdmabuf\t0\t\th2\thost-2\tmlx5_1\t1\t-"
    "1\t\thost\thost\t0\t\t1048576\t1000\t2\t0\t0\t0\t0\t0\t1\t123456789012\t0\t0\t97."
    "123456789012351\t0\t0\t0\t0\t0\t0\tnan\t0\t0\t0\t0\t0\t0\t0\t0\t0\t0\t0\t0\t0\t-"
    "1\t\tPASSED\todd%09text%0Awith %2541 in it\tcpu 1 (numa 0, nic mlx5_0)\tcpu 2 (numa 0, nic "
    "mlx5_1)\n"
    "gdrmesh-spool-1\tt-v1-early\ts-"
    "legacy\t3\t1700000000000\t1700000001000\twrite\tbw\tverbs\th1\thost-1\tmlx5_0\t1\t0\t0000:17:"
    "00.0\tcuda\tdmabuf\t0\t\th2\thost-2\tmlx5_1\t1\t-"
    "1\t\thost\thost\t0\t\t1048576\t1000\t2\t0\t0\t0\t0\t0\t1\t123456789012\t0\t0\t97."
    "123456789012351\t0\t0\t0\t0\t0\t0\tnan\t0\t0\t0\t0\t0\t0\t0\t0\t0\t0\t0\t0\t0\t-"
    "1\t\tPASSED\t\n"
    "gdrmesh-spool-1\tt-v1-torn\t";

class ResultSpoolTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(dir_.ok()); }
  std::string dbPath() const { return dir_.file("gdrmesh.db"); }
  std::string spoolPath() const { return dbPath() + ".spool"; }
  std::unique_ptr<SqliteStore> openStore() {
    auto s = SqliteStore::open(dbPath());
    EXPECT_TRUE(s.ok()) << s.status().toString();
    return s.ok() ? std::move(*s) : nullptr;
  }

  TempDir dir_;
};

// Refuses every insert as a full disk would; has nothing stored.
class FullRecords final : public ResultRecords {
 public:
  Result<int64_t> insertResult(const TestResult& /*r*/) override { return full(); }
  Result<std::vector<int64_t>> insertResults(const std::vector<TestResult>& /*rs*/) override {
    return full();
  }
  Result<std::vector<TestResult>> queryResults(const ResultQuery& /*q*/) override {
    return std::vector<TestResult>();
  }
  Result<std::optional<TestResult>> getResult(const std::string& /*id*/) override {
    return std::optional<TestResult>();
  }
  Result<uint64_t> countResults(const ResultQuery& /*q*/) override { return uint64_t{0}; }
  Result<std::vector<TestResult>> queryHistory(const HistoryQuery& /*q*/) override {
    return std::vector<TestResult>();
  }

 private:
  static Status full() { return Status(Code::kResourceExhausted, "database disk is full"); }
};

TEST_F(ResultSpoolTest, ASpooledResultComesBackWholeAfterAKill) {
  TestResult r = makeResult("t-spooled", "a", "b", 42);
  r.reason = "odd\ttext\nwith %41, \"quotes\" and \x01 in it";
  r.initiator.reg_path = r.target.reg_path = RegPath::kHost;
  r.measurement.has_bandwidth = true;
  r.measurement.bw.avg_gbps = 97.123456789012345;
  r.measurement.bw.peak_gbps = -0.0;
  r.measurement.bw.bytes = std::numeric_limits<uint64_t>::max();
  r.measurement.lat.p99_us = std::numeric_limits<double>::infinity();
  r.measurement.lat.p999_us = std::numeric_limits<double>::quiet_NaN();
  r.integrity.first_wrong_offset = -1;
  TestResult big = r;
  big.test_id = "t-big";
  big.reason = std::string(256 * 1024, 'x');
  {
    ResultSpool spool(ResultSpool::spoolPathFor(dbPath()));
    EXPECT_EQ(spool.path(), spoolPath());
    ASSERT_TRUE(spool.append(big).ok());
    ASSERT_TRUE(spool.append(r).ok());
    // The spool goes away without a word (as a killed process would); the file stays.
  }
  // One JSON document per line, the result's fields by name.
  const std::vector<std::string> lines = linesOf(slurp(spoolPath()));
  ASSERT_EQ(lines.size(), 2u) << "one line per result";
  const nlohmann::json j = nlohmann::json::parse(lines[1]);
  EXPECT_EQ(j["spool"], 2);
  EXPECT_EQ(j["result"]["test_id"], "t-spooled");
  EXPECT_EQ(j["result"]["reason"], r.reason);
  EXPECT_EQ(j["result"]["lat_p99_us"], "Infinity");

  auto store = openStore();
  ASSERT_NE(store, nullptr);
  ResultSpool spool(spoolPath());
  auto replay = spool.replay(*store);
  ASSERT_TRUE(replay.ok()) << replay.status().toString();
  EXPECT_EQ(replay->replayed, 2u);
  EXPECT_EQ(replay->torn, 0u);
  EXPECT_FALSE(std::ifstream(spoolPath()).good()) << "a replayed spool is removed";
  auto got = store->getResult("t-spooled");
  ASSERT_TRUE(got.ok() && got->has_value()) << got.status().toString();
  r.id = (*got)->id;
  expectSameResult(r, **got);
  got = store->getResult("t-big");
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->reason.size(), 256u * 1024);
  // Replaying again is a no-op.
  replay = spool.replay(*store);
  ASSERT_TRUE(replay.ok());
  EXPECT_EQ(replay->replayed + replay->already_stored + replay->torn, 0u);
}

TEST_F(ResultSpoolTest, ReplaySkipsStoredResultsAndARecordCutShortByACrash) {
  auto store = openStore();
  ASSERT_NE(store, nullptr);
  ResultSpool spool(spoolPath());
  TestResult a = makeResult("t-a", "a", "b", 1), b = makeResult("t-b", "a", "b", 2);
  ASSERT_TRUE(spool.append(a).ok());
  ASSERT_TRUE(spool.append(b).ok());
  ASSERT_TRUE(store->insertResult(a).ok());  // stored by a retry before the crash
  {
    std::ofstream f(spoolPath(), std::ios::app | std::ios::binary);
    f << R"({"spool":2,"result":{"test_id":"t-c")";  // the append the crash cut short
  }
  auto replay = spool.replay(*store);
  ASSERT_TRUE(replay.ok()) << replay.status().toString();
  EXPECT_EQ(replay->replayed, 1u);
  EXPECT_EQ(replay->already_stored, 1u);
  EXPECT_EQ(replay->torn, 1u);
  ResultQuery all;
  all.limit = 0;
  auto rows = store->queryResults(all);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->size(), 2u) << "each result once, nothing half-written";
}

TEST_F(ResultSpoolTest, ASpoolOfTheEarlierFormatIsReadOnceAtStart) {
  { std::ofstream(spoolPath(), std::ios::binary) << kEarlierFormatSpool; }
  auto store = openStore();
  ASSERT_NE(store, nullptr);
  ResultSpool spool(spoolPath());
  auto replay = spool.replay(*store);
  ASSERT_TRUE(replay.ok()) << replay.status().toString();
  EXPECT_EQ(replay->replayed, 2u);
  EXPECT_EQ(replay->torn, 1u);
  EXPECT_FALSE(std::ifstream(spoolPath()).good()) << "read once, then removed";
  auto full = store->getResult("t-v1-full");
  ASSERT_TRUE(full.ok() && full->has_value()) << full.status().toString();
  EXPECT_EQ((*full)->run_id, "s-legacy");
  EXPECT_EQ((*full)->plan_index, 3);
  EXPECT_EQ((*full)->started_ms, 1700000000000);
  EXPECT_EQ((*full)->initiator.memory, MemoryKind::kCuda);
  EXPECT_EQ((*full)->initiator.reg_path, RegPath::kDmabuf);
  EXPECT_EQ((*full)->target.gpu, -1);
  EXPECT_EQ((*full)->measurement.bw.bytes, 123456789012u);
  EXPECT_EQ((*full)->measurement.bw.avg_gbps, 97.123456789012345);
  EXPECT_TRUE(std::isnan((*full)->measurement.lat.median_us));
  EXPECT_EQ((*full)->integrity.first_wrong_offset, -1);
  EXPECT_EQ((*full)->reason, "odd\ttext\nwith %41 in it");
  EXPECT_EQ((*full)->target.cpu_binding, "cpu 2 (numa 0, nic mlx5_1)");
  auto early = store->getResult("t-v1-early");
  ASSERT_TRUE(early.ok() && early->has_value()) << early.status().toString();
  EXPECT_EQ((*early)->initiator.cpu_binding, "");
}

TEST_F(ResultSpoolTest, ASpoolOfTheEarlierFormatIsRewrittenAsJsonLinesWhenNotStored) {
  { std::ofstream(spoolPath(), std::ios::binary) << kEarlierFormatSpool; }
  ResultSpool spool(spoolPath());
  FullRecords full;
  auto replay = spool.replay(full);
  ASSERT_FALSE(replay.ok());
  EXPECT_EQ(replay.status().code(), Code::kResourceExhausted) << replay.status().toString();
  EXPECT_THAT(replay.status().message(),
              HasSubstr("spool file " + spoolPath() + " (kept, rewritten as JSON lines"));
  const std::vector<std::string> lines = linesOf(slurp(spoolPath()));
  ASSERT_EQ(lines.size(), 2u) << "both whole records kept, the torn one dropped";
  EXPECT_EQ(nlohmann::json::parse(lines[0])["result"]["test_id"], "t-v1-full");
  EXPECT_EQ(nlohmann::json::parse(lines[1])["result"]["test_id"], "t-v1-early");
  auto store = openStore();
  ASSERT_NE(store, nullptr);
  replay = spool.replay(*store);
  ASSERT_TRUE(replay.ok()) << replay.status().toString();
  EXPECT_EQ(replay->replayed, 2u);
  EXPECT_EQ(replay->torn, 0u);
  auto got = store->getResult("t-v1-full");
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->reason, "odd\ttext\nwith %41 in it");
}

TEST_F(ResultSpoolTest, AReplayIntoAFullDatabaseKeepsTheSpool) {
  auto store = openStore();
  ASSERT_NE(store, nullptr);
  ResultSpool spool(spoolPath());
  TestResult big = makeResult("t-big", "a", "b", 1);
  big.reason = std::string(256 * 1024, 'x');
  ASSERT_TRUE(spool.append(big).ok());
  auto pages = store->pageCountForTesting();
  ASSERT_TRUE(pages.ok());
  ASSERT_TRUE(store->setMaxPageCountForTesting(*pages).ok());
  auto replay = spool.replay(*store);
  ASSERT_FALSE(replay.ok());
  EXPECT_EQ(replay.status().code(), Code::kResourceExhausted) << replay.status().toString();
  EXPECT_THAT(replay.status().message(), HasSubstr("spool file " + spoolPath() + " (kept"));
  EXPECT_TRUE(std::ifstream(spoolPath()).good());
  ASSERT_TRUE(store->setMaxPageCountForTesting(1 << 20).ok());
  replay = spool.replay(*store);
  ASSERT_TRUE(replay.ok()) << replay.status().toString();
  EXPECT_EQ(replay->replayed, 1u);
}

TEST_F(ResultSpoolTest, ASpoolThatCannotBeWrittenIsAClearError) {
  // A directory where the spool file should be: no process (root included) can append to it.
  ASSERT_EQ(::mkdir(spoolPath().c_str(), 0700), 0);
  ResultSpool spool(spoolPath());
  Status st = spool.append(makeResult("t-1", "a", "b", 1));
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("spool file " + spoolPath()));
  EXPECT_THAT(st.message(), HasSubstr("held in memory only"));
  EXPECT_THAT(st.fix(), HasSubstr("free space"));
  ResultSpool none(ResultSpool::spoolPathFor(":memory:"));
  EXPECT_EQ(none.append(makeResult("t-1", "a", "b", 1)).code(), Code::kFailedPrecondition);
  EXPECT_EQ(none.append(TestResult{}).code(), Code::kInvalidArgument);
}

TEST_F(ResultSpoolTest, TheReserveIsHeldBackAndGivenBackAfterAReplay) {
  ResultSpool spool(spoolPath(), 64 * 1024);
  struct stat sb {};
  ASSERT_EQ(::stat(spool.reservePath().c_str(), &sb), 0) << "made when the spool is opened";
  EXPECT_EQ(spool.reservePath(), dbPath() + ".spool-reserve");
  EXPECT_EQ(sb.st_size, 64 * 1024);
  ASSERT_EQ(::truncate(spool.reservePath().c_str(), 0), 0);  // as a full disk would use it
  ASSERT_TRUE(spool.append(makeResult("t-1", "a", "b", 1)).ok());
  auto store = openStore();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(spool.replay(*store).ok());
  ASSERT_EQ(::stat(spool.reservePath().c_str(), &sb), 0);
  EXPECT_EQ(sb.st_size, 64 * 1024) << "held back again once the spool is replayed";
}

}  // namespace
}  // namespace gdrmesh::testing
