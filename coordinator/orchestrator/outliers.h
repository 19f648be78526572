// Outlier detection: a host that is slow with every partner stands out without any threshold,
// and one noisy pair does not. Pure and deterministic (same rows, same findings).
//
// Method, per comparison group (message size, op, mode, memory kinds) and figure (bandwidth;
// latency for latency tests), over the sweep's own PASSED tests (not retests, not loopback):
//   1. Each figure on a log scale (bandwidth: log Gb/s; latency: -log us), so that "40 % of
//      the median" is the same distance at 4 Gb/s and at 400 Gb/s and higher is better.
//   2. Each host's value: the median of its tests' figures (with every partner). A host that
//      is slow with every partner moves its own median; a bad partner moves the median of its
//      partners by at most one sample of many.
//   3. The cluster's median M of the hosts' values, and the spread S = 1.4826 x MAD of the
//      hosts' values (the standard deviation, were they normal), at least 0.01 (1 %).
//   4. A host is an outlier when it lies at least options.robust_z spreads AND at least
//      options.min_shortfall below M (the second keeps a tight, noise-free cluster from calling
//      a host 2 % low an outlier). Only hosts with options.min_partners partners are judged,
//      and only when options.min_hosts of them are.
//   5. The same over NICs (WORKER/NIC) where hosts tested several: an outlier NIC of a host
//      whose other NICs are not outliers is the suspect instead of its host.
//   6. Pairs: a test at least robust_z pair spreads (1.4826 x MAD over the group's tests) and
//      min_shortfall below the group's median, that neither of its endpoints explains, is low.
//      A low pair is repeated (`repeat`); it is a link suspect only when every repeat is low
//      too, and a note ("noise") when a repeat is not.
// Suspects: score 0.5 + shortfall (at most 1): 0.6 below the median scores 1.
#pragma once

#include <string>
#include <vector>

#include "coordinator/orchestrator/cluster_config.h"
#include "coordinator/orchestrator/judge_row.h"
#include "coordinator/orchestrator/sweep_types.h"

namespace gdrmesh {

struct OutlierFindings {
  std::vector<Suspect> suspects;  // host, nic and link outliers, ranked, with their evidence
  std::vector<size_t> repeat;     // rows of low pairs that have no repeat yet
  std::vector<std::string> notes;
};

// The findings over a sweep's rows (the rows' `retest` flags say which are retests; a retest
// with the same two endpoints and shape as a sweep test is its repeat).
OutlierFindings findOutliers(const JudgeRows& rows, const OutlierOptions& options);

// The sweep's verdict from its judged rows, the outlier findings and the config:
//   - a FAIL of the sweep's own tests fails it, except a threshold FAIL (the test ran and its
//     bytes were right; only a figure missed a threshold) among `noise_rows` (the localiser's
//     failing pairs whose repeats all passed): noise, named in a note;
//   - an outlier suspect fails it when options.fail is kAlways, or kAuto and the config sets
//     no threshold (thresholds, where configured, decide the verdict).
// `reason` names the outlier that failed it ("" otherwise).
struct SweepVerdict {
  bool pass = true;
  std::string reason;
  std::vector<std::string> notes;
};
SweepVerdict sweepVerdict(const JudgeRows& rows, const JudgeVerdicts& verdicts,
                          const OutlierFindings& outliers, const ClusterConfig& config,
                          const std::vector<size_t>& noise_rows);

// Whether retest row `r` repeats sweep row `s`: the same two endpoints (either direction),
// size, op, mode and memory kinds.
bool isRepeatOf(const JudgeRow& r, const JudgeRow& s);

}  // namespace gdrmesh
