#include "coordinator/orchestrator/cluster_config.h"

#include <fnmatch.h>

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

const HostClass* ClusterConfig::classOf(const std::string& worker,
                                        const std::map<std::string, std::string>& labels) const {
  for (const auto& c : host_classes) {
    if (!c.match.empty() && fnmatch(c.match.c_str(), worker.c_str(), 0) != 0) continue;
    bool all = true;
    for (const auto& [key, value] : c.labels) {
      auto it = labels.find(key);
      all = all && it != labels.end() && it->second == value;
    }
    if (all) return &c;
  }
  return nullptr;
}

Thresholds ClusterConfig::thresholdsFor(const std::string& worker,
                                        const std::map<std::string, std::string>& labels) const {
  const HostClass* c = classOf(worker, labels);
  if (!c) return thresholds;
  Thresholds t = c->thresholds;
  t.inheritFrom(thresholds);
  return t;
}

}  // namespace gdrmesh
