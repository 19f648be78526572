#include "coordinator/actions/kubernetes_actuator.h"

#include <httplib.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

namespace gdrmesh {

namespace {

using nlohmann::json;

std::string kubeNodePath(const std::string& node) {
  return "/api/v1/nodes/" + node;
}

Result<json> parseKubeNode(const std::string& text, const std::string& node) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return unavailable("kubernetes: GET " + kubeNodePath(node) + ": the answer is not JSON",
                       "check actions.kubernetes.api: it must be the API server");
  }
  return j;
}

// The string at `key` of an object ("" when absent or not a string).
std::string kubeString(const json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return "";
  return it->get_ref<const std::string&>();
}

json kubeTaintsOf(const json& node) {
  auto spec = node.find("spec");
  if (spec == node.end() || !spec->is_object()) return json::array();
  auto taints = spec->find("taints");
  if (taints == spec->end() || !taints->is_array()) return json::array();
  return *taints;
}

bool isFabricTaint(const json& t) {
  return kubeString(t, "key") == kKubeFabricKey;
}

std::string kubeResourceVersion(const json& node) {
  auto meta = node.find("metadata");
  return meta == node.end() ? "" : kubeString(*meta, "resourceVersion");
}

bool kubeCordoned(const json& node) {
  auto spec = node.find("spec");
  if (spec == node.end() || !spec->is_object()) return false;
  auto u = spec->find("unschedulable");
  return u != spec->end() && u->is_boolean() && *u == true;
}

class HttplibKubeApi final : public KubeApi {
 public:
  HttplibKubeApi(std::string server, std::string token_file, std::string ca_file, double timeout)
      : server_(std::move(server)),
        token_file_(std::move(token_file)),
        ca_file_(std::move(ca_file)),
        timeout_(timeout) {}

  Result<KubeResponse> get(const std::string& path) override {
    GDR_ASSIGN_OR_RETURN(httplib::Headers headers, headersFor());
    auto client = clientFor();
    return answer("GET", path, client->Get(path, headers));
  }
  Result<KubeResponse> patch(const std::string& path, const std::string& content_type,
                             const std::string& body) override {
    GDR_ASSIGN_OR_RETURN(httplib::Headers headers, headersFor());
    auto client = clientFor();
    return answer("PATCH", path, client->Patch(path, headers, body, content_type));
  }

 private:
  Result<httplib::Headers> headersFor() const {
    httplib::Headers h;
    h.emplace("Accept", "application/json");
    if (token_file_.empty()) return h;
    std::ifstream f(token_file_);
    if (!f) {
      return failedPrecondition("kubernetes: token_file " + token_file_ + ": cannot read it",
                                "give the service account token's path (e.g. "
                                "/var/run/secrets/kubernetes.io/serviceaccount/token)");
    }
    std::stringstream ss;
    ss << f.rdbuf();
    std::string token = ss.str();
    while (!token.empty() &&
           (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) {
      token.pop_back();
    }
    h.emplace("Authorization", "Bearer " + token);
    return h;
  }
  std::unique_ptr<httplib::Client> clientFor() const {
    auto c = std::make_unique<httplib::Client>(server_);
    const auto t = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::duration<double>(timeout_));
    c->set_connection_timeout(t);
    c->set_read_timeout(t);
    c->set_write_timeout(t);
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
    if (!ca_file_.empty()) c->set_ca_cert_path(ca_file_);
#endif
    return c;
  }
  Result<KubeResponse> answer(const std::string& method, const std::string& path,
                              const httplib::Result& res) const {
    if (!res) {
      return unavailable(
          "kubernetes: " + method + " " + server_ + path + ": " + httplib::to_string(res.error()),
          "check actions.kubernetes.api and ca_file, and that the API server "
          "answers from the coordinator's host");
    }
    return KubeResponse{res->status, res->body};
  }

  std::string server_, token_file_, ca_file_;
  double timeout_;
};

}  // namespace

std::unique_ptr<KubeApi> makeKubeApi(const std::string& server, const std::string& token_file,
                                     const std::string& ca_file, double timeout_seconds) {
  return std::make_unique<HttplibKubeApi>(server, token_file, ca_file, timeout_seconds);
}

Result<std::string> KubernetesActuator::readNode(const std::string& node) {
  GDR_ASSIGN_OR_RETURN(KubeResponse r, api_.get(kubeNodePath(node)));
  if (r.status == 404) {
    return notFound("kubernetes: no node " + node,
                    "name the worker after its Kubernetes node (the DaemonSet passes "
                    "spec.nodeName as the worker's --name)");
  }
  if (r.status != 200) {
    return unavailable("kubernetes: GET " + kubeNodePath(node) + ": HTTP " +
                           std::to_string(r.status) + ": " + r.body.substr(0, 300),
                       "give the coordinator's service account get and patch on nodes "
                       "(a ClusterRole)");
  }
  return r.body;
}

Status KubernetesActuator::patchNode(const std::string& node, const std::string& body) {
  GDR_ASSIGN_OR_RETURN(KubeResponse r, api_.patch(kubeNodePath(node), kKubeMergePatch, body));
  if (r.status != 200) {
    return unavailable("kubernetes: PATCH " + kubeNodePath(node) + ": HTTP " +
                           std::to_string(r.status) + ": " + r.body.substr(0, 300),
                       r.status == 409 ? "the node changed meanwhile; the next sweep tries again"
                                       : "give the coordinator's service account patch on nodes");
  }
  return Status::okStatus();
}

Result<NodeMark> KubernetesActuator::inspect(const std::string& node) {
  GDR_ASSIGN_OR_RETURN(std::string text, readNode(node));
  GDR_ASSIGN_OR_RETURN(json j, parseKubeNode(text, node));
  NodeMark m;
  bool ours = false;
  for (const auto& t : kubeTaintsOf(j)) ours = ours || isFabricTaint(t);
  const bool cordoned = kubeCordoned(j);
  if (ours) {
    m.owner = MarkOwner::kGdrmesh;
    m.detail = std::string("tainted ") + kKubeFabricKey;
  } else if (cordoned) {
    m.owner = MarkOwner::kOther;
    m.detail = "cordoned (spec.unschedulable) by someone else";
  } else {
    m.owner = MarkOwner::kNone;
    m.detail = "schedulable";
  }
  return m;
}

Result<std::string> KubernetesActuator::markPatch(const std::string& node_json,
                                                  const MarkRequest& request) {
  GDR_ASSIGN_OR_RETURN(json node, parseKubeNode(node_json, request.node));
  json taints = json::array();
  for (const auto& t : kubeTaintsOf(node)) {
    if (!isFabricTaint(t)) taints.push_back(t);
  }
  taints.push_back({{"key", kKubeFabricKey}, {"value", "fail"}, {"effect", "NoSchedule"}});
  json patch = {{"metadata",
                 {{"labels", {{kKubeFabricKey, "fail"}}},
                  {"annotations",
                   {{kKubeSweepAnnotation, request.sweep_id},
                    {kKubeReasonAnnotation, gdrmeshReason(request)}}}}},
                {"spec", {{"taints", taints}}}};
  const std::string rv = kubeResourceVersion(node);
  if (!rv.empty()) patch["metadata"]["resourceVersion"] = rv;
  return patch.dump();
}

Result<std::string> KubernetesActuator::clearPatch(const std::string& node_json) {
  GDR_ASSIGN_OR_RETURN(json node, parseKubeNode(node_json, ""));
  json taints = json::array();
  for (const auto& t : kubeTaintsOf(node)) {
    if (!isFabricTaint(t)) taints.push_back(t);
  }
  json patch = {
      {"metadata",
       {{"labels", {{kKubeFabricKey, nullptr}}},
        {"annotations", {{kKubeSweepAnnotation, nullptr}, {kKubeReasonAnnotation, nullptr}}}}},
      {"spec", {{"taints", taints}}}};
  const std::string rv = kubeResourceVersion(node);
  if (!rv.empty()) patch["metadata"]["resourceVersion"] = rv;
  return patch.dump();
}

Status KubernetesActuator::mark(const MarkRequest& request) {
  GDR_ASSIGN_OR_RETURN(std::string text, readNode(request.node));
  GDR_ASSIGN_OR_RETURN(std::string body, markPatch(text, request));
  return patchNode(request.node, body);
}

Status KubernetesActuator::clear(const std::string& node) {
  GDR_ASSIGN_OR_RETURN(std::string text, readNode(node));
  GDR_ASSIGN_OR_RETURN(std::string body, clearPatch(text));
  return patchNode(node, body);
}

std::string KubernetesActuator::describeMark(const MarkRequest& request) const {
  return "PATCH " + kubeNodePath(request.node) + " (" + kKubeMergePatch + "): label " +
         kKubeFabricKey + "=fail, annotations " + kKubeSweepAnnotation + "=" + request.sweep_id +
         " and " + kKubeReasonAnnotation + ", taint " + kKubeFabricKey + "=fail:NoSchedule";
}

std::string KubernetesActuator::describeClear(const std::string& node) const {
  return "PATCH " + kubeNodePath(node) + " (" + kKubeMergePatch + "): remove label, annotations " +
         "and taint " + kKubeFabricKey;
}

}  // namespace gdrmesh
