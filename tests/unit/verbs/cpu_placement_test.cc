// Where a verbs test's thread runs (worker/transport/verbs/cpu_placement.h): the choice from the
// sysfs fixture trees (tests/fixtures/sysfs), the per-CPU counts of a worker's placer, the
// --cpu override and its check, and the binding of the calling thread itself.
#include "worker/transport/verbs/cpu_placement.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>

namespace gdrmesh::verbs {
namespace {

// The verbs transport's sysfs root ("/sys" on a host) inside a fixture tree.
std::string sysOf(const std::string& fixture) {
  return std::string(GDRMESH_SYSFS_FIXTURES) + "/" + fixture + "/sys";
}

std::vector<int> range(int lo, int hi) {
  std::vector<int> v(static_cast<size_t>(hi - lo + 1));
  std::iota(v.begin(), v.end(), lo);
  return v;
}

TEST(CpuList, ParsesAndFormatsTheKernelsText) {
  EXPECT_EQ(parseCpuList("0-3,8,10-11"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(parseCpuList("5"), (std::vector<int>{5}));
  EXPECT_EQ(parseCpuList(""), std::vector<int>{});
  for (const char* bad : {"3-1", "a", "1,", ",1", "1--2", "-1", "1-", "0-99999999"}) {
    EXPECT_FALSE(parseCpuList(bad).has_value()) << bad;
  }
  EXPECT_EQ(formatCpuList({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(formatCpuList({}), "");
  EXPECT_EQ(formatCpuList(*parseCpuList("16-31,48-63")), "16-31,48-63");
}

TEST(CpuPlacement, ATestOnANicRunsOnACpuOfThatNicsNumaNode) {
  const auto all = range(0, 63);
  const auto p0 = chooseCpu(sysOf("two_socket_4gpu_2nic"), "mlx5_0", -1, all, {});
  EXPECT_EQ(p0.cpu, 0);
  EXPECT_EQ(p0.numa_node, 0);
  EXPECT_EQ(p0.describe(), "cpu 0 (numa 0, nic mlx5_0)");
  // mlx5_1 hangs off the second socket: its thread goes there, not to CPU 0.
  const auto p1 = chooseCpu(sysOf("two_socket_4gpu_2nic"), "mlx5_1", -1, all, {});
  EXPECT_EQ(p1.cpu, 16);
  EXPECT_EQ(p1.numa_node, 1);
  EXPECT_FALSE(p1.overridden);
  EXPECT_EQ(p1.describe(), "cpu 16 (numa 1, nic mlx5_1)");
  // Eight NICs, two sockets: NICs 4..7 are on node 1 (CPUs 56-111,168-223).
  const auto p7 = chooseCpu(sysOf("switch_8gpu_8nic"), "mlx5_7", -1, range(0, 223), {});
  EXPECT_EQ(p7.cpu, 56);
  EXPECT_EQ(p7.numa_node, 1);
}

TEST(CpuPlacement, ConcurrentTestsOnOneNodeGetTheLeastLoadedCpu) {
  const auto all = range(0, 63);
  // CPU 16 carries one endpoint: the next goes to 17; with 16..31 and 48..62 taken, to 63.
  EXPECT_EQ(chooseCpu(sysOf("two_socket_4gpu_2nic"), "mlx5_1", -1, all, {{16, 1}}).cpu, 17);
  std::map<int, int> busy;
  for (int c : range(16, 31)) busy[c] = 2;
  for (int c : range(48, 62)) busy[c] = 2;
  busy[63] = 1;
  EXPECT_EQ(chooseCpu(sysOf("two_socket_4gpu_2nic"), "mlx5_1", -1, all, busy).cpu, 63);
  // Load on the other node changes nothing.
  EXPECT_EQ(chooseCpu(sysOf("two_socket_4gpu_2nic"), "mlx5_1", -1, all, {{0, 9}}).cpu, 16);
}

TEST(CpuPlacement, OnlyCpusThisWorkerMayUseAreChosen) {
  // A cpuset with one CPU of node 1: that one.
  EXPECT_EQ(chooseCpu(sysOf("two_socket_4gpu_2nic"), "mlx5_1", -1, {2, 40, 50}, {}).cpu, 50);
  // A cpuset without any: not bound, saying which sets did not meet.
  const auto p = chooseCpu(sysOf("two_socket_4gpu_2nic"), "mlx5_1", -1, range(0, 15), {});
  EXPECT_EQ(p.cpu, -1);
  EXPECT_EQ(p.numa_node, 1);
  EXPECT_EQ(p.describe(),
            "not bound: numa 1 of mlx5_1: its CPUs 16-31,48-63 are outside this worker's CPU set "
            "0-15");
}

TEST(CpuPlacement, TheWorkersCpuOverridesTheNode) {
  const auto p = chooseCpu(sysOf("two_socket_4gpu_2nic"), "mlx5_1", 5, range(0, 63), {{5, 3}});
  EXPECT_EQ(p.cpu, 5);
  EXPECT_TRUE(p.overridden);
  EXPECT_EQ(p.describe(), "cpu 5 (--cpu; nic mlx5_1, numa 1)");
  const auto rxe = chooseCpu(sysOf("softroce_vm"), "rxe0", 1, {0, 1}, {});
  EXPECT_EQ(rxe.describe(), "cpu 1 (--cpu; nic rxe0, numa unknown)");
}

TEST(CpuPlacement, ANicWithoutANumaNodeIsNotBoundAndSaysWhy) {
  // rxe has no PCI device, so no numa_node file.
  const auto rxe = chooseCpu(sysOf("softroce_vm"), "rxe0", -1, {0, 1}, {});
  EXPECT_EQ(rxe.cpu, -1);
  EXPECT_EQ(rxe.describe(), "not bound: rxe0 has no readable numa_node (no PCI device: rxe, siw)");
  // A PCI NIC of a host that reports no node (-1), and one whose node has no cpulist.
  const auto dir = std::filesystem::path(::testing::TempDir()) / "cpu_placement_sys";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "class/infiniband/mlx5_0/device");
  std::filesystem::create_directories(dir / "class/infiniband/mlx5_1/device");
  std::ofstream(dir / "class/infiniband/mlx5_0/device/numa_node") << "-1\n";
  std::ofstream(dir / "class/infiniband/mlx5_1/device/numa_node") << "3\n";
  EXPECT_EQ(chooseCpu(dir.string(), "mlx5_0", -1, {0, 1}, {}).describe(),
            "not bound: mlx5_0 reports no NUMA node (-1)");
  const auto no_list = chooseCpu(dir.string(), "mlx5_1", -1, {0, 1}, {});
  EXPECT_EQ(no_list.numa_node, 3);
  EXPECT_EQ(no_list.describe(), "not bound: numa 3 of mlx5_1: its cpulist cannot be read");
  std::filesystem::remove_all(dir);
}

TEST(CpuPlacer, EndpointsAreCountedWhileTheyLive) {
  CpuPlacer placer(sysOf("two_socket_4gpu_2nic"), -1, range(0, 63));
  std::optional<CpuPlacer::Lease> a(placer.place("mlx5_0"));
  auto b = placer.place("mlx5_0");
  auto c = placer.place("mlx5_1");
  EXPECT_EQ(a->placement().cpu, 0);
  EXPECT_EQ(b.placement().cpu, 1);
  EXPECT_EQ(c.placement().cpu, 16);
  a.reset();  // its test ended: CPU 0 is free again
  EXPECT_EQ(placer.place("mlx5_0").placement().cpu, 0);
  // A moved lease is counted once.
  CpuPlacer::Lease moved = std::move(b);
  EXPECT_EQ(moved.placement().cpu, 1);
  EXPECT_EQ(placer.place("mlx5_0").placement().cpu, 0);
  // Unbound placements are not counted.
  CpuPlacer vm(sysOf("softroce_vm"), -1, std::vector<int>{0, 1});
  EXPECT_EQ(vm.place("rxe0").placement().cpu, -1);
}

TEST(CpuOverride, MustBeACpuOfThisWorker) {
  EXPECT_TRUE(checkCpuOverride(1, {0, 1, 2, 3}).ok());
  const Status st = checkCpuOverride(7, {0, 1, 2, 3});
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_EQ(st.message(), "--cpu 7: not a CPU this worker may run on (its set: 0-3)");
  EXPECT_NE(st.fix().find("leave --cpu out"), std::string::npos) << st.fix();
}

cpu_set_t currentMask() {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(pthread_getaffinity_np(pthread_self(), sizeof(set), &set), 0);
  return set;
}

// The binding itself: this thread runs on the CPU for the scope and gets its mask back after.
TEST(ScopedCpuBinding, BindsTheCallingThreadForItsScope) {
  const auto allowed = allowedCpus();
  ASSERT_FALSE(allowed.empty());
  const cpu_set_t before = currentMask();
  const int cpu = allowed.back();
  {
    ScopedCpuBinding binding;
    ASSERT_TRUE(binding.bind(cpu).ok());
    const cpu_set_t during = currentMask();
    EXPECT_EQ(CPU_COUNT(&during), 1);
    EXPECT_TRUE(CPU_ISSET(cpu, &during));
    EXPECT_EQ(sched_getcpu(), cpu);  // the scheduler moved us there before returning
  }
  const cpu_set_t after = currentMask();
  EXPECT_TRUE(CPU_EQUAL(&before, &after)) << "the thread's mask is restored";
  {
    ScopedCpuBinding none;
    EXPECT_TRUE(none.bind(-1).ok());  // not bound: nothing changes
    const cpu_set_t same = currentMask();
    EXPECT_TRUE(CPU_EQUAL(&before, &same));
  }
}

TEST(ScopedCpuBinding, ACpuThatCannotBeUsedIsAnErrorAndChangesNothing) {
  const cpu_set_t before = currentMask();
  ScopedCpuBinding binding;
  // Beyond every CPU this machine has (CPU_SETSIZE - 1 is never online on a test machine).
  const Status st = binding.bind(CPU_SETSIZE - 1);
  EXPECT_EQ(st.code(), Code::kFailedPrecondition) << st.toString();
  EXPECT_NE(st.message().find("cpu " + std::to_string(CPU_SETSIZE - 1)), std::string::npos);
  EXPECT_NE(st.fix().find("--cpu"), std::string::npos);
  const cpu_set_t after = currentMask();
  EXPECT_TRUE(CPU_EQUAL(&before, &after));
  EXPECT_EQ(binding.bind(CPU_SETSIZE).code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace gdrmesh::verbs
