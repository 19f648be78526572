// Pair tests with buffers in GPU memory, between two real worker processes under a real
// coordinator. Here (a GPU and no RDMA NIC) the data path is the staged one over the emulated
// transport: integrity is verified on the GPU, the result says "staged", and it can never pass
// as GPUDirect. Skips where the machine has no GPU.
#include <gtest/gtest.h>

#include "tests/support/local_cluster.h"

namespace gdrmesh::testing {
namespace {

using nlohmann::json;

class GpuPairTest : public ::testing::Test {
 protected:
  void SetUp() override {
    c_.startCoordinator({"--max-size", "1GiB"});
    c_.startWorker("g1");
    c_.startWorker("g2");
    auto ws = c_.workersJson();
    for (const auto& w : ws) {
      if (w["inventory"]["gpus"].empty()) {
        std::string notes = w["inventory"]["notes"].dump();
        GTEST_SKIP() << "no GPU on this machine (worker notes: " << notes << ")";
      }
    }
  }
  json run(std::vector<std::string> args, int expect_exit) {
    args.push_back("-o");
    args.push_back("json");
    auto r = c_.cli(args);
    EXPECT_EQ(r.exit_code, expect_exit) << r.out << r.err;
    return json::parse(r.out, nullptr, false);
  }
  LocalCluster c_;
};

TEST_F(GpuPairTest, InventoryReportsGpusWithGdrAttributes) {
  auto ws = c_.workersJson();
  const auto& g = ws[0]["inventory"]["gpus"][0];
  EXPECT_FALSE(g["uuid"].get<std::string>().empty());
  EXPECT_FALSE(g["pci_bus_id"].get<std::string>().empty());
  EXPECT_GT(g["memory_bytes"].get<uint64_t>(), 0u);
  EXPECT_FALSE(ws[0]["inventory"]["cuda_driver_version"].get<std::string>().empty());
}

TEST_F(GpuPairTest, StagedPairTestsVerifyOnTheGpuAndAreNeverGpuDirect) {
  for (const std::string op : {"write", "read", "send"}) {
    auto j = run({"test", "g1", "g2", "--op", op, "--memory", "cuda", "--gpu", "0", "--reg",
                  "staged", "--size", "64MiB", "--iters", "10"},
                 0);
    ASSERT_TRUE(j.is_object());
    EXPECT_EQ(j["status"], "PASSED") << j.dump(2);
    EXPECT_EQ(j["transport"], "emulated");
    EXPECT_EQ(j["gpudirect"], false);
    EXPECT_EQ(j["initiator"]["memory"], "cuda");
    EXPECT_EQ(j["initiator"]["reg_path"], "staged");
    EXPECT_EQ(j["target"]["reg_path"], "staged");
    EXPECT_EQ(j["integrity"]["where"].get<std::string>().rfind("gpu:0", 0), 0u)
        << "verification did not run on the GPU: " << j["integrity"]["where"];
    EXPECT_EQ(j["integrity"]["bytes_checked"], 64u << 20);
    EXPECT_GT(j["measurement"]["staging_seconds"].get<double>(), 0.0);
  }
}

// Each side chooses its own memory: host -> GPU and GPU -> host, staged on the GPU side. The
// row records each side as it ran (the host side registers host memory), the data lands and is
// verified where the destination's memory is, and neither can claim GPUDirect (staged).
TEST_F(GpuPairTest, HostToGpuAndGpuToHostRecordEachSide) {
  struct Case {
    const char* src;
    const char* dst;
    const char* where;  // the destination's buffer, where integrity is checked
  };
  for (const Case& k : {Case{"host", "cuda:0", "gpu:0"}, Case{"cuda:0", "host", "host"}}) {
    auto j = run({"test", "g1", "g2", "--src-memory", k.src, "--dst-memory", k.dst, "--reg",
                  "staged", "--size", "16MiB", "--iters", "10"},
                 0);
    ASSERT_TRUE(j.is_object()) << k.src << " -> " << k.dst;
    EXPECT_EQ(j["status"], "PASSED") << j.dump(2);
    EXPECT_EQ(j["gpudirect"], false);
    const bool src_gpu = std::string(k.src) != "host";
    EXPECT_EQ(j["initiator"]["memory"], src_gpu ? "cuda" : "host") << j.dump(2);
    EXPECT_EQ(j["initiator"]["reg_path"], src_gpu ? "staged" : "host");
    EXPECT_EQ(j["target"]["memory"], src_gpu ? "host" : "cuda");
    EXPECT_EQ(j["target"]["reg_path"], src_gpu ? "host" : "staged");
    EXPECT_EQ(j[src_gpu ? "initiator" : "target"]["gpu"], 0);
    EXPECT_EQ(j[src_gpu ? "target" : "initiator"]["gpu"], -1);
    EXPECT_EQ(j["integrity"]["where"].get<std::string>().rfind(k.where, 0), 0u)
        << "verified at " << j["integrity"]["where"] << ", expected " << k.where;
    EXPECT_EQ(j["integrity"]["bytes_checked"], 16u << 20);
  }
}

TEST_F(GpuPairTest, CorruptionInGpuMemoryIsCountedOnTheGpu) {
  auto j = run({"test", "g1", "g2", "--memory", "cuda", "--reg", "staged", "--size", "16MiB",
                "--iters", "5", "--inject-corrupt-bytes", "5"},
               1);
  EXPECT_EQ(j["status"], "FAILED");
  EXPECT_EQ(j["integrity"]["wrong_bytes"], 5);
  EXPECT_EQ(j["integrity"]["first_wrong_offset"], 0);
}

TEST_F(GpuPairTest, GpuDirectRequestsWithoutAnRdmaNicNeverPass) {
  // auto = dmabuf then peermem; the emulated transport has neither (its capabilities say so),
  // and staging is not chosen silently: refused before any worker is contacted.
  auto a = c_.cli({"test", "g1", "g2", "--transport", "emulated", "--memory", "cuda", "--reg",
                   "auto", "--size", "1MiB", "--iters", "5"});
  EXPECT_EQ(a.exit_code, 2) << a.out << a.err;
  EXPECT_NE((a.out + a.err).find("--reg auto (dmabuf or peermem) on cuda memory"),
            std::string::npos)
      << a.out << a.err;
  EXPECT_NE((a.out + a.err).find("staged"), std::string::npos) << a.out << a.err;
  // verbs was asked for: no RDMA device on this host.
  auto v = run({"test", "g1", "g2", "--transport", "verbs", "--memory", "cuda", "--reg", "dmabuf",
                "--size", "1MiB", "--iters", "5"},
               3);
  EXPECT_EQ(v["status"], "SKIPPED") << v.dump(2);
  EXPECT_EQ(v["gpudirect"], false);
  auto rows = c_.query("SELECT status FROM results WHERE status = 'PASSED' AND gpudirect = 1");
  EXPECT_TRUE(rows.empty());
}

}  // namespace
}  // namespace gdrmesh::testing
