// The planner: host selection, every pattern's shape, sizes, and the invariant the executor
// relies on (no resource twice in a round), up to 1024 hosts.
#include "coordinator/orchestrator/planner.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <set>

namespace gdrmesh {
namespace {

WorkerStatus worker(const std::string& name, int nics = 0, int gpus = 0) {
  WorkerStatus w;
  w.name = name;
  w.state = "online";
  for (int i = 0; i < nics; ++i) {
    Nic n;
    n.name = "mlx5_" + std::to_string(i);
    w.inventory.nics.push_back(n);
  }
  for (int g = 0; g < gpus; ++g) {
    Gpu gpu;
    gpu.index = g;
    gpu.nearest_nic = nics > 0 ? "mlx5_" + std::to_string(g % nics) : "";
    w.inventory.gpus.push_back(gpu);
  }
  return w;
}

std::vector<WorkerStatus> hosts(int n, int nics = 0, int gpus = 0) {
  std::vector<WorkerStatus> out;
  for (int i = 0; i < n; ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "h%04d", i);
    out.push_back(worker(name, nics, gpus));
  }
  return out;
}

// Within every round, no two tests hold a conflicting resource; rounds are in range.
void expectDisjointRounds(const SweepPlan& plan) {
  std::vector<ResourceSet> rounds(static_cast<size_t>(plan.rounds));
  for (const auto& t : plan.tests) {
    ASSERT_GE(t.round, 0);
    ASSERT_LT(t.round, plan.rounds);
    const auto res = resourcesOf(t);
    ASSERT_TRUE(rounds[static_cast<size_t>(t.round)].canTake(res))
        << t.initiator.worker << "->" << t.target.worker << " round " << t.round;
    rounds[static_cast<size_t>(t.round)].take(res);
  }
}

// all-pairs, direction one: N-1 rounds (N for odd N), each unordered pair once, no host
// twice in a round. Uses flat arrays so that it stays fast at 1024 hosts.
void checkAllPairs(int n) {
  SweepSpec spec;
  spec.pattern = SweepPattern::kAllPairs;
  const auto workers = hosts(n);
  const auto t0 = std::chrono::steady_clock::now();
  const std::clock_t c0 = std::clock();
  auto plan = planSweep(spec, workers);
  const double cpu_ms = 1000.0 * static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(plan.ok()) << plan.status().toString();
  if (n == 1024) {
    std::printf(
        "planned all-pairs over %d hosts: %zu tests in %d rounds in %.1f ms (%.1f ms CPU)\n", n,
        plan->tests.size(), plan->rounds, ms, cpu_ms);
    // Printed, not asserted: speed is the benchmarks' job (tests/bench/coordinator_scale.sh);
    // a timed unit test fails on a loaded or instrumented (ASan) build for no fault of the code.
  }
  const int expect_rounds = n % 2 ? n : n - 1;
  ASSERT_EQ(plan->rounds, expect_rounds) << "n=" << n;
  ASSERT_EQ(plan->tests.size(), static_cast<size_t>(n) * static_cast<size_t>(n - 1) / 2);
  std::map<std::string, int> index;
  for (int i = 0; i < n; ++i) index[workers[static_cast<size_t>(i)].name] = i;
  std::vector<char> seen(static_cast<size_t>(n) * static_cast<size_t>(n), 0);
  std::vector<int> last_round(static_cast<size_t>(n), -1);
  int prev_round = 0;
  for (const auto& t : plan->tests) {
    ASSERT_GE(t.round, prev_round) << "tests must be ordered by round";
    prev_round = t.round;
    const int a = index.at(t.initiator.worker), b = index.at(t.target.worker);
    ASSERT_NE(a, b);
    const size_t key = static_cast<size_t>(std::min(a, b)) * static_cast<size_t>(n) +
                       static_cast<size_t>(std::max(a, b));
    ASSERT_EQ(seen[key], 0) << "pair twice: n=" << n;
    seen[key] = 1;
    ASSERT_NE(last_round[static_cast<size_t>(a)], t.round) << "host twice in a round, n=" << n;
    ASSERT_NE(last_round[static_cast<size_t>(b)], t.round) << "host twice in a round, n=" << n;
    last_round[static_cast<size_t>(a)] = last_round[static_cast<size_t>(b)] = t.round;
    EXPECT_EQ(t.initiator.device, "");
    EXPECT_FALSE(t.bidirectional);
  }
}

TEST(PlannerAllPairs, CircleMethodForTwoToThirtyThreeHosts) {
  for (int n = 2; n <= 33; ++n) checkAllPairs(n);
}

TEST(PlannerAllPairs, ThousandTwentyFourHostsInExactlyOneThousandTwentyThreeRounds) {
  checkAllPairs(1024);
}

TEST(PlannerAllPairs, BothDirectionsDoubleTheRoundsAndKeepHostsApart) {
  SweepSpec spec;
  spec.direction = SweepDirection::kBoth;
  auto plan = planSweep(spec, hosts(6));
  ASSERT_TRUE(plan.ok()) << plan.status().toString();
  EXPECT_EQ(plan->rounds, 10);
  EXPECT_EQ(plan->tests.size(), 30u);
  std::set<std::pair<std::string, std::string>> ordered;
  for (const auto& t : plan->tests) ordered.insert({t.initiator.worker, t.target.worker});
  EXPECT_EQ(ordered.size(), 30u);
  expectDisjointRounds(*plan);
}

TEST(PlannerAllPairs, BidirIsOneBidirectionalTestPerPair) {
  SweepSpec spec;
  spec.direction = SweepDirection::kBidir;
  auto plan = planSweep(spec, hosts(5));
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->rounds, 5);
  EXPECT_EQ(plan->tests.size(), 10u);
  for (const auto& t : plan->tests) EXPECT_TRUE(t.bidirectional);
}

TEST(PlannerAllPairs, TemplateSuppliesMemoryGpuAndReg) {
  SweepSpec spec;
  spec.test.initiator.memory = MemoryKind::kCuda;
  spec.test.initiator.gpu = 1;
  spec.test.initiator.reg = RegPath::kDmabuf;
  spec.test.initiator.worker = "ignored";
  auto plan = planSweep(spec, hosts(3));
  ASSERT_TRUE(plan.ok());
  for (const auto& t : plan->tests) {
    EXPECT_EQ(t.initiator.memory, MemoryKind::kCuda);
    EXPECT_EQ(t.initiator.gpu, 1);
    EXPECT_EQ(t.initiator.reg, RegPath::kDmabuf);
    EXPECT_NE(t.initiator.worker, "ignored");
    EXPECT_EQ(t.target.memory, MemoryKind::kHost);
  }
}

TEST(PlannerSizes, EachSlotExpandsToConsecutiveSizesWithDisjointRounds) {
  SweepSpec spec;
  spec.sizes = {4096, 65536, 1 << 20};
  auto plan = planSweep(spec, hosts(4));
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->rounds, 9);
  ASSERT_EQ(plan->tests.size(), 18u);
  for (size_t i = 0; i < plan->tests.size(); i += 3) {
    for (size_t k = 0; k < 3; ++k) {
      const auto& t = plan->tests[i + k];
      EXPECT_EQ(t.message_size, spec.sizes[k]);
      EXPECT_EQ(t.initiator.worker, plan->tests[i].initiator.worker);
      EXPECT_EQ(t.target.worker, plan->tests[i].target.worker);
      EXPECT_EQ(t.round, plan->tests[i].round + static_cast<int>(k));
      EXPECT_EQ(t.round % 3, static_cast<int>(k));
    }
  }
  expectDisjointRounds(*plan);
}

TEST(PlannerSizes, DefaultsToTheTemplateSizeAndRejectsZero) {
  SweepSpec spec;
  spec.test.message_size = 8192;
  auto plan = planSweep(spec, hosts(2));
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->tests.size(), 1u);
  EXPECT_EQ(plan->tests[0].message_size, 8192u);
  spec.sizes = {4096, 0};
  auto bad = planSweep(spec, hosts(2));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("sizes[1]"), std::string::npos);
}

TEST(PlannerSelection, UnknownHostIsAnErrorNamingIt) {
  SweepSpec spec;
  spec.hosts = {"h0000", "h9999"};
  auto plan = planSweep(spec, hosts(3));
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), Code::kNotFound);
  EXPECT_NE(plan.status().message().find("h9999"), std::string::npos);
}

TEST(PlannerSelection, OfflineExcludedAndLabelMismatchesAreLeftOut) {
  auto ws = hosts(6);
  ws[1].state = "offline";
  ws[2].labels["rack"] = "b";
  for (size_t i = 0; i < ws.size(); ++i) {
    if (i != 2) ws[i].labels["rack"] = "a";
  }
  SweepSpec spec;
  spec.exclude = {"h0003"};
  spec.select = {{"rack", "a"}};
  auto plan = planSweep(spec, ws);
  ASSERT_TRUE(plan.ok()) << plan.status().toString();
  std::set<std::string> used;
  for (const auto& t : plan->tests) {
    used.insert(t.initiator.worker);
    used.insert(t.target.worker);
  }
  EXPECT_EQ(used, (std::set<std::string>{"h0000", "h0004", "h0005"}));
}

TEST(PlannerSelection, FewerThanTwoHostsIsAClearError) {
  auto ws = hosts(3);
  ws[1].state = "offline";
  SweepSpec spec;
  spec.exclude = {"h0002"};
  auto plan = planSweep(spec, ws);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), Code::kFailedPrecondition);
  const std::string& m = plan.status().message();
  EXPECT_NE(m.find("all-pairs needs at least 2 hosts; 1 selected (h0000) of 3 workers"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("1 offline"), std::string::npos) << m;
  EXPECT_NE(m.find("1 excluded"), std::string::npos) << m;
  EXPECT_FALSE(plan.status().fix().empty());
}

TEST(PlannerPairs, PackedFirstFitSoNoResourceIsTwiceInARound) {
  SweepSpec spec;
  spec.pattern = SweepPattern::kPairs;
  auto sel = [](const std::string& w, const std::string& d = "") {
    EndpointSelector s;
    s.worker = w;
    s.device = d;
    return s;
  };
  spec.pairs = {{sel("h0000", "mlx5_0"), sel("h0001", "mlx5_0")},
                {sel("h0000", "mlx5_1"), sel("h0001", "mlx5_1")},
                {sel("h0002"), sel("h0003")},
                {sel("h0000", "mlx5_0"), sel("h0002", "mlx5_0")}};
  auto plan = planSweep(spec, hosts(4, 2));
  ASSERT_TRUE(plan.ok()) << plan.status().toString();
  ASSERT_EQ(plan->tests.size(), 4u);
  EXPECT_EQ(plan->rounds, 2);
  // Ordered by round: three in round 0 (NICs differ, h2/h3 free), the h0/h2 pair in round 1.
  EXPECT_EQ(plan->tests[3].round, 1);
  EXPECT_EQ(plan->tests[3].target.worker, "h0002");
  expectDisjointRounds(*plan);
}

TEST(PlannerPairs, UnknownWorkerOrNicIsAnError) {
  SweepSpec spec;
  spec.pattern = SweepPattern::kPairs;
  EndpointSelector a, b;
  a.worker = "h0000";
  b.worker = "nope";
  spec.pairs = {{a, b}};
  auto plan = planSweep(spec, hosts(2, 1));
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("pairs[0].target"), std::string::npos);
  b.worker = "h0001";
  b.device = "mlx5_7";
  spec.pairs = {{a, b}};
  plan = planSweep(spec, hosts(2, 1));
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("h0001 has no NIC mlx5_7"), std::string::npos);
  EXPECT_NE(plan.status().fix().find("mlx5_0"), std::string::npos);
  spec.pairs.clear();
  EXPECT_FALSE(planSweep(spec, hosts(2, 1)).ok());
}

TEST(PlannerRails, OneAllPairsPerNicIndexSharingRounds) {
  auto ws = hosts(4, 2);
  ws[3].inventory.nics.pop_back();  // h0003 has only mlx5_0
  SweepSpec spec;
  spec.pattern = SweepPattern::kRails;
  auto plan = planSweep(spec, ws);
  ASSERT_TRUE(plan.ok()) << plan.status().toString();
  // rail0: 4 hosts (3 rounds, 6 tests); rail1: 3 hosts (3 rounds, 3 tests).
  EXPECT_EQ(plan->rounds, 3);
  EXPECT_EQ(plan->tests.size(), 9u);
  for (const auto& t : plan->tests) {
    const std::string nic = t.rail == "rail0" ? "mlx5_0" : "mlx5_1";
    EXPECT_EQ(t.initiator.device, nic);
    EXPECT_EQ(t.target.device, nic);
    if (t.rail == "rail1") {
      EXPECT_NE(t.initiator.worker, "h0003");
      EXPECT_NE(t.target.worker, "h0003");
    }
  }
  ASSERT_EQ(plan->notes.size(), 1u);
  EXPECT_EQ(plan->notes[0], "h0003 has 1 NIC, 3 hosts have 2: rail1 skips h0003");
  expectDisjointRounds(*plan);
}

TEST(PlannerRails, CudaMemoryUsesTheGpuNearestEachNic) {
  auto ws = hosts(3, 2, 2);                        // GPU g nearest mlx5_g
  ws[2].inventory.gpus[1].nearest_nic = "mlx5_0";  // h0002: no GPU near mlx5_1
  SweepSpec spec;
  spec.pattern = SweepPattern::kRails;
  spec.test.initiator.memory = spec.test.target.memory = MemoryKind::kCuda;
  auto plan = planSweep(spec, ws);
  ASSERT_TRUE(plan.ok()) << plan.status().toString();
  for (const auto& t : plan->tests) {
    const int gpu = t.rail == "rail0" ? 0 : 1;
    EXPECT_EQ(t.initiator.gpu, gpu);
    EXPECT_EQ(t.target.gpu, gpu);
    if (t.rail == "rail1") {
      EXPECT_NE(t.target.worker, "h0002");
    }
  }
  ASSERT_EQ(plan->notes.size(), 1u);
  EXPECT_NE(plan->notes[0].find("rail1 skips h0002"), std::string::npos) << plan->notes[0];
  expectDisjointRounds(*plan);
}

TEST(PlannerLoopback, NicChainThenOneGpuTestPerGpuAllHostsInParallel) {
  auto ws = hosts(3, 2, 2);
  ws[2] = worker("h0002", 1);
  SweepSpec spec;
  spec.pattern = SweepPattern::kLoopback;
  auto plan = planSweep(spec, ws);
  ASSERT_TRUE(plan.ok()) << plan.status().toString();
  EXPECT_EQ(plan->rounds, 3);
  ASSERT_EQ(plan->tests.size(), 7u);
  for (const auto& t : plan->tests) {
    EXPECT_EQ(t.initiator.worker, t.target.worker);
    if (t.initiator.worker == "h0002") {
      EXPECT_EQ(t.initiator.device, "mlx5_0");
      EXPECT_EQ(t.target.device, "mlx5_0");
    }
    if (t.initiator.memory == MemoryKind::kCuda) {
      EXPECT_EQ(t.initiator.device, "mlx5_" + std::to_string(t.initiator.gpu));
      EXPECT_EQ(t.round, 1 + t.initiator.gpu);
    } else {
      EXPECT_EQ(t.round, 0);
    }
  }
  expectDisjointRounds(*plan);
}

TEST(PlannerRandom, SeededMatchingsAreReproducibleAndDisjoint) {
  SweepSpec spec;
  spec.pattern = SweepPattern::kRandom;
  spec.random_rounds = 4;
  spec.seed = 42;
  auto a = planSweep(spec, hosts(7));
  auto b = planSweep(spec, hosts(7));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->seed, 42u);
  EXPECT_EQ(a->rounds, 4);
  ASSERT_EQ(a->tests.size(), 12u);  // 3 pairs per round, one host sits out
  for (size_t i = 0; i < a->tests.size(); ++i) {
    EXPECT_EQ(a->tests[i].initiator.worker, b->tests[i].initiator.worker);
    EXPECT_EQ(a->tests[i].target.worker, b->tests[i].target.worker);
  }
  expectDisjointRounds(*a);
  spec.seed = 43;
  auto c = planSweep(spec, hosts(7));
  ASSERT_TRUE(c.ok());
  bool differs = false;
  for (size_t i = 0; i < a->tests.size(); ++i) {
    differs = differs || a->tests[i].initiator.worker != c->tests[i].initiator.worker;
  }
  EXPECT_TRUE(differs);
  spec.seed = 0;
  auto d = planSweep(spec, hosts(7));
  ASSERT_TRUE(d.ok());
  EXPECT_NE(d->seed, 0u);
}

TEST(PlannerResources, NamesAndConflicts) {
  EndpointSelector s;
  s.worker = "h1";
  EXPECT_EQ(resourcesOf(s), std::vector<std::string>{"h1/*"});
  s.device = "mlx5_0";
  s.memory = MemoryKind::kCuda;
  EXPECT_EQ(resourcesOf(s), (std::vector<std::string>{"h1/gpu:0", "h1/mlx5_0"}));
  EXPECT_TRUE(conflicts("h1/*", "h1/mlx5_0"));
  EXPECT_TRUE(conflicts("h1/gpu:0", "h1/gpu:0"));
  EXPECT_FALSE(conflicts("h1/mlx5_0", "h1/mlx5_1"));
  EXPECT_FALSE(conflicts("h1/*", "h10/mlx5_0"));
  ResourceSet set;
  set.take({"h1/mlx5_0"});
  EXPECT_FALSE(set.canTake({"h1/*"}));
  EXPECT_TRUE(set.canTake({"h1/mlx5_1"}));
  set.release({"h1/mlx5_0"});
  EXPECT_TRUE(set.canTake({"h1/*"}));
  EXPECT_TRUE(set.empty());
}

}  // namespace
}  // namespace gdrmesh
