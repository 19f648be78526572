// `gdrmesh check --local` (issue #21: a health check / prolog for one node), run as the real
// binary: the preflight checks plus a loopback write through the emulated transport (this
// host has no RDMA NIC; the verbs path is the same code with --transport verbs), healthy and
// with landed bytes made wrong, and its exit codes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/local_cluster.h"

namespace gdrmesh::testing {
namespace {

TEST(CheckLocalTest, HealthyHostExitsZeroWithItsLoopback) {
  LocalCluster c;
  auto r = c.cli({"check", "--local", "--no-cuda", "--transport", "emulated", "--iters", "20",
                  "--size", "64KiB"},
                 false);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("PASS    loopback.emulated  write 64KiB x 20: "), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("healthy (exit 0"), std::string::npos) << r.out;
}

TEST(CheckLocalTest, WrongBytesMakeItUnhealthy) {
  LocalCluster c;
  auto r = c.cli({"check", "--local", "--no-cuda", "--transport", "emulated", "--iters", "20",
                  "--size", "64KiB", "--test-corrupt-bytes", "3", "-o", "json"},
                 false);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  bool found = false;
  for (const auto& check : j) {
    if (check["id"] == "loopback.emulated") {
      found = true;
      EXPECT_EQ(check["status"], "FAIL");
      EXPECT_NE(check["detail"].get<std::string>().find("3 of 65536 B wrong"), std::string::npos)
          << check.dump();
    }
  }
  EXPECT_TRUE(found) << r.out;
}

TEST(CheckLocalTest, UsageErrorsExitTwo) {
  LocalCluster c;
  EXPECT_EQ(c.cli({"check", "--local", "--time-limit", "2h"}, false).exit_code, 2);
  EXPECT_EQ(c.cli({"check", "--local", "--transport", "tcp"}, false).exit_code, 2);
  EXPECT_NE(c.cli({"check"}, false).exit_code, 0);  // --local is required
}

}  // namespace
}  // namespace gdrmesh::testing
