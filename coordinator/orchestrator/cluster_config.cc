#include "coordinator/orchestrator/cluster_config.h"

namespace gdrmesh {

void Thresholds::inheritFrom(const Thresholds& base) {
  auto fill = [](std::optional<double>& mine, const std::optional<double>& theirs) {
    if (!mine) mine = theirs;
  };
  fill(bandwidth_gbps_min, base.bandwidth_gbps_min);
  fill(latency_us_max, base.latency_us_max);
  fill(line_rate_fraction_min, base.line_rate_fraction_min);
  fill(best_pair_fraction_min, base.best_pair_fraction_min);
  fill(lowest_latency_factor_max, base.lowest_latency_factor_max);
  fill(gpu_host_ratio_min, base.gpu_host_ratio_min);
  fill(regression_tolerance, base.regression_tolerance);
}

}  // namespace gdrmesh
