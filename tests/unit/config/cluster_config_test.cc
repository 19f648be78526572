// ClusterConfig::classOf / thresholdsFor: first matching class wins, globs and labels both
// must match, unset class thresholds inherit the global ones.
#include "coordinator/orchestrator/cluster_config.h"

#include <gtest/gtest.h>

namespace gdrmesh {
namespace {

TEST(ClusterConfig, FirstMatchingClassWinsAndInheritsGlobalThresholds) {
  ClusterConfig c;
  c.thresholds.bandwidth_gbps_min = 25;
  c.thresholds.latency_us_max = 10;
  HostClass ndr;
  ndr.name = "ndr";
  ndr.match = "gpu-a[0-9]*";
  ndr.thresholds.bandwidth_gbps_min = 380;
  HostClass labelled;
  labelled.name = "labelled";
  labelled.labels = {{"sku", "hdr"}};
  labelled.thresholds.latency_us_max = 4;
  HostClass any;
  any.name = "any";
  c.host_classes = {ndr, labelled, any};

  EXPECT_EQ(c.classOf("gpu-a12", {{"sku", "hdr"}})->name, "ndr");
  EXPECT_EQ(c.classOf("gpu-b1", {{"sku", "hdr"}})->name, "labelled");
  EXPECT_EQ(c.classOf("gpu-b1", {{"sku", "ndr"}})->name, "any");
  const Thresholds t = c.thresholdsFor("gpu-a1", {});
  EXPECT_EQ(t.bandwidth_gbps_min, 380.0);
  EXPECT_EQ(t.latency_us_max, 10.0);
  EXPECT_EQ(c.thresholdsFor("gpu-b1", {{"sku", "hdr"}}).latency_us_max, 4.0);
  c.host_classes.pop_back();
  EXPECT_EQ(c.classOf("cpu-1", {}), nullptr);
  EXPECT_EQ(c.thresholdsFor("cpu-1", {}).bandwidth_gbps_min, 25.0);
}

}  // namespace
}  // namespace gdrmesh
