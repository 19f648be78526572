// Topology discovery and the doctor on this machine's /sys and /proc (label `host`).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "worker/doctor/doctor.h"
#include "worker/topology/topology.h"

namespace gdrmesh {
namespace {

const CheckResult& get(const std::vector<CheckResult>& rs, const std::string& id) {
  for (const auto& r : rs) {
    if (r.id == id) return r;
  }
  static const CheckResult kMissing{};
  ADD_FAILURE() << "no check " << id;
  return kMissing;
}

TEST(LiveHost, BareHostDiscoveryIsClean) {
  auto m = discoverTopology("/");
  ASSERT_TRUE(m.ok()) << m.status().toString();
  if (!m->gpus.empty() || !m->nics.empty()) {
    GTEST_SKIP() << "this host has GPUs or RDMA NICs; the empty-host case needs a bare host";
  }
  EXPECT_EQ(renderMatrix(*m), "No GPUs and no RDMA NICs found.\n");
  EXPECT_TRUE(toJson(*m)["pairs"].empty());
}

TEST(LiveHost, BareHostDoctorSaysNotApplicable) {
  auto topo = discoverTopology("/");
  ASSERT_TRUE(topo.ok()) << topo.status().toString();
  if (!topo->gpus.empty() || !topo->nics.empty()) {
    GTEST_SKIP() << "this host has GPUs or RDMA NICs; the bare-host case needs a bare host";
  }
  auto rs = runChecks(localDoctorInput());
  ASSERT_EQ(rs.size(), 15u);
  for (const auto& r : rs) {
    if (r.id == "memlock" || r.id == "iommu.mode") continue;  // depend on how the test runs
    // A bare host passes nothing it cannot check: GPU and NIC checks say N/A.
    EXPECT_TRUE(r.status == CheckStatus::kPass || r.status == CheckStatus::kNotApplicable)
        << toString(r);
    if (r.id != "rdma_core.version") {
      EXPECT_EQ(r.status, CheckStatus::kNotApplicable) << toString(r);
    }
  }
  EXPECT_NE(get(rs, "memlock").status, CheckStatus::kUnknown);
}

}  // namespace
}  // namespace gdrmesh
