// What acts on a node for the coordinator: Slurm (slurm_actuator.h) drains and resumes,
// Kubernetes (kubernetes_actuator.h) taints and untaints. ActionEngine decides; an Actuator only
// carries out and reports what it finds. Fakes live beside the tests.
//
// Thread contract: called from one thread at a time (the sweep's, at its end).
#pragma once

#include <string>

#include "common/result.h"
#include "common/status.h"

namespace gdrmesh {

// Who holds a node out of service now.
enum class MarkOwner {
  kNone,     // in service
  kGdrmesh,  // drained/tainted with gdrmesh's reason
  kOther,    // drained, down or tainted by someone (or something) else
};
const char* toString(MarkOwner o);  // none | gdrmesh | other

struct NodeMark {
  MarkOwner owner = MarkOwner::kNone;
  std::string detail;  // what the node shows ("State=IDLE+DRAIN Reason=maintenance")
};

// What to write on a node: `reason` ("host suspect: failed with 3 of 3 partners") and the sweep
// that found it. The actuator formats them its way ("gdrmesh: <reason> (sweep <id>)").
struct MarkRequest {
  std::string node;
  std::string reason;
  std::string sweep_id;  // "" = none (`gdrmesh check --local --slurm-drain`)
};

class Actuator {
 public:
  virtual ~Actuator() = default;
  virtual std::string name() const = 0;  // "slurm", "kubernetes"
  // The node's current state. A node the cluster manager does not know is an error naming it.
  virtual Result<NodeMark> inspect(const std::string& node) = 0;
  // Takes the node out of service with gdrmesh's reason.
  virtual Status mark(const MarkRequest& request) = 0;
  // Puts a node that gdrmesh took out back into service.
  virtual Status clear(const std::string& node) = 0;
  // What mark() / clear() would run, for dry-run records and logs ("scontrol update ...").
  virtual std::string describeMark(const MarkRequest& request) const = 0;
  virtual std::string describeClear(const std::string& node) const = 0;
};

// "gdrmesh: <reason> (sweep <id>)" ("gdrmesh: <reason>" without a sweep: `check --local`): the
// reason every actuator writes; its prefix is how a node's mark is known to be gdrmesh's.
std::string gdrmeshReason(const MarkRequest& request);
inline constexpr const char* kGdrmeshReasonPrefix = "gdrmesh:";

}  // namespace gdrmesh
