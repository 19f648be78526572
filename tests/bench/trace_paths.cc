// trace_paths: what tracing the paths of an all-pairs sweep costs the coordinator (issue #20).
// Loads a fabric snapshot (`gdrmesh fabric discover --save`, or tests/fabric/cover_table.sh's
// KEEP_DIR), makes one worker per HCA (named by its host, as `--sim-fabric` does) and one result
// row per unordered host pair (an all-pairs sweep with direction one), then times what a sweep's
// end does: SweepFabric::paths (both directions of every row traced through the LFTs,
// fabric::tracePath) and SweepFabric::coverage. Prints wall and CPU seconds (this process's CPU
// time: steadier than wall time on a shared machine); checks nothing.
//
//   trace_paths SNAPSHOT.json [--repeat 3]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "common/fabric/fabric.h"
#include "common/fabric/host_match.h"
#include "common/result.h"
#include "coordinator/orchestrator/judge_row.h"
#include "coordinator/orchestrator/sweep_fabric.h"

namespace {

// Wall and CPU seconds since a start.
struct Stopwatch {
  std::chrono::steady_clock::time_point wall = std::chrono::steady_clock::now();
  std::clock_t cpu = std::clock();
  double wallSeconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();
  }
  double cpuSeconds() const {
    return static_cast<double>(std::clock() - cpu) / static_cast<double>(CLOCKS_PER_SEC);
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: trace_paths SNAPSHOT.json [--repeat N]\n");
    return 2;
  }
  int repeat = 3;
  for (int i = 2; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--repeat") == 0) repeat = std::atoi(argv[i + 1]);
  }
  auto f = gdrmesh::fabric::loadFabricFile(argv[1]);
  if (!f.ok()) {
    std::fprintf(stderr, "%s\n", f.status().message().c_str());
    return 1;
  }
  std::vector<gdrmesh::WorkerStatus> workers;
  for (const auto& h : f->hosts) {
    gdrmesh::WorkerStatus w;
    w.name = gdrmesh::fabric::hostOfNodeDescription(h.name);
    w.state = "online";
    w.inventory.hostname = w.name;
    workers.push_back(std::move(w));
  }
  const size_t n = workers.size();
  gdrmesh::JudgeRows rows;
  rows.reserve(n * (n - 1) / 2);
  gdrmesh::TestResult r;
  r.status = gdrmesh::TestStatus::kPassed;
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      r.test_id = "t" + std::to_string(i) + "-" + std::to_string(j);
      r.initiator.worker = workers[i].name;
      r.initiator.nic = "mlx5_0";
      r.target.worker = workers[j].name;
      r.target.nic = "mlx5_0";
      rows.add(r);
    }
  }
  const gdrmesh::SweepFabric sf(std::move(*f), {}, argv[1]);
  const gdrmesh::fabric::HostMatch match = sf.match(workers);
  std::printf("%s: %zu switches, %zu hosts, %zu rows (all pairs, one direction)\n", argv[1],
              sf.fabric().switches.size(), n, rows.size());
  for (int k = 0; k < repeat; ++k) {
    Stopwatch t0;
    const gdrmesh::RowPaths paths = sf.paths(rows, match);
    const double traced_s = t0.wallSeconds();
    const double traced_cpu = t0.cpuSeconds();
    Stopwatch t1;
    const gdrmesh::FabricCoverage c = sf.coverage(rows, paths);
    const double cover_s = t1.wallSeconds();
    const double cover_cpu = t1.cpuSeconds();
    size_t hops = 0;
    for (size_t i = 0; i < rows.size(); ++i)
      hops += paths.forward[i].size() + paths.reverse[i].size();
    std::printf(
        "run %d: paths %.3f s wall, %.3f s CPU (%zu rows traced both ways, %zu untraced, %zu "
        "hops); coverage %.3f s wall, %.3f s CPU (%zu of %zu directed links)\n",
        k + 1, traced_s, traced_cpu, rows.size() - paths.untraced, paths.untraced, hops, cover_s,
        cover_cpu, c.directed_links - c.never.size(), c.directed_links);
  }
  return 0;
}
