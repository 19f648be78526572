// The judge: stored results + the cluster's thresholds -> one verdict per result. Pure and
// deterministic: the same rows and config give identical verdicts in the same order (the
// order of `results`), whatever the order in which the rows arrived.
//
// Rules, each reason naming the rule, the figure and the threshold:
//   status     FAILED/ERROR -> FAIL with the row's reason; SKIPPED -> SKIP with it. A PASSED row
//              without figures is SKIP ("no figures to judge"); one whose integrity check found
//              wrong bytes is FAIL.
//   bandwidth_gbps_min / latency_us_max            absolute, on avg Gb/s / median us.
//   line_rate_fraction_min   avg Gb/s over the lower active port rate of the two NICs; not
//                            checked (and not mentioned) when either rate is unknown.
//   best_pair_fraction_min   avg Gb/s over the best avg among PASSED rows of the same size, op,
//                            mode and memory kinds.
//   lowest_latency_factor_max  median over the lowest median of that group.
//   gpu_host_ratio_min       a row with cuda memory on either side against the best PASSED
//                            host-memory row on the same NIC pair (either direction), size,
//                            op and mode; the reason names the GPU-NIC topology class.
//   regression_tolerance     against the newest baseline row of the same pair (workers and
//                            NICs, same direction), size, op, mode and memory kinds.
// Thresholds come from config.thresholdsFor(worker, labels) for each side; where the two
// sides differ the stricter applies. Bandwidth rules apply to rows with bandwidth figures,
// latency rules to rows with latency figures. Verdicts judge figures only: they never claim
// RDMA or GPUDirect (TestResult::gpudirect() says that, from the recorded data path).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/inventory.h"
#include "common/result.h"
#include "coordinator/orchestrator/cluster_config.h"
#include "coordinator/orchestrator/judge_row.h"
#include "coordinator/orchestrator/sweep_types.h"

namespace gdrmesh {

struct JudgeContext {
  std::map<std::string, std::map<std::string, std::string>> labels;  // worker -> labels
  std::map<std::string, double> port_rate_gbps;  // "worker/nic" -> active port rate
  std::vector<TestResult> baseline;              // rows of the baseline sweep; may be empty
  std::set<std::string> retests;                 // test ids that are retests

  // The active port rate of worker/nic, or 0 when unknown.
  double portRate(const std::string& worker, const std::string& nic) const;
};

// Labels and active port rates (the first ACTIVE port of each NIC) from the workers.
JudgeContext judgeContextFrom(const std::vector<WorkerStatus>& workers);

// The stricter of two threshold sets, field by field (higher minimum, lower maximum, lower
// regression tolerance); a field set on one side only is taken from that side.
Thresholds stricterOf(const Thresholds& a, const Thresholds& b);

// The judge over a sweep's compact rows: one verdict per row, in row order. A row's own
// `retest` flag says whether it is a retest, and `baseline` holds the baseline sweep's rows
// (ctx.baseline and ctx.retests are not read).
JudgeVerdicts judgeRows(const JudgeRows& rows, const ClusterConfig& config, const JudgeContext& ctx,
                        const JudgeRows& baseline);

// The same judge over full results (ctx.baseline, ctx.retests read): the verdicts in the order
// of `results`.
std::vector<PairVerdict> judgeResults(const std::vector<TestResult>& results,
                                      const ClusterConfig& config, const JudgeContext& ctx);

}  // namespace gdrmesh
