// The plan as a sweep holds it (plan_table.h): every test reads back as it was planned, the
// endpoints are kept once, and a row is small.
#include "coordinator/orchestrator/plan_table.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace gdrmesh {
namespace {

EndpointSelector endpoint(const std::string& worker, const std::string& nic) {
  EndpointSelector e;
  e.worker = worker;
  e.device = nic;
  return e;
}

void expectSame(const PlannedTest& a, const PlannedTest& b) {
  EXPECT_EQ(a.round, b.round);
  EXPECT_EQ(a.initiator.worker, b.initiator.worker);
  EXPECT_EQ(a.initiator.device, b.initiator.device);
  EXPECT_EQ(a.initiator.memory, b.initiator.memory);
  EXPECT_EQ(a.initiator.gpu, b.initiator.gpu);
  EXPECT_EQ(a.initiator.reg, b.initiator.reg);
  EXPECT_EQ(a.target.worker, b.target.worker);
  EXPECT_EQ(a.target.device, b.target.device);
  EXPECT_EQ(a.target.memory, b.target.memory);
  EXPECT_EQ(a.target.gpu, b.target.gpu);
  EXPECT_EQ(a.message_size, b.message_size);
  EXPECT_EQ(a.bidirectional, b.bidirectional);
  EXPECT_EQ(a.rail, b.rail);
  EXPECT_EQ(a.retest, b.retest);
  EXPECT_EQ(a.retest_of, b.retest_of);
}

TEST(PlanTable, EveryTestReadsBackAsPlannedWithItsEndpointsKeptOnce) {
  std::vector<PlannedTest> tests;
  const std::vector<std::string> hosts = {"gpu-node-0001.cluster.example", "gpu-node-0002", "c"};
  for (int round = 0; round < 3; ++round) {
    for (size_t i = 0; i < hosts.size(); ++i) {
      PlannedTest t;
      t.round = round;
      t.initiator = endpoint(hosts[i], "mlx5_0");
      t.target = endpoint(hosts[(i + 1) % hosts.size()], round == 2 ? "mlx5_1" : "mlx5_0");
      t.message_size = 65536u << round;
      t.bidirectional = round == 1;
      t.rail = round == 2 ? "rail1" : "";
      tests.push_back(t);
    }
  }
  PlannedTest gpu;  // the same host and NIC on GPU memory is another endpoint
  gpu.initiator = endpoint("c", "mlx5_0");
  gpu.initiator.memory = MemoryKind::kCuda;
  gpu.initiator.gpu = 3;
  gpu.initiator.reg = RegPath::kDmabuf;
  gpu.target = endpoint("gpu-node-0002", "mlx5_0");
  tests.push_back(gpu);

  PlanTable table(tests);
  PlannedTest retest = tests[1];
  retest.round = 7;
  retest.retest = true;
  retest.retest_of = "t-20261127T101500-0001";
  table.append(retest);
  tests.push_back(retest);

  ASSERT_EQ(table.size(), tests.size());
  for (size_t i = 0; i < tests.size(); ++i) {
    SCOPED_TRACE(i);
    expectSame(table[i], tests[i]);
    EXPECT_EQ(table.round(i), tests[i].round);
    EXPECT_EQ(table.initiator(i).worker, tests[i].initiator.worker);
    EXPECT_EQ(table.target(i).device, tests[i].target.device);
    EXPECT_EQ(table.messageSize(i), tests[i].message_size);
    EXPECT_EQ(table.bidirectional(i), tests[i].bidirectional);
  }
  // Three hosts on mlx5_0, three on mlx5_1 (as targets of round 2), one GPU endpoint.
  EXPECT_EQ(table.endpoints().size(), 7u);
  std::set<std::string> workers;
  for (const auto& e : table.endpoints()) workers.insert(e.worker);
  EXPECT_EQ(workers, std::set<std::string>(hosts.begin(), hosts.end()));
}

TEST(PlanTable, EmptyUntilATestIsAdded) {
  PlanTable table;
  EXPECT_TRUE(table.empty());
  EXPECT_EQ(table.size(), 0u);
  EXPECT_TRUE(table.endpoints().empty());
}

}  // namespace
}  // namespace gdrmesh
