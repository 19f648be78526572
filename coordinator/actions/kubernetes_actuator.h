// The Kubernetes actuator: takes a suspect's node out of scheduling by
//   label       gdrmesh.io/fabric=fail
//   annotations gdrmesh.io/sweep=<sweep id>, gdrmesh.io/reason="gdrmesh: <reason> (sweep ID)"
//   taint       gdrmesh.io/fabric=fail:NoSchedule
// and undoes all three once it passes. Each change is one PATCH of /api/v1/nodes/NAME with a
// JSON merge patch (RFC 7386, Content-Type application/merge-patch+json) made from the node
// just read: the taints list is replaced whole by a merge patch (as by a strategic merge
// patch: NodeSpec.taints has no merge key), so the patch carries every other taint unchanged
// and the node's resourceVersion, and the API server refuses it (409) if the node changed in
// between. A node is gdrmesh's when it carries the gdrmesh.io/fabric taint, someone else's
// when it is cordoned (spec.unschedulable) without it; other taints (a GPU node's dedicated
// taint) are not a verdict on the node and are left alone.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "coordinator/actions/actuator.h"

namespace gdrmesh {

struct KubeResponse {
  int status = 0;
  std::string body;
};

// The API server, as the actuator uses it; DefaultKubeApi talks HTTPS with a bearer token.
class KubeApi {
 public:
  virtual ~KubeApi() = default;
  // A transport failure is an error; an HTTP error status is a response.
  virtual Result<KubeResponse> get(const std::string& path) = 0;
  virtual Result<KubeResponse> patch(const std::string& path, const std::string& content_type,
                                     const std::string& body) = 0;
};

// cpp-httplib: `server` ("https://kubernetes.default.svc"), the token read from `token_file` at
// each request ("" = none), the server's CA bundle `ca_file` ("" = the system's).
std::unique_ptr<KubeApi> makeKubeApi(const std::string& server, const std::string& token_file,
                                     const std::string& ca_file, double timeout_seconds);

inline constexpr const char* kKubeFabricKey = "gdrmesh.io/fabric";
inline constexpr const char* kKubeSweepAnnotation = "gdrmesh.io/sweep";
inline constexpr const char* kKubeReasonAnnotation = "gdrmesh.io/reason";
inline constexpr const char* kKubeMergePatch = "application/merge-patch+json";

class KubernetesActuator final : public Actuator {
 public:
  explicit KubernetesActuator(KubeApi& api) : api_(api) {}
  std::string name() const override { return "kubernetes"; }
  Result<NodeMark> inspect(const std::string& node) override;
  Status mark(const MarkRequest& request) override;
  Status clear(const std::string& node) override;
  std::string describeMark(const MarkRequest& request) const override;
  std::string describeClear(const std::string& node) const override;

  // The merge patches, from the node's JSON as read (exposed for tests).
  static Result<std::string> markPatch(const std::string& node_json, const MarkRequest& request);
  static Result<std::string> clearPatch(const std::string& node_json);

 private:
  Result<std::string> readNode(const std::string& node);
  Status patchNode(const std::string& node, const std::string& body);

  KubeApi& api_;
};

}  // namespace gdrmesh
