// Matching workers to HCAs by node description (common/fabric/host_match.h).
#include "common/fabric/host_match.h"

#include <gtest/gtest.h>

#include "tests/support/fabric_trees.h"

namespace gdrmesh::fabric {
namespace {

using V = std::vector<std::string>;

TEST(HostMatch, NodeDescriptionWords) {
  EXPECT_EQ(hostOfNodeDescription("h0001 mlx5_0"), "h0001");
  EXPECT_EQ(hostOfNodeDescription("  h0001"), "h0001");
  EXPECT_EQ(hostOfNodeDescription(""), "");
  EXPECT_EQ(deviceOfNodeDescription("h0001 mlx5_0"), "mlx5_0");
  EXPECT_EQ(deviceOfNodeDescription("h0001  mlx5_1 extra"), "mlx5_1");
  EXPECT_EQ(deviceOfNodeDescription("h0001"), "");
}

TEST(HostMatch, ByWorkerNameThenHostnameAndReportsBothLeftovers) {
  Fabric f = testing::twoLevelTree(2, 2, 2);  // h01..h04
  HostMatch m = matchHosts(
      f, {{"h01", ""}, {"w2", "h02.cluster.example"}, {"w9", "nowhere"}, {"h03", "x"}}, {});
  EXPECT_EQ(m.hcas_of.at("h01"), V{"h01 mlx5_0"});
  EXPECT_EQ(m.hcas_of.at("w2"), V{"h02 mlx5_0"});   // hostname without its domain
  EXPECT_EQ(m.hcas_of.at("h03"), V{"h03 mlx5_0"});  // the worker name wins over the hostname
  EXPECT_EQ(m.workers_without_hca, V{"w9"});
  EXPECT_EQ(m.hcas_without_worker, V{"h04 mlx5_0"});
  EXPECT_TRUE(m.problems.empty());
  EXPECT_EQ(describeMatch(m, 4),
            "fabric: 3 of 4 workers matched to HCAs; workers without an HCA: w9; HCAs without a "
            "worker: h04 mlx5_0");
}

TEST(HostMatch, MappingOverridesTheRuleAndNamesWhatItCannotUse) {
  Fabric f = testing::twoLevelTree(2, 2, 2);
  HostMatch m = matchHosts(f, {{"a", ""}, {"b", ""}, {"h01", ""}, {"c", ""}},
                           {{"a", "h04 mlx5_0"}, {"b", "h03"}, {"c", "h09 mlx5_0"}, {"z", "h02"}});
  EXPECT_EQ(m.hcas_of.at("a"), V{"h04 mlx5_0"});  // a node description
  EXPECT_EQ(m.hcas_of.at("b"), V{"h03 mlx5_0"});  // a host name
  EXPECT_EQ(m.hcas_of.at("h01"), V{"h01 mlx5_0"});
  EXPECT_EQ(m.workers_without_hca, V{"c"});
  EXPECT_EQ(m.hcas_without_worker, V{"h02 mlx5_0"});
  ASSERT_EQ(m.problems.size(), 2U);
  EXPECT_NE(m.problems[0].find("fabric_hosts.z: no worker"), std::string::npos);
  EXPECT_NE(m.problems[1].find("fabric_hosts.c: no HCA 'h09 mlx5_0'"), std::string::npos);
}

TEST(HostMatch, AnHcaBelongsToOneWorkerAndTheTestedNicPicksAmongSeveral) {
  Fabric f = testing::twoLevelTree(2, 2, 2);
  f.hosts[1].name = "h01 mlx5_1";  // h01 has two HCAs now
  HostMatch m = matchHosts(f, {{"h01", ""}, {"dup", "h01"}}, {});
  EXPECT_EQ(m.hcas_of.at("h01"), (V{"h01 mlx5_0", "h01 mlx5_1"}));
  EXPECT_EQ(m.workers_without_hca, V{"dup"});
  const Node* n = m.hcaFor(f, "h01", "mlx5_1");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->name, "h01 mlx5_1");
  n = m.hcaFor(f, "h01", "");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->name, "h01 mlx5_0");
  EXPECT_EQ(m.hcaFor(f, "dup", "mlx5_0"), nullptr);
}

}  // namespace
}  // namespace gdrmesh::fabric
