// End-to-end tests: real coordinator and worker processes, real gRPC on loopback, a real
// SQLite file, real data moved over the emulated transport and verified.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <thread>

#include "gdrmesh/v1/gdrmesh.grpc.pb.h"
#include "tests/support/local_cluster.h"

namespace gdrmesh::testing {
namespace {

using nlohmann::json;

class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    c_.startCoordinator({"--max-size", "64MiB"});
    c_.startWorker("a");
    c_.startWorker("b");
  }
  json runJson(std::vector<std::string> args, int expect_exit) {
    args.push_back("-o");
    args.push_back("json");
    auto r = c_.cli(args);
    EXPECT_EQ(r.exit_code, expect_exit) << r.out << r.err;
    auto j = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << "not JSON: " << r.out << r.err;
    return j;
  }
  LocalCluster c_;
};

TEST_F(ClusterTest, WorkersListedWithInventory) {
  auto ws = c_.workersJson();
  ASSERT_EQ(ws.size(), 2u);
  for (const auto& w : ws) {
    EXPECT_EQ(w["state"], "online");
    EXPECT_FALSE(w["inventory"]["hostname"].get<std::string>().empty());
    auto t = w["inventory"]["transports"];
    EXPECT_NE(std::find(t.begin(), t.end(), "emulated"), t.end());
    EXPECT_FALSE(w["last_heartbeat"].get<std::string>().empty());
  }
}

class OpTest : public ClusterTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(OpTest, PairTestStoresPassedRowWithVerifiedPayload) {
  const std::string op = GetParam();
  auto j = runJson({"test", "a", "b", "--op", op, "--size", "1MiB", "--iters", "50"}, 0);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["status"], "PASSED") << j.dump(2);
  EXPECT_EQ(j["transport"], "emulated");
  EXPECT_EQ(j["gpudirect"], false);
  EXPECT_EQ(j["op"], op);
  EXPECT_TRUE(j["integrity"]["checked"].get<bool>());
  EXPECT_EQ(j["integrity"]["wrong_bytes"], 0);
  EXPECT_EQ(j["integrity"]["bytes_checked"], 1 << 20);
  EXPECT_GT(j["measurement"]["bandwidth"]["avg_gbps"].get<double>(), 0.0);
  EXPECT_EQ(j["measurement"]["bandwidth"]["bytes"], 50ull << 20);
  // The stored row says what produced it.
  auto rows =
      c_.query("SELECT * FROM results WHERE test_id = '" + j["test_id"].get<std::string>() + "'");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["status"], "PASSED");
  EXPECT_EQ(rows[0]["transport"], "emulated");
  EXPECT_EQ(rows[0]["gpudirect"], "0");
  EXPECT_EQ(rows[0]["op"], op);
  EXPECT_EQ(rows[0]["initiator_worker"], "a");
  EXPECT_EQ(rows[0]["target_worker"], "b");
  EXPECT_EQ(rows[0]["initiator_memory"], "host");
  EXPECT_EQ(rows[0]["initiator_reg_path"], "host");
  EXPECT_EQ(rows[0]["integrity_wrong_bytes"], "0");
  EXPECT_GT(std::stod(rows[0]["bw_avg_gbps"]), 0.0);
}

INSTANTIATE_TEST_SUITE_P(Ops, OpTest, ::testing::Values("write", "read", "send"));

TEST_F(ClusterTest, LatencyFiguresAreOrdered) {
  auto j = runJson({"test", "a", "b", "--mode", "lat", "--size", "2", "--iters", "500"}, 0);
  const auto& l = j["measurement"]["latency"];
  ASSERT_TRUE(l.is_object()) << j.dump(2);
  EXPECT_EQ(l["samples"], 500);
  EXPECT_LE(l["min_us"].get<double>(), l["median_us"].get<double>());
  EXPECT_LE(l["median_us"].get<double>(), l["p99_us"].get<double>());
  EXPECT_LE(l["p99_us"].get<double>(), l["p999_us"].get<double>());
  EXPECT_LE(l["p999_us"].get<double>(), l["max_us"].get<double>());
  EXPECT_GT(l["min_us"].get<double>(), 0.0);
}

TEST_F(ClusterTest, CorruptedPayloadStoresFailedWithWrongByteCount) {
  for (const std::string op : {"write", "read"}) {
    auto j = runJson({"test", "a", "b", "--op", op, "--size", "64KiB", "--iters", "20",
                      "--inject-corrupt-bytes", "9"},
                     1);
    EXPECT_EQ(j["status"], "FAILED");
    EXPECT_EQ(j["integrity"]["wrong_bytes"], 9);
    EXPECT_NE(j["reason"].get<std::string>().find("9 of 65536 B wrong"), std::string::npos)
        << j["reason"];
    auto rows = c_.query("SELECT status, integrity_wrong_bytes FROM results WHERE test_id = '" +
                         j["test_id"].get<std::string>() + "'");
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0]["status"], "FAILED");
    EXPECT_EQ(rows[0]["integrity_wrong_bytes"], "9");
  }
}

TEST_F(ClusterTest, KilledWorkerMidTestStoresFailedAndCoordinatorKeepsServing) {
  c_.startWorker("c");
  // A test long enough to be killed in the middle of.
  pid_t cli = c_.cliAsync({"test", "a", "b", "--size", "1MiB", "--iters", "100000000", "--timeout",
                           "600", "-o", "json"},
                          "long");
  ASSERT_TRUE(c_.waitFor([](const json& ws) {
    for (const auto& w : ws) {
      if (w["name"] == "b" && w["active_tests"].get<int>() > 0) return true;
    }
    return false;
  })) << "the test never started";
  auto t0 = std::chrono::steady_clock::now();
  c_.killWorker("b");
  auto r = c_.collect(cli, "long", std::chrono::seconds(30));
  auto elapsed = std::chrono::steady_clock::now() - t0;
  EXPECT_LT(elapsed, std::chrono::seconds(15)) << "worker loss not detected in bounded time";
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto j = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out << r.err;
  EXPECT_EQ(j["status"], "FAILED");
  EXPECT_NE(j["reason"].get<std::string>().find("worker lost: b"), std::string::npos)
      << j["reason"];
  auto rows = c_.query("SELECT status, reason FROM results WHERE test_id = '" +
                       j["test_id"].get<std::string>() + "'");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["status"], "FAILED");
  // The survivor released its resources, the lost worker shows offline, and the coordinator
  // still runs tests.
  EXPECT_TRUE(c_.waitFor([](const json& ws) {
    bool a_idle = false, b_offline = false;
    for (const auto& w : ws) {
      if (w["name"] == "a") a_idle = w["active_tests"] == 0;
      if (w["name"] == "b") b_offline = w["state"] == "offline";
    }
    return a_idle && b_offline;
  }));
  auto again = runJson({"test", "a", "c", "--size", "64KiB", "--iters", "10"}, 0);
  EXPECT_EQ(again["status"], "PASSED");
}

TEST_F(ClusterTest, BadInputExitsNonZeroNamingTheField) {
  struct Case {
    std::vector<std::string> args;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {{"test", "a", "nosuch"}, "target: unknown worker 'nosuch'"},
      {{"test", "nosuch", "b"}, "initiator: unknown worker 'nosuch'"},
      {{"test", "a", "b/mlx5_9"}, "has no RDMA device 'mlx5_9'"},
      {{"test", "a", "b", "--size", "0"}, "--size"},
      {{"test", "a", "b", "--size", "64KB"}, "ambiguous"},
      {{"test", "a", "b", "--size", "lots"}, "--size"},
      {{"test", "a", "b", "--size", "1GiB"}, "above the maximum"},
      {{"test", "a", "b", "--iters", "0"}, "--iters"},
      {{"test", "a", "b", "--op", "teleport"}, "--op"},
      {{"test", "a", "b", "--reg", "dmabuf"}, "GPU memory only"},
      {{"test", "a", "b", "--qps", "1000"}, "qps"},
      {{"results", "--status", "MAYBE"}, "--status"},
      {{"test", "a"}, "DST"},
  };
  for (const auto& k : cases) {
    auto r = c_.cli(k.args);
    EXPECT_EQ(r.exit_code, 2) << k.args.back() << ": " << r.out << r.err;
    EXPECT_NE((r.out + r.err).find(k.needle), std::string::npos)
        << "expected '" << k.needle << "' in: " << r.out << r.err;
  }
  // Nothing was stored for rejected requests.
  EXPECT_TRUE(c_.query("SELECT id FROM results").empty());
}

TEST_F(ClusterTest, GpuMemoryOnAHostWithoutGpusIsSkippedNeverPassed) {
  for (const std::string reg : {"auto", "dmabuf", "staged"}) {
    auto j = runJson({"test", "a", "b", "--memory", "cuda", "--reg", reg}, 3);
    EXPECT_EQ(j["status"], "SKIPPED") << j.dump(2);
    EXPECT_NE(j["reason"].get<std::string>().find("has no GPUs"), std::string::npos);
    EXPECT_EQ(j["gpudirect"], false);
  }
  EXPECT_EQ(c_.query("SELECT id FROM results WHERE status = 'SKIPPED'").size(), 3u);
}

// Each side chooses its own memory. This machine has no GPU (as the test above assumes): the
// side that asks for GPU memory is named in the SKIPPED reason, and the host side's own choice is
// what the row records for it; never PASSED, never GPUDirect.
TEST_F(ClusterTest, HostToGpuOnAHostWithoutGpusIsSkippedNamingThatSide) {
  struct Case {
    std::vector<std::string> args;
    const char* side;  // named in the reason
    const char* initiator_memory;
    const char* target_memory;
  };
  const Case cases[] = {
      {{"--src-memory", "host", "--dst-memory", "cuda:0"}, "DST (target) side", "host", "cuda"},
      {{"--src-memory", "cuda:0", "--dst-memory", "host", "--reg", "dmabuf"},
       "SRC (initiator) side",
       "cuda",
       "host"},
  };
  for (const Case& k : cases) {
    std::vector<std::string> args{"test", "a", "b"};
    args.insert(args.end(), k.args.begin(), k.args.end());
    auto j = runJson(args, 3);
    ASSERT_TRUE(j.is_object());
    EXPECT_EQ(j["status"], "SKIPPED") << j.dump(2);
    const std::string reason = j["reason"].get<std::string>();
    EXPECT_EQ(reason.rfind(k.side, 0), 0u) << reason;
    EXPECT_NE(reason.find("has no GPUs"), std::string::npos) << reason;
    EXPECT_EQ(j["gpudirect"], false);
    EXPECT_EQ(j["initiator"]["memory"], k.initiator_memory) << j.dump(2);
    EXPECT_EQ(j["target"]["memory"], k.target_memory) << j.dump(2);
    auto rows = c_.query(
        "SELECT status, gpudirect, initiator_memory, initiator_reg_path, target_memory, "
        "target_reg_path FROM results WHERE test_id = '" +
        j["test_id"].get<std::string>() + "'");
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0]["status"], "SKIPPED");
    EXPECT_EQ(rows[0]["gpudirect"], "0");
    EXPECT_EQ(rows[0]["initiator_memory"], k.initiator_memory);
    EXPECT_EQ(rows[0]["target_memory"], k.target_memory);
    // The host side registers host memory whatever --reg says (it is the GPU sides' path).
    const bool ini_host = std::string(k.initiator_memory) == "host";
    EXPECT_EQ(rows[0][ini_host ? "initiator_reg_path" : "target_reg_path"], "host");
  }
  EXPECT_TRUE(c_.query("SELECT id FROM results WHERE status = 'PASSED'").empty());
  // Contradictory flags are refused before anything runs, naming both flags.
  auto r = c_.cli({"test", "a", "b", "--memory", "cuda", "--dst-memory", "host"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE((r.out + r.err).find("--dst-memory: cannot be combined with --memory"),
            std::string::npos)
      << r.out << r.err;
  EXPECT_EQ(c_.query("SELECT id FROM results").size(), 2u);
}

// Capabilities before operations: each worker reports what its transports support, and a request
// none of them can serve is refused before any worker is contacted (exit 2, no row stored),
// instead of a SKIPPED row. Here the workers have only the emulated transport (no RDMA device).
TEST_F(ClusterTest, CapabilitiesAreListedAndAnImpossibleRequestIsRefusedUpFront) {
  for (const auto& w : c_.workersJson()) {
    const auto& caps = w["inventory"]["capabilities"];
    ASSERT_TRUE(caps.is_array()) << w.dump(2);
    ASSERT_EQ(caps.size(), w["inventory"]["transports"].size()) << w.dump(2);
    bool emulated = false;
    for (const auto& c : caps) {
      if (c["transport"] != "emulated") continue;
      emulated = true;
      EXPECT_EQ(c["latency_ops"], json({"write", "read", "send"})) << c.dump();
      EXPECT_EQ(c["reg_paths"], json({"host", "staged"})) << c.dump();
      EXPECT_EQ(c["rdma_cm"], false);
    }
    EXPECT_TRUE(emulated) << w.dump(2);
    auto t = w["inventory"]["transports"];
    if (std::find(t.begin(), t.end(), "verbs") != t.end()) {
      GTEST_SKIP() << "this machine has an RDMA device: verbs serves every request here";
    }
  }
  auto r = c_.cli({"test", "a", "b", "--op", "write_imm", "--mode", "lat", "--iters", "10"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  const std::string text = r.out + r.err;
  EXPECT_NE(text.find("worker a (SRC, initiator) has no transport that supports --op write_imm "
                      "--mode lat: verbs: not available here"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("emulated: supports bw write, read, send, write_imm; lat write, read, send"),
            std::string::npos)
      << text;
  r = c_.cli({"test", "a", "b", "--rdma-cm"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE((r.out + r.err).find("supports --rdma-cm"), std::string::npos) << r.out << r.err;
  EXPECT_TRUE(c_.query("SELECT id FROM results").empty()) << "a refused request left a row";
  // What the workers support still runs.
  auto ok = runJson({"test", "a", "b", "--op", "write_imm", "--iters", "10"}, 0);
  EXPECT_EQ(ok["status"], "PASSED") << ok.dump(2);
}

TEST_F(ClusterTest, DuplicateWorkerNameIsRefused) {
  auto r = c_.cli({"worker", "--name", "a"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("already registered"), std::string::npos) << r.err;
}

TEST_F(ClusterTest, MalformedWorkerStreamIsRejected) {
  auto stub = v1::WorkerService::NewStub(
      grpc::CreateChannel(c_.address(), grpc::InsecureChannelCredentials()));
  {
    grpc::ClientContext ctx;
    auto s = stub->Connect(&ctx);
    v1::WorkerMessage m;
    m.mutable_heartbeat()->set_unix_ms(1);  // not a Register
    s->Write(m);
    s->WritesDone();
    auto st = s->Finish();
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(st.error_message().find("Register"), std::string::npos);
  }
  {
    grpc::ClientContext ctx;
    auto s = stub->Connect(&ctx);
    v1::WorkerMessage m;
    m.mutable_register_()->set_name("bad name with spaces");
    m.mutable_register_()->set_protocol_version(1);
    s->Write(m);
    s->WritesDone();
    auto st = s->Finish();
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(st.error_message().find("worker name"), std::string::npos);
  }
  // The coordinator still serves.
  auto r = c_.cli({"workers"});
  EXPECT_EQ(r.exit_code, 0);
}

TEST_F(ClusterTest, CoordinatorRestartKeepsHistoryAndWorkersReconnect) {
  auto first = runJson({"test", "a", "b", "--size", "4KiB", "--iters", "10"}, 0);
  const int port = c_.port();
  c_.stopCoordinator();
  c_.startCoordinator({}, port);
  ASSERT_TRUE(c_.waitFor([](const json& ws) {
    int online = 0;
    for (const auto& w : ws) online += w["state"] == "online";
    return online == 2;
  })) << "workers did not reconnect";
  auto r = c_.cli({"results", "-o", "json"});
  ASSERT_EQ(r.exit_code, 0);
  auto rows = json::parse(r.out);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["test_id"], first["test_id"]);
  auto second = runJson({"test", "b", "a", "--size", "4KiB", "--iters", "10"}, 0);
  EXPECT_EQ(second["status"], "PASSED");
}

TEST(ClusterNoCoordinator, UnreachableCoordinatorExitsFour) {
  LocalCluster c;
  auto r = c.cli({"workers", "--coordinator", "127.0.0.1:1"});
  EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
  EXPECT_NE(r.err.find("unreachable"), std::string::npos);
}

}  // namespace
}  // namespace gdrmesh::testing
