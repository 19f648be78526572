// A fake Actuator for ActionEngine tests: nodes held in a map, every call recorded.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "coordinator/actions/actuator.h"

namespace gdrmesh::testing {

class FakeActuator final : public Actuator {
 public:
  struct Node {
    bool out = false;
    std::string reason;
  };
  std::map<std::string, Node> nodes;
  std::vector<std::string> calls;  // "mark h2", "clear h2"
  bool fail_marks = false;

  std::string name() const override { return "fake"; }
  Result<NodeMark> inspect(const std::string& node) override {
    auto it = nodes.find(node);
    if (it == nodes.end()) return notFound("fake: no node " + node);
    NodeMark m;
    m.detail = it->second.out ? "out: " + it->second.reason : "in service";
    if (!it->second.out) {
      m.owner = MarkOwner::kNone;
    } else if (it->second.reason.rfind(kGdrmeshReasonPrefix, 0) == 0) {
      m.owner = MarkOwner::kGdrmesh;
    } else {
      m.owner = MarkOwner::kOther;
    }
    return m;
  }
  Status mark(const MarkRequest& r) override {
    calls.push_back("mark " + r.node);
    if (fail_marks) return unavailable("fake: refused", "none");
    nodes[r.node] = {true, gdrmeshReason(r)};
    return Status::okStatus();
  }
  Status clear(const std::string& node) override {
    calls.push_back("clear " + node);
    nodes[node] = {false, ""};
    return Status::okStatus();
  }
  std::string describeMark(const MarkRequest& r) const override { return "fake-drain " + r.node; }
  std::string describeClear(const std::string& node) const override {
    return "fake-resume " + node;
  }
};

}  // namespace gdrmesh::testing
