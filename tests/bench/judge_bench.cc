// judge_bench: the end of a sweep on the coordinator, phase by phase, over an all-pairs sweep's
// rows held in memory as the run holds them (no store, no gRPC): the judge (thresholds), the
// outliers, the localiser, the sweep's verdict and the report's figures. What the time from the
// last test to a readable report is made of (issue #19, target under 1 s at 1,024 hosts).
// Not a test; run by hand:
//   judge_bench [hosts (1024)] [slow host (-1: none)]
// Prints each phase's CPU time (median of 3 runs) and the verdict counts.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include "coordinator/orchestrator/judge.h"
#include "coordinator/orchestrator/judge_row.h"
#include "coordinator/orchestrator/localiser.h"
#include "coordinator/orchestrator/outliers.h"
#include "coordinator/orchestrator/sweep_summary.h"

namespace gdrmesh {
namespace {

std::string hostName(int i) {
  char b[16];
  std::snprintf(b, sizeof b, "sim-%04d", i);
  return b;
}

// All pairs of `hosts` in plan order, 64 KiB writes at ~190 Gb/s with a little spread; pairs
// with `slow` run at 40 %.
JudgeRows allPairsRows(int hosts, int slow) {
  JudgeRows rows;
  rows.reserve(static_cast<size_t>(hosts) * static_cast<size_t>(hosts - 1) / 2);
  int index = 0;
  const int round = std::max(1, hosts / 2);
  for (int a = 0; a < hosts; ++a) {
    for (int b = a + 1; b < hosts; ++b) {
      TestResult r;
      r.test_id = "t-" + std::to_string(index);
      r.run_id = "s-bench";
      // Within each round (hosts/2 tests) the order they finished: plan indexes scrambled.
      const int in_round = index % round;
      r.plan_index = index - in_round + (in_round * 7 + 3) % round;
      ++index;
      r.started_ms = 1795000000000 + index;
      r.finished_ms = r.started_ms + 10;
      r.initiator.worker = hostName(a);
      r.initiator.nic = "mlx5_0";
      r.target.worker = hostName(b);
      r.target.nic = "mlx5_0";
      r.message_size = 65536;
      r.status = TestStatus::kPassed;
      r.measurement.has_bandwidth = true;
      const double jitter = 1.0 + 0.01 * std::sin(index * 0.37);
      r.measurement.bw.avg_gbps = 190.0 * jitter * (a == slow || b == slow ? 0.4 : 1.0);
      r.measurement.bw.peak_gbps = r.measurement.bw.avg_gbps * 1.02;
      rows.add(r);
    }
  }
  return rows;
}

// The process's CPU time (the bench runs on one thread): on a loaded machine wall time says
// more about the neighbours than about the judge.
double cpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double median3(const std::function<void()>& f) {
  std::vector<double> t;
  for (int i = 0; i < 3; ++i) {
    const double t0 = cpuSeconds();
    f();
    t.push_back(cpuSeconds() - t0);
  }
  std::sort(t.begin(), t.end());
  return t[1];
}

int run(int hosts, int slow) {
  auto t0 = std::chrono::steady_clock::now();
  JudgeRows rows = allPairsRows(hosts, slow);
  std::printf("rows: %zu (%d hosts%s), built in %.3f s\n", rows.size(), hosts,
              slow >= 0 ? ", one slow" : "",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  // As a sweep holds them: each round's tests in the order they finished (once; it sorts).
  const double sort_t0 = cpuSeconds();
  rows.sortByPlanIndex();
  std::printf("sort into plan order: %.3f s CPU\n", cpuSeconds() - sort_t0);
  ClusterConfig config;
  const JudgeContext ctx;
  JudgeVerdicts verdicts;
  const double judge_s = median3([&] { verdicts = judgeRows(rows, config, ctx, JudgeRows{}); });
  OutlierFindings outliers;
  const double outliers_s = median3([&] { outliers = findOutliers(rows, config.outliers); });
  Localisation located;
  const double localise_s = median3([&] { located = localiseSweep(rows, verdicts); });
  SweepVerdict judged;
  const double verdict_s =
      median3([&] { judged = sweepVerdict(rows, verdicts, outliers, config, located.noise_rows); });
  std::vector<FigureSummary> figures;
  const double figures_s = median3([&] { figures = reportFigures(rows); });
  // The same through a PairVerdict each (the figures before reportFigures), for comparison.
  std::vector<FigureSummary> by_verdicts;
  const double by_verdicts_s = median3([&] {
    FigureAccumulator acc;
    for (size_t i = 0; i < verdicts.size(); ++i) {
      PairVerdict v = verdictOf(rows, verdicts, i);
      if (!std::isfinite(v.value)) v.value = 0.0;
      acc.add(v);
    }
    by_verdicts = acc.result();
  });
  std::printf("figures through a PairVerdict each: %.3f s (%s)\n", by_verdicts_s,
              figuresJson(by_verdicts) == figuresJson(figures) ? "the same" : "DIFFERENT");
  size_t fail = 0;
  for (VerdictKind k : verdicts.kind) fail += k == VerdictKind::kFail ? 1 : 0;
  std::printf(
      "judge %.3f s, outliers %.3f s, localiser %.3f s, sweep verdict %.3f s, figures %.3f s"
      ": %.3f s in all\n",
      judge_s, outliers_s, localise_s, verdict_s, figures_s,
      judge_s + outliers_s + localise_s + verdict_s + figures_s);
  std::printf("verdicts: %zu, %zu FAIL; outlier suspects %zu; sweep %s\n", verdicts.size(), fail,
              outliers.suspects.size(), judged.pass ? "PASS" : "FAIL");
  return 0;
}

}  // namespace
}  // namespace gdrmesh

int main(int argc, char** argv) {
  const int hosts = argc > 1 ? std::atoi(argv[1]) : 1024;
  const int slow = argc > 2 ? std::atoi(argv[2]) : -1;
  if (hosts < 2) {
    std::fprintf(stderr, "judge_bench: hosts must be at least 2\n");
    return 2;
  }
  return gdrmesh::run(hosts, slow);
}
