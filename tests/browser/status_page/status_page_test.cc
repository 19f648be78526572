// The status page end to end: StatusHttpServer on 127.0.0.1:0 over a fake StatusSource, its
// JSON API read with httplib::Client, and the page rendered by a real headless Chromium.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/units.h"
#include "coordinator/http/status_http_server.h"

namespace gdrmesh {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr int64_t kT0 = 1795000000000;  // 2026-11-18T11:06:40Z: a fixed clock for the fake data

Inventory inventory(const std::string& host, bool gpu) {
  Inventory inv;
  inv.hostname = host;
  inv.worker_version = "0.1.0";
  inv.transports = {"emulated", "verbs"};
  Nic nic;
  nic.name = "mlx5_0";
  nic.pci_bus_id = "0000:17:00.0";
  NicPort port;
  port.port = 1;
  port.state = "ACTIVE";
  port.link_layer = "InfiniBand";
  port.rate_gbps = 200;
  port.active_mtu = 4096;
  nic.ports.push_back(port);
  inv.nics.push_back(nic);
  if (gpu) {
    Gpu g;
    g.index = 0;
    g.name = "NVIDIA H100 80GB HBM3";
    g.pci_bus_id = "0000:1b:00.0";
    g.dma_buf_supported = true;
    g.gpu_direct_rdma_supported = true;
    inv.gpus.push_back(g);
  }
  return inv;
}

EndpointRecord endpoint(const std::string& worker, const std::string& nic, MemoryKind mem,
                        RegPath path) {
  EndpointRecord e;
  e.worker = worker;
  e.host = worker + ".cluster";
  e.nic = nic;
  e.port = nic.empty() ? 0 : 1;
  e.memory = mem;
  e.gpu = mem == MemoryKind::kCuda ? 0 : -1;
  e.reg_path = path;
  return e;
}

// Three results: PASSED emulated, FAILED integrity on verbs, PASSED verbs GPUDirect dma-buf.
std::vector<TestResult> fakeResults() {
  std::vector<TestResult> v;
  TestResult gdr;
  gdr.id = 3;
  gdr.test_id = "t-gdr-dmabuf";
  gdr.started_ms = kT0 + 3000;
  gdr.finished_ms = kT0 + 4000;
  gdr.transport = TransportKind::kVerbs;
  gdr.initiator = endpoint("gpu-a", "mlx5_0", MemoryKind::kCuda, RegPath::kDmabuf);
  gdr.target = endpoint("gpu-b", "mlx5_0", MemoryKind::kCuda, RegPath::kDmabuf);
  gdr.initiator.topo_class = "PIX";
  gdr.message_size = 8 << 20;
  gdr.measurement.has_bandwidth = true;
  gdr.measurement.bw.avg_gbps = 194.31;
  gdr.measurement.bw.peak_gbps = 195.02;
  gdr.integrity = {true, 8 << 20, 0, -1, "gpu:0"};
  gdr.status = TestStatus::kPassed;
  v.push_back(gdr);

  TestResult bad;
  bad.id = 2;
  bad.test_id = "t-integrity-fail";
  bad.started_ms = kT0 + 2000;
  bad.finished_ms = kT0 + 2500;
  bad.transport = TransportKind::kVerbs;
  bad.initiator = endpoint("gpu-a", "mlx5_0", MemoryKind::kHost, RegPath::kHost);
  bad.target = endpoint("gpu-b", "mlx5_0", MemoryKind::kHost, RegPath::kHost);
  bad.message_size = 1 << 20;
  bad.measurement.has_bandwidth = true;
  bad.measurement.bw.avg_gbps = 97.5;
  bad.integrity = {true, 1 << 20, 4096, 65536, "host"};
  bad.status = TestStatus::kFailed;
  bad.reason = "destination data check failed: 4096 wrong bytes on gpu-b";
  v.push_back(bad);

  TestResult emu;
  emu.id = 1;
  emu.test_id = "t-emulated";
  emu.started_ms = kT0 + 1000;
  emu.finished_ms = kT0 + 1200;
  emu.transport = TransportKind::kEmulated;
  emu.mode = Mode::kLatency;
  emu.initiator = endpoint("gpu-a", "", MemoryKind::kHost, RegPath::kHost);
  emu.target = endpoint("old-c", "", MemoryKind::kHost, RegPath::kHost);
  emu.message_size = 64;
  emu.measurement.has_latency = true;
  emu.measurement.lat.median_us = 41.25;
  emu.measurement.lat.p99_us = 80.5;
  emu.integrity = {true, 64, 0, -1, "host"};
  emu.status = TestStatus::kPassed;
  v.push_back(emu);
  return v;
}

WorkerSummary worker(const std::string& name, const std::string& state, int64_t heartbeat_ms,
                     Inventory inv) {
  WorkerSummary w;
  w.name = name;
  w.state = state;
  w.last_heartbeat_ms = heartbeat_ms;
  w.inventory = std::move(inv);
  w.connected_ms = heartbeat_ms - 1000;
  w.peer = "ipv4:10.0.0.1:5000";
  return w;
}

class FakeSource : public StatusSource {
 public:
  std::vector<WorkerSummary> workers() override {
    WorkerSummary a = worker("gpu-a", "online", kT0 + 5000, inventory("node-a", true));
    WorkerSummary b = worker("gpu-b", "online", kT0 + 5100, inventory("node-b", true));
    WorkerSummary c = worker("old-c", "offline", kT0 - 60000, inventory("node-c", false));
    c.inventory.notes = {"no GPU driver: GPU tests are skipped"};
    return {a, b, c};
  }

  Result<std::vector<TestResult>> results(const ResultQuery& q) override {
    std::lock_guard<std::mutex> lock(mu_);
    queries_.push_back(q);
    if (fail_) return unavailable("store is busy", "retry");
    std::vector<TestResult> out;
    for (const auto& r : fakeResults()) {
      if (!q.worker.empty() && r.initiator.worker != q.worker && r.target.worker != q.worker) {
        continue;
      }
      if (q.status && r.status != *q.status) continue;
      if (!q.run_id.empty() && r.run_id != q.run_id) continue;
      if (q.limit != 0 && out.size() >= q.limit) break;
      out.push_back(r);
    }
    return out;
  }

  ResultQuery lastQuery() {
    std::lock_guard<std::mutex> lock(mu_);
    return queries_.empty() ? ResultQuery{} : queries_.back();
  }
  void setFail(bool f) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_ = f;
  }

 private:
  std::mutex mu_;
  std::vector<ResultQuery> queries_;
  bool fail_ = false;
};

// j[key] as a string, "" when absent or not a string.
std::string str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get_ref<const std::string&>() : std::string();
}

class StatusPageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto port = server_.start("127.0.0.1:0");
    ASSERT_TRUE(port.ok()) << port.status().toString();
    port_ = *port;
    ASSERT_GT(port_, 0);
  }

  // GET path; returns {status, body, content type}.
  struct Reply {
    int status = 0;
    std::string body;
    std::string type;
  };
  Reply get(const std::string& path) {
    httplib::Client cli("127.0.0.1", port_);
    cli.set_connection_timeout(5);
    cli.set_read_timeout(10);
    auto res = cli.Get(path);
    if (!res) {
      ADD_FAILURE() << "GET " << path << ": " << httplib::to_string(res.error());
      return {};
    }
    return {res->status, res->body, res->get_header_value("Content-Type")};
  }
  json getJson(const std::string& path, int want_status = 200) {
    Reply r = get(path);
    EXPECT_EQ(r.status, want_status) << path << ": " << r.body;
    EXPECT_THAT(r.type, HasSubstr("application/json")) << path;
    return json::parse(r.body, nullptr, false);
  }

  FakeSource source_;
  StatusHttpServer server_{source_};
  int port_ = 0;
};

TEST_F(StatusPageTest, HealthzAnswersOk) {
  Reply r = get("/healthz");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "ok\n");
}

TEST_F(StatusPageTest, WorkersHaveTheShapeOfWorkersJson) {
  json j = getJson("/api/workers");
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 3u);
  EXPECT_EQ(j[0]["name"], "gpu-a");
  EXPECT_EQ(j[0]["state"], "online");
  EXPECT_EQ(j[0]["last_heartbeat"], formatRfc3339(kT0 + 5000));
  EXPECT_EQ(j[0]["inventory"]["hostname"], "node-a");
  EXPECT_EQ(j[0]["inventory"]["nics"][0]["ports"][0]["state"], "ACTIVE");
  EXPECT_EQ(j[0]["inventory"]["gpus"][0]["pci_bus_id"], "0000:1b:00.0");
  EXPECT_EQ(j[2]["state"], "offline");
  for (const char* k : {"connected", "peer", "active_tests"}) EXPECT_TRUE(j[0].contains(k)) << k;
}

TEST_F(StatusPageTest, ResultsAreToJsonOfTestResult) {
  json j = getJson("/api/results");
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 3u);
  EXPECT_EQ(source_.lastQuery().limit, 50u);
  EXPECT_EQ(j[0]["test_id"], "t-gdr-dmabuf");
  EXPECT_EQ(j[0]["gpudirect"], true);
  EXPECT_EQ(j[0]["initiator"]["reg_path"], "dmabuf");
  EXPECT_EQ(j[2]["transport"], "emulated");
  EXPECT_EQ(j[2]["gpudirect"], false);
  EXPECT_EQ(j[1]["integrity"]["wrong_bytes"], 4096);
}

TEST_F(StatusPageTest, ResultFiltersReachTheSource) {
  json j = getJson("/api/results?status=failed&worker=gpu-b&limit=7&run_id=r1");
  ResultQuery q = source_.lastQuery();
  EXPECT_EQ(q.limit, 7u);
  EXPECT_EQ(q.worker, "gpu-b");
  ASSERT_TRUE(q.status.has_value());
  EXPECT_EQ(*q.status, TestStatus::kFailed);
  EXPECT_EQ(q.run_id, "r1");

  j = getJson("/api/results?status=FAILED");
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["status"], "FAILED");
  j = getJson("/api/results?limit=1");
  EXPECT_EQ(j.size(), 1u);
  j = getJson("/api/results?worker=old-c");
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["test_id"], "t-emulated");
}

TEST_F(StatusPageTest, BadParametersAnswer400NamingTheParameter) {
  struct Case {
    std::string query, parameter;
  };
  const std::vector<Case> cases{
      {"/api/results?limit=abc", "limit"},     {"/api/results?limit=0", "limit"},
      {"/api/results?limit=10001", "limit"},   {"/api/results?limit=-5", "limit"},
      {"/api/results?status=bogus", "status"}, {"/api/results?worker=bad%20name!", "worker"},
      {"/api/results?colour=red", "colour"},   {"/api/results?limit=1&limit=2", "limit"},
      {"/api/summary?limit=x", "limit"},       {"/api/workers?x=1", "x"}};
  for (const auto& c : cases) {
    json j = getJson(c.query, 400);
    EXPECT_EQ(str(j, "parameter"), c.parameter) << c.query;
    EXPECT_THAT(str(j, "error"), HasSubstr(c.parameter)) << c.query;
    EXPECT_FALSE(str(j, "fix").empty()) << c.query;
  }
}

TEST_F(StatusPageTest, SourceFailureIs503AndUnknownApiIs404) {
  source_.setFail(true);
  json j = getJson("/api/results", 503);
  EXPECT_THAT(str(j, "error"), HasSubstr("store is busy"));
  source_.setFail(false);
  j = getJson("/api/nothing", 404);
  EXPECT_THAT(str(j, "fix"), HasSubstr("/api/results"));
  EXPECT_EQ(get("/missing.png").status, 404);
}

TEST_F(StatusPageTest, SummaryCountsByStatusWorkerAndDataPath) {
  json j = getJson("/api/summary");
  EXPECT_EQ(source_.lastQuery().limit, 500u);
  EXPECT_EQ(j["workers"]["online"], 2);
  EXPECT_EQ(j["workers"]["offline"], 1);
  EXPECT_EQ(j["results"]["considered"], 3);
  EXPECT_EQ(j["results"]["by_status"]["passed"], 2);
  EXPECT_EQ(j["results"]["by_status"]["failed"], 1);
  EXPECT_EQ(j["results"]["by_status"]["skipped"], 0);
  EXPECT_EQ(j["data_path"]["gpudirect"], 1);
  EXPECT_EQ(j["data_path"]["emulated"], 1);
  EXPECT_EQ(j["data_path"]["rdma_host"], 1);
  EXPECT_EQ(j["data_path"]["staged"], 0);
  EXPECT_EQ(j["latest_started"], formatRfc3339(kT0 + 3000));
  ASSERT_EQ(j["per_worker"].size(), 3u);
  EXPECT_EQ(j["per_worker"][0]["worker"], "gpu-a");
  EXPECT_EQ(j["per_worker"][0]["passed"], 2);
  EXPECT_EQ(j["per_worker"][0]["failed"], 1);
  EXPECT_EQ(j["per_worker"][2]["worker"], "old-c");
  EXPECT_EQ(j["per_worker"][2]["passed"], 1);
}

TEST_F(StatusPageTest, PageIsEmbeddedAndSelfContained) {
  httplib::Client cli("127.0.0.1", port_);
  auto res = cli.Get("/");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_THAT(res->get_header_value("Content-Type"), HasSubstr("text/html"));
  EXPECT_THAT(res->get_header_value("Content-Security-Policy"), HasSubstr("default-src 'self'"));
  EXPECT_THAT(res->body, HasSubstr("<title>gdrmesh status</title>"));
  // Nothing is fetched from outside the coordinator.
  EXPECT_THAT(res->body, Not(HasSubstr("http://")));
  EXPECT_THAT(res->body, Not(HasSubstr("https://")));
  auto js = cli.Get("/app.js");
  ASSERT_TRUE(js);
  EXPECT_THAT(js->get_header_value("Content-Type"), HasSubstr("javascript"));
  EXPECT_THAT(js->body, HasSubstr("emulated (not RDMA)"));
  EXPECT_THAT(js->body, Not(HasSubstr("innerHTML")));
  auto css = cli.Get("/style.css");
  ASSERT_TRUE(css);
  EXPECT_THAT(css->get_header_value("Content-Type"), HasSubstr("text/css"));
}

TEST(StatusHttpServerStart, BadAddressNamesTheFlag) {
  FakeSource source;
  for (const char* bad :
       {"nonsense", "127.0.0.1:", ":8080", "127.0.0.1:99999", "::1:80", "127.0.0.1:http"}) {
    StatusHttpServer s(source);
    auto r = s.start(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << bad;
    EXPECT_THAT(r.status().message(), HasSubstr("--http")) << bad;
    EXPECT_THAT(r.status().fix(), HasSubstr("--http")) << bad;
  }
}

TEST(StatusHttpServerStart, PortInUseIsAnErrorAndStopIsIdempotent) {
  FakeSource source;
  StatusHttpServer a(source);
  auto pa = a.start("127.0.0.1:0");
  ASSERT_TRUE(pa.ok()) << pa.status().toString();
  StatusHttpServer b(source);
  auto pb = b.start("127.0.0.1:" + std::to_string(*pa));
  ASSERT_FALSE(pb.ok());
  EXPECT_EQ(pb.status().code(), Code::kUnavailable);
  EXPECT_THAT(pb.status().message(), HasSubstr("--http"));
  EXPECT_FALSE(pb.status().fix().empty());
  auto again = a.start("127.0.0.1:0");
  EXPECT_FALSE(again.ok());
  a.stop();
  a.stop();
  // Stopped: nothing answers any more.
  httplib::Client cli("127.0.0.1", *pa);
  cli.set_connection_timeout(2);
  EXPECT_FALSE(cli.Get("/healthz"));
}

// ---- the real browser ------------------------------------------------------------------------

std::string findChromium() {
  if (const char* env = std::getenv("GDRMESH_CHROMIUM"); env != nullptr && *env != '\0') {
    return access(env, X_OK) == 0 ? env : "";
  }
  for (const char* p :
       {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"}) {
    if (access(p, X_OK) == 0) return p;
  }
  return "";
}

struct TempDir {
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "gdrmesh-browser-XXXXXX").string();
    if (mkdtemp(tmpl.data()) != nullptr) path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
  std::string path;
};

// Runs chromium headless with `mode_args`; returns stdout. stderr goes to a file in `dir`.
std::string runChromium(const std::string& chromium, const TempDir& dir,
                        const std::string& mode_args, const std::string& url, int* exit_code) {
  const std::string profile = dir.path + "/profile-" + std::to_string(std::rand());
  std::filesystem::create_directories(profile);
  const std::string cmd =
      "timeout 120 '" + chromium +
      "' --headless --no-sandbox --disable-gpu --disable-dev-shm-usage "
      "--disable-background-networking --disable-component-update --disable-sync "
      "--disable-extensions --no-first-run --no-default-browser-check --hide-scrollbars "
      "--user-data-dir='" +
      profile + "' " + mode_args + " '" + url + "' 2>>'" + dir.path + "/chromium.log'";
  std::string out;
  FILE* f = popen(cmd.c_str(), "r");
  if (f == nullptr) {
    *exit_code = -1;
    return out;
  }
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), f)) > 0) out.append(buf.data(), n);
  const int st = pclose(f);
  *exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return out;
}

std::string readFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST_F(StatusPageTest, ChromiumRendersWorkersAndResults) {
  const std::string chromium = findChromium();
  if (chromium.empty()) {
    GTEST_SKIP() << "chromium is not installed (apt-get install -y chromium, or set "
                    "GDRMESH_CHROMIUM to a Chromium/Chrome binary)";
  }
  TempDir dir;
  ASSERT_FALSE(dir.path.empty());
  const std::string url = "http://127.0.0.1:" + std::to_string(port_) + "/";
  int rc = 0;
  const std::string dom =
      runChromium(chromium, dir, "--virtual-time-budget=5000 --dump-dom", url, &rc);
  ASSERT_EQ(rc, 0) << "chromium failed; its log:\n" << readFile(dir.path + "/chromium.log");
  ASSERT_THAT(dom, HasSubstr("<table id=\"results\"")) << "no page rendered; chromium log:\n"
                                                       << readFile(dir.path + "/chromium.log");

  // The JS ran and filled both tables (the "Loading" placeholders are gone).
  const std::vector<std::string> absent{"Loading", "Cannot refresh", "[object"};
  const std::vector<std::string> present{
      // Workers.
      "data-worker=\"gpu-a\"", "data-worker=\"old-c\"", "node-b", ">offline<", "p1 ACTIVE",
      "NVIDIA H100 80GB HBM3", "no GPU driver: GPU tests are skipped",
      // Results: one row per result, status words, data path labels, figures.
      "data-test-id=\"t-gdr-dmabuf\"", "data-test-id=\"t-integrity-fail\"",
      "data-test-id=\"t-emulated\"", ">PASSED<", ">FAILED<", "emulated (not RDMA)",
      "GPUDirect RDMA", "gpu0 via dmabuf", "RDMA host memory", "194.31 Gb/s", "41.25 us", "8MiB",
      "FAILED: 4096 wrong bytes, first at offset 65536 (host)",
      "destination data check failed: 4096 wrong bytes on gpu-b",
      // Summary header: 2 online, 1 offline; 2 passed, 1 failed; one of each data path.
      "id=\"sum-online\">2<", "id=\"sum-offline\">1<", "id=\"sum-passed\">2<",
      "id=\"sum-failed\">1<", "id=\"sum-gpudirect\">1<", "id=\"sum-emulated\">1<",
      "id=\"sum-rdma_host\">1<"};
  std::string missing;
  for (const auto& s : present) {
    if (dom.find(s) == std::string::npos) missing += "  missing: " + s + "\n";
  }
  for (const auto& s : absent) {
    if (dom.find(s) != std::string::npos) missing += "  unexpected: " + s + "\n";
  }
  EXPECT_TRUE(missing.empty()) << missing << "rendered DOM:\n" << dom;

  // A screenshot at 1280 px for people to look at (kept in the build directory).
  const std::string png = std::string(GDRMESH_BROWSER_OUT_DIR) + "/status_page.png";
  std::filesystem::remove(png);
  runChromium(chromium, dir,
              "--window-size=1280,900 --virtual-time-budget=5000 --screenshot='" + png + "'", url,
              &rc);
  EXPECT_EQ(rc, 0) << readFile(dir.path + "/chromium.log");
  EXPECT_TRUE(std::filesystem::exists(png)) << "no screenshot at " << png;
  std::printf("status page screenshot: %s\n", png.c_str());
}

}  // namespace
}  // namespace gdrmesh
