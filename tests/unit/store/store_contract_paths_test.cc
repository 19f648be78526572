// The store contract, part 4: pair tests' paths through the fabric (TestPathStore), on every
// implementation.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/unit/store/store_contract_test.h"

namespace gdrmesh::testing {
namespace {

PathHopRecord pathHop(const std::string& test, const std::string& sweep, const std::string& dir,
                      int hop, const std::string& sw, uint64_t guid, int in, int out) {
  PathHopRecord h;
  h.test_id = test;
  h.sweep_id = sweep;
  h.direction = dir;
  h.hop = hop;
  h.switch_name = sw;
  h.switch_guid = guid;
  h.in_port = in;
  h.out_port = out;
  h.fabric = "@" + std::to_string(guid % 7);  // the snapshot it was traced through
  return h;
}

void expectSameHop(const PathHopRecord& want, const PathHopRecord& got) {
  EXPECT_EQ(want.test_id, got.test_id);
  EXPECT_EQ(want.sweep_id, got.sweep_id);
  EXPECT_EQ(want.direction, got.direction);
  EXPECT_EQ(want.hop, got.hop);
  EXPECT_EQ(want.switch_name, got.switch_name);
  EXPECT_EQ(want.switch_guid, got.switch_guid);
  EXPECT_EQ(want.in_port, got.in_port);
  EXPECT_EQ(want.out_port, got.out_port);
  EXPECT_EQ(want.fabric, got.fabric);
}

TEST_P(ResultStoreContractTest, TestPathsAreRowsReadBackInOrderWithFullGuids) {
  // A GUID with the top bit set (SQLite's integers are signed) and a name that needs quoting.
  const uint64_t big = 0xf452140300a1b2c3ULL;
  const std::vector<PathHopRecord> hops = {
      pathHop("t1", "s1", "reverse", 1, "leaf01", 0x1001, 5, 1),
      pathHop("t1", "s1", "forward", 0, "leaf01", 0x1001, 1, 5),
      pathHop("t1", "s1", "reverse", 0, "spine'02", big, 2, 1),
      pathHop("t1", "s1", "forward", 1, "spine'02", big, 1, 2),
      pathHop("t2", "s1", "forward", 0, "leaf02", 0x1002, 3, 4),
      pathHop("t3", "s2", "forward", 0, "leaf03", 0x1003, 1, 2),
  };
  ASSERT_TRUE(paths().putTestPaths(hops).ok());
  auto t1 = paths().testPath("t1");
  ASSERT_TRUE(t1.ok()) << t1.status().toString();
  ASSERT_EQ(t1->size(), 4U);
  expectSameHop(hops[1], (*t1)[0]);
  expectSameHop(hops[3], (*t1)[1]);
  expectSameHop(hops[2], (*t1)[2]);
  expectSameHop(hops[0], (*t1)[3]);
  EXPECT_EQ((*t1)[1].link(), "0xf452140300a1b2c3:2");
  EXPECT_EQ((*t1)[0].link(), "0x0000000000001001:5");

  auto s1 = paths().sweepPaths("s1");
  ASSERT_TRUE(s1.ok());
  ASSERT_EQ(s1->size(), 5U);
  EXPECT_EQ((*s1)[4].test_id, "t2");
  auto none = paths().testPath("nope");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  auto s9 = paths().sweepPaths("s9");
  ASSERT_TRUE(s9.ok());
  EXPECT_TRUE(s9->empty());
}

TEST_P(ResultStoreContractTest, TestPathsReplaceATestsHopsAndRefuseBadRowsWhole) {
  ASSERT_TRUE(paths()
                  .putTestPaths({pathHop("t1", "s1", "forward", 0, "a", 1, 1, 2),
                                 pathHop("t1", "s1", "forward", 1, "b", 2, 1, 2)})
                  .ok());
  // A new path for t1 (the fabric was rerouted) replaces both hops.
  ASSERT_TRUE(paths().putTestPaths({pathHop("t1", "s1", "forward", 0, "c", 3, 7, 8)}).ok());
  auto t1 = paths().testPath("t1");
  ASSERT_TRUE(t1.ok());
  ASSERT_EQ(t1->size(), 1U);
  EXPECT_EQ((*t1)[0].switch_name, "c");

  // All or none: a bad row refuses the call, and the good rows beside it are not stored.
  for (const auto& bad : {pathHop("", "s1", "forward", 0, "x", 1, 1, 1),
                          pathHop("t2", "s1", "sideways", 0, "x", 1, 1, 1),
                          pathHop("t2", "s1", "forward", 0, "dup", 1, 1, 1)}) {
    Status st = paths().putTestPaths({pathHop("t2", "s1", "forward", 0, "ok", 1, 1, 1), bad});
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << bad.direction << " " << bad.switch_name;
  }
  auto t2 = paths().testPath("t2");
  ASSERT_TRUE(t2.ok());
  EXPECT_TRUE(t2->empty());
  EXPECT_EQ(paths().sweepPaths("").status().code(), Code::kInvalidArgument);
}

TEST_P(ResultStoreContractTest, TestPathsSurviveAReopen) {
  if (!harness_->persistent()) GTEST_SKIP() << "this store keeps nothing across a reopen";
  ASSERT_TRUE(paths().putTestPaths({pathHop("t1", "s1", "forward", 0, "leaf", 9, 1, 2)}).ok());
  ASSERT_TRUE(harness_->reopen().ok());
  auto t1 = paths().testPath("t1");
  ASSERT_TRUE(t1.ok());
  ASSERT_EQ(t1->size(), 1U);
  EXPECT_EQ((*t1)[0].switch_guid, 9U);
}

}  // namespace
}  // namespace gdrmesh::testing
