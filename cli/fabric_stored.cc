#include "cli/fabric_stored.h"

#include <string>
#include <vector>

#include "cli/output.h"
#include "cli/sweep_output.h"

namespace gdrmesh::cli {

std::string findingsTable(const google::protobuf::RepeatedPtrField<pb::FabricFinding>& findings) {
  std::vector<std::vector<std::string>> rows{{"FINDING", "SWITCH", "PORT", "DETAIL"}};
  for (const auto& x : findings) {
    rows.push_back(
        {x.kind(), x.switch_name(), x.port() != 0 ? std::to_string(x.port()) : "", x.message()});
  }
  return renderTable(rows);
}

nlohmann::json storedJson(const pb::FabricSnapshot& s) {
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& x : s.findings()) {
    findings.push_back({{"kind", x.kind()},
                        {"switch", x.switch_name()},
                        {"port", x.port()},
                        {"message", x.message()}});
  }
  nlohmann::json j = {{"id", s.id()},
                      {"taken_ms", s.taken_ms()},
                      {"worker", s.worker()},
                      {"source", s.source()},
                      {"outcome", s.outcome()},
                      {"detail", s.detail()},
                      {"switches", s.switches()},
                      {"hosts", s.hosts()},
                      {"links", s.links()},
                      {"previous_id", s.previous_id()},
                      {"findings", std::move(findings)}};
  if (!s.snapshot_json().empty()) {
    j["snapshot"] = nlohmann::json::parse(s.snapshot_json(), nullptr, false);
  }
  return j;
}

std::string storedHeader(const pb::FabricSnapshot& s) {
  return "snapshot @" + std::to_string(s.id()) + " from " + s.worker() + ", " +
         formatLocalTime(s.taken_ms()) + ": " + s.outcome() +
         (s.detail().empty() ? "" : " (" + s.detail() + ")") +
         (s.previous_id() != 0 ? ", diffed against @" + std::to_string(s.previous_id()) : "") +
         "\n";
}

}  // namespace gdrmesh::cli
