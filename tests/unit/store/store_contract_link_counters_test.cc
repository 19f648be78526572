// The store contract, part 6: port counters around a sweep's rounds and its links' verdicts
// (LinkCounterStore), on every implementation.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "tests/unit/store/store_contract_test.h"

namespace gdrmesh::testing {
namespace {

LinkCounterRecord counterRow(const std::string& sweep, int round, uint64_t guid, int port,
                             const std::string& counter, uint64_t delta, bool at_least = false) {
  LinkCounterRecord r;
  r.sweep_id = sweep;
  r.round = round;
  r.switch_name = "leaf'01";
  r.switch_guid = guid;
  r.port = port;
  r.link = "leaf'01[" + std::to_string(port) + "] <-> spine01[1]";
  r.counter = counter;
  r.delta = delta;
  r.at_least = at_least;
  r.seconds = 2.5;
  return r;
}

void expectSameCounterRow(const LinkCounterRecord& want, const LinkCounterRecord& got) {
  EXPECT_EQ(want.sweep_id, got.sweep_id);
  EXPECT_EQ(want.round, got.round);
  EXPECT_EQ(want.switch_name, got.switch_name);
  EXPECT_EQ(want.switch_guid, got.switch_guid);
  EXPECT_EQ(want.port, got.port);
  EXPECT_EQ(want.link, got.link);
  EXPECT_EQ(want.counter, got.counter);
  EXPECT_EQ(want.delta, got.delta);
  EXPECT_EQ(want.at_least, got.at_least);
  EXPECT_DOUBLE_EQ(want.seconds, got.seconds);
}

TEST_P(ResultStoreContractTest, LinkCountersReadBackInOrderWithFullGuids) {
  const uint64_t big = 0xf452140300a1b2c3ULL;  // the top bit set: SQLite's integers are signed
  const std::vector<LinkCounterRecord> rows = {
      counterRow("s1", 1, big, 3, "SymbolErrorCounter", 1234),
      counterRow("s1", 0, 0x1001, 7, "PortXmitData", 5'000'000'000ULL),
      counterRow("s1", 0, 0x1001, 7, "LinkDownedCounter", 255, true),
      counterRow("s2", 0, 0x1001, 7, "SymbolErrorCounter", 1),
  };
  ASSERT_TRUE(linkCounters().putLinkCounters(rows).ok());
  auto got = linkCounters().sweepLinkCounters("s1");
  ASSERT_TRUE(got.ok()) << got.status().toString();
  ASSERT_EQ(got->size(), 3U);
  // (round, switch GUID, port, counter) order.
  expectSameCounterRow(rows[2], (*got)[0]);
  expectSameCounterRow(rows[1], (*got)[1]);
  expectSameCounterRow(rows[0], (*got)[2]);
  // The same key again replaces the row.
  ASSERT_TRUE(
      linkCounters().putLinkCounters({counterRow("s1", 1, big, 3, "SymbolErrorCounter", 9)}).ok());
  got = linkCounters().sweepLinkCounters("s1");
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), 3U);
  EXPECT_EQ((*got)[2].delta, 9U);
  EXPECT_TRUE(linkCounters().sweepLinkCounters("nope")->empty());
  EXPECT_EQ(linkCounters().sweepLinkCounters("").status().code(), Code::kInvalidArgument);
}

TEST_P(ResultStoreContractTest, LinkCountersRefuseBadRowsAllOrNothing) {
  const auto twice =
      linkCounters().putLinkCounters({counterRow("s1", 0, 1, 1, "SymbolErrorCounter", 1),
                                      counterRow("s1", 0, 1, 1, "SymbolErrorCounter", 2)});
  EXPECT_EQ(twice.code(), Code::kInvalidArgument);
  EXPECT_NE(twice.message().find("twice"), std::string::npos) << twice.message();
  LinkCounterRecord no_counter = counterRow("s1", 0, 1, 2, "", 1);
  EXPECT_EQ(linkCounters()
                .putLinkCounters({counterRow("s1", 0, 1, 3, "SymbolErrorCounter", 1), no_counter})
                .code(),
            Code::kInvalidArgument);
  EXPECT_TRUE(linkCounters().sweepLinkCounters("s1")->empty());
}

TEST_P(ResultStoreContractTest, LinkCounterDeltaBeyondInt64IsALowerBound) {
  const uint64_t huge = std::numeric_limits<uint64_t>::max() - 5;
  ASSERT_TRUE(
      linkCounters().putLinkCounters({counterRow("s1", 0, 1, 1, "PortRcvData", huge)}).ok());
  auto got = linkCounters().sweepLinkCounters("s1");
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), 1U);
  // Stored as at least INT64_MAX (SQLite) or exactly (memory): never less than the bound, and a
  // value the store cannot keep is flagged.
  EXPECT_GE((*got)[0].delta, static_cast<uint64_t>(std::numeric_limits<int64_t>::max()));
  EXPECT_TRUE((*got)[0].at_least || (*got)[0].delta == huge);
}

LinkVerdictRecord verdictRow(const std::string& sweep, const std::string& link,
                             const std::string& verdict) {
  LinkVerdictRecord r;
  r.sweep_id = sweep;
  r.link = link;
  r.switch_name = "leaf01";
  r.switch_guid = 0xf452140300a1b2c3ULL;
  r.port = 12;
  r.remote_name = "spine\"02";
  r.remote_guid = 0x2002;
  r.remote_port = 7;
  r.verdict = verdict;
  r.evidence = {"1,234 symbol errors during round 1 = 4,442/h", "ends: leaf01 port 12"};
  return r;
}

TEST_P(ResultStoreContractTest, LinkVerdictsReplaceTheSweepsAndReadBackByLink) {
  ASSERT_TRUE(linkCounters()
                  .putLinkVerdicts("s1", {verdictRow("s1", "b[1] <-> c[2]", "ok"),
                                          verdictRow("s1", "a[1] <-> c[1]", "errors")})
                  .ok());
  ASSERT_TRUE(
      linkCounters().putLinkVerdicts("s2", {verdictRow("s2", "a[1] <-> c[1]", "slow_pairs")}).ok());
  auto got = linkCounters().sweepLinkVerdicts("s1");
  ASSERT_TRUE(got.ok()) << got.status().toString();
  ASSERT_EQ(got->size(), 2U);
  const LinkVerdictRecord want = verdictRow("s1", "a[1] <-> c[1]", "errors");
  EXPECT_EQ((*got)[0].link, want.link);
  EXPECT_EQ((*got)[0].verdict, "errors");
  EXPECT_EQ((*got)[0].switch_name, want.switch_name);
  EXPECT_EQ((*got)[0].switch_guid, want.switch_guid);
  EXPECT_EQ((*got)[0].port, want.port);
  EXPECT_EQ((*got)[0].remote_name, want.remote_name);
  EXPECT_EQ((*got)[0].remote_guid, want.remote_guid);
  EXPECT_EQ((*got)[0].remote_port, want.remote_port);
  EXPECT_EQ((*got)[0].evidence, want.evidence);
  EXPECT_EQ((*got)[1].link, "b[1] <-> c[2]");
  // Storing the sweep's verdicts again replaces them all.
  ASSERT_TRUE(linkCounters().putLinkVerdicts("s1", {verdictRow("s1", "z[1] <-> y[1]", "ok")}).ok());
  got = linkCounters().sweepLinkVerdicts("s1");
  ASSERT_EQ(got->size(), 1U);
  EXPECT_EQ((*got)[0].link, "z[1] <-> y[1]");
  EXPECT_EQ(linkCounters().sweepLinkVerdicts("s2")->size(), 1U);
  EXPECT_EQ(linkCounters()
                .putLinkVerdicts("s1", {verdictRow("s1", "x", "ok"), verdictRow("s1", "x", "ok")})
                .code(),
            Code::kInvalidArgument);
  EXPECT_EQ(linkCounters().putLinkVerdicts("s1", {verdictRow("s2", "x", "ok")}).code(),
            Code::kInvalidArgument);
  EXPECT_EQ(linkCounters().sweepLinkVerdicts("s1")->size(), 1U);
}

}  // namespace
}  // namespace gdrmesh::testing
