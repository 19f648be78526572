// The Kubernetes actuator against a recorded API server (cpp-httplib on 127.0.0.1:0): it holds
// Node objects, applies each PATCH as the API server applies a JSON merge patch (with the
// resourceVersion check), and records every request; the test checks each request's method,
// path, body, Content-Type and token.
#include "coordinator/actions/kubernetes_actuator.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "coordinator/actions/action_engine.h"
#include "coordinator/store/sqlite_store.h"
#include "tests/support/temp_dir.h"

namespace gdrmesh {
namespace {

using nlohmann::json;

class RecordedApiServer {
 public:
  struct Request {
    std::string method, path, content_type, authorization, body;
  };
  RecordedApiServer() {
    server_.Get(R"(/api/v1/nodes/([^/]+))",
                [this](const httplib::Request& req, httplib::Response& res) {
                  std::lock_guard<std::mutex> lock(mu_);
                  record(req, "GET");
                  auto it = nodes_.find(req.matches[1]);
                  if (it == nodes_.end()) {
                    res.status = 404;
                    res.set_content(R"({"kind":"Status","reason":"NotFound"})", "application/json");
                    return;
                  }
                  res.set_content(it->second.dump(), "application/json");
                });
    server_.Patch(R"(/api/v1/nodes/([^/]+))",
                  [this](const httplib::Request& req, httplib::Response& res) {
                    std::lock_guard<std::mutex> lock(mu_);
                    record(req, "PATCH");
                    auto it = nodes_.find(req.matches[1]);
                    if (it == nodes_.end()) {
                      res.status = 404;
                      return;
                    }
                    if (req.get_header_value("Content-Type") != "application/merge-patch+json") {
                      res.status = 415;
                      return;
                    }
                    json patch = json::parse(req.body, nullptr, false);
                    if (patch.is_discarded()) {
                      res.status = 400;
                      return;
                    }
                    const json& rv = patch["metadata"]["resourceVersion"];
                    if (!rv.is_null() && rv != it->second["metadata"]["resourceVersion"]) {
                      res.status = 409;
                      return;
                    }
                    it->second.merge_patch(patch);
                    it->second["metadata"]["resourceVersion"] = std::to_string(++version_);
                    res.set_content(it->second.dump(), "application/json");
                  });
    port_ = server_.bind_to_any_port("127.0.0.1");  // listening on return
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~RecordedApiServer() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  void put(const std::string& name, json node) {
    std::lock_guard<std::mutex> lock(mu_);
    node["metadata"]["name"] = name;
    node["metadata"]["resourceVersion"] = std::to_string(++version_);
    nodes_[name] = std::move(node);
  }
  json node(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    return nodes_.at(name);
  }
  std::vector<Request> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  void clearRequests() {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.clear();
  }

 private:
  void record(const httplib::Request& req, const std::string& method) {
    requests_.push_back({method, req.path, req.get_header_value("Content-Type"),
                         req.get_header_value("Authorization"), req.body});
  }
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::map<std::string, json> nodes_;
  std::vector<Request> requests_;
  int version_ = 100;
};

json gpuNode() {
  return json{
      {"metadata", {{"labels", {{"kubernetes.io/hostname", "x"}}}}},
      {"spec",
       {{"taints",
         json::array(
             {{{"key", "nvidia.com/gpu"}, {"value", "present"}, {"effect", "NoSchedule"}}})}}}};
}

SweepEnding kubeEnding(const std::string& id, std::vector<Suspect> suspects) {
  SweepEnding e;
  e.sweep_id = id;
  e.state = SweepState::kFinished;
  e.hosts = {"n1", "n2", "n3", "n4"};
  e.passing = {"n1", "n2", "n3", "n4"};
  e.suspects = std::move(suspects);
  return e;
}

class KubernetesActuatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* n : {"n1", "n2", "n3", "n4"}) api.put(n, gpuNode());
    dir.write("token", "k8s-token\n");
    client = makeKubeApi(api.url(), dir.file("token"), "", 10);
    auto s = SqliteStore::open(":memory:");
    ASSERT_TRUE(s.ok());
    store = std::move(*s);
  }
  RecordedApiServer api;
  gdrmesh::testing::TempDir dir;
  std::unique_ptr<KubeApi> client;
  std::unique_ptr<SqliteStore> store;
  ManualClock clock;
};

TEST_F(KubernetesActuatorTest, TaintsLabelsAndAnnotatesTheSuspectThenUndoesItOncePassed) {
  KubernetesActuator kube(*client);
  ActionOptions o;
  o.mode = ActionOptions::Mode::kOn;
  o.actuator = "kubernetes";
  ActionEngine engine(o, kube, *store, clock, [](const std::string&) {});
  auto lines = engine.onSweepEnd(
      kubeEnding("s-1", {Suspect{"host", "n2", 1, {"failed with 3 of 3 partners"}}}));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("action drain n2: taken (kubernetes"), std::string::npos) << lines[0];

  auto reqs = api.requests();
  ASSERT_EQ(reqs.size(), 3u);  // inspect, then the mark's read and its patch
  EXPECT_EQ(reqs[0].method, "GET");
  EXPECT_EQ(reqs[0].path, "/api/v1/nodes/n2");
  EXPECT_EQ(reqs[1].method, "GET");
  EXPECT_EQ(reqs[2].method, "PATCH");
  EXPECT_EQ(reqs[2].path, "/api/v1/nodes/n2");
  EXPECT_EQ(reqs[2].content_type, "application/merge-patch+json");
  for (const auto& r : reqs) EXPECT_EQ(r.authorization, "Bearer k8s-token");
  const json expected_patch = json::parse(R"j({
    "metadata": {
      "labels": {"gdrmesh.io/fabric": "fail"},
      "annotations": {
        "gdrmesh.io/sweep": "s-1",
        "gdrmesh.io/reason": "gdrmesh: host suspect: failed with 3 of 3 partners (sweep s-1)"
      },
      "resourceVersion": "102"
    },
    "spec": {
      "taints": [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
        {"key": "gdrmesh.io/fabric", "value": "fail", "effect": "NoSchedule"}
      ]
    }
  })j");
  EXPECT_EQ(json::parse(reqs[2].body), expected_patch) << reqs[2].body;
  json n2 = api.node("n2");
  EXPECT_EQ(n2["metadata"]["labels"]["gdrmesh.io/fabric"], "fail");
  EXPECT_EQ(n2["metadata"]["labels"]["kubernetes.io/hostname"], "x");  // kept
  EXPECT_EQ(n2["spec"]["taints"].size(), 2u);

  // Still a suspect: nothing more. Then it passes: one read, one patch undoing all three.
  api.clearRequests();
  engine.onSweepEnd(kubeEnding("s-2", {Suspect{"host", "n2", 1, {"x"}}}));
  ASSERT_EQ(api.requests().size(), 1u);  // the inspect only
  api.clearRequests();
  lines = engine.onSweepEnd(kubeEnding("s-3", {}));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("action resume n2: taken"), std::string::npos) << lines[0];
  reqs = api.requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[2].method, "PATCH");
  EXPECT_EQ(reqs[2].content_type, "application/merge-patch+json");
  const json undo = json::parse(reqs[2].body);
  EXPECT_TRUE(undo["metadata"]["labels"]["gdrmesh.io/fabric"].is_null());
  EXPECT_TRUE(undo["metadata"]["annotations"]["gdrmesh.io/sweep"].is_null());
  EXPECT_TRUE(undo["metadata"]["annotations"]["gdrmesh.io/reason"].is_null());
  n2 = api.node("n2");
  EXPECT_FALSE(n2["metadata"]["labels"].contains("gdrmesh.io/fabric"));
  EXPECT_FALSE(n2["metadata"].contains("annotations") &&
               n2["metadata"]["annotations"].contains("gdrmesh.io/sweep"));
  ASSERT_EQ(n2["spec"]["taints"].size(), 1u);
  EXPECT_EQ(n2["spec"]["taints"][0]["key"], "nvidia.com/gpu");  // the other taint stays
}

TEST_F(KubernetesActuatorTest, LeavesANodeSomeoneCordoned) {
  json cordoned = gpuNode();
  cordoned["spec"]["unschedulable"] = true;
  api.put("n3", cordoned);
  KubernetesActuator kube(*client);
  auto m = kube.inspect("n3");
  ASSERT_TRUE(m.ok()) << m.status().toString();
  EXPECT_EQ(m->owner, MarkOwner::kOther);
  ActionOptions o;
  o.mode = ActionOptions::Mode::kOn;
  ActionEngine engine(o, kube, *store, clock, [](const std::string&) {});
  auto lines = engine.onSweepEnd(kubeEnding("s-1", {Suspect{"host", "n3", 1, {"x"}}}));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("skipped"), std::string::npos);
  for (const auto& r : api.requests()) EXPECT_EQ(r.method, "GET");
}

TEST_F(KubernetesActuatorTest, ErrorsNameTheNodeAndTheFix) {
  KubernetesActuator kube(*client);
  auto m = kube.inspect("nope");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), Code::kNotFound);
  EXPECT_NE(m.status().fix().find("--name"), std::string::npos);
  // A node that changed between the read and the patch: 409, the action fails.
  const std::string stale =
      KubernetesActuator::markPatch(api.node("n1").dump(), {"n1", "r", "s"}).value();
  api.put("n1", gpuNode());  // a new resourceVersion
  auto r = client->patch("/api/v1/nodes/n1", kKubeMergePatch, stale);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 409);
}

}  // namespace
}  // namespace gdrmesh
