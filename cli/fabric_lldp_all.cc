// `gdrmesh fabric discover --lldp --all-workers` (docs/fabric.md, "RoCE: LLDP"): one call asks
// every online worker's lldpd through the coordinator, which stores ONE merged snapshot; this
// prints it, every worker's line and the findings.
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "cli/fabric_cli.h"
#include "cli/fabric_lldp.h"
#include "cli/fabric_stored.h"
#include "cli/output.h"

namespace gdrmesh::cli {
namespace {

nlohmann::json workersJson(const pb::FabricLldpAllResponse& resp) {
  nlohmann::json workers = nlohmann::json::array();
  for (const auto& w : resp.workers()) {
    nlohmann::json j = {{"worker", w.worker()}, {"outcome", w.outcome()}};
    if (w.outcome() == "answered") {
      j["nics"] = w.nics();
      j["with_neighbour"] = w.with_neighbour();
    } else {
      j["detail"] = w.detail();
    }
    workers.push_back(std::move(j));
  }
  return workers;
}

std::string workersTable(const pb::FabricLldpAllResponse& resp) {
  std::vector<std::vector<std::string>> rows{{"WORKER", "OUTCOME", "NICS", "NEIGHBOURS", "DETAIL"}};
  for (const auto& w : resp.workers()) {
    const bool answered = w.outcome() == "answered";
    rows.push_back({w.worker(), w.outcome(), answered ? std::to_string(w.nics()) : "",
                    answered ? std::to_string(w.with_neighbour()) : "", w.detail()});
  }
  return renderTable(rows);
}

void printTable(const pb::FabricLldpAllResponse& resp) {
  const pb::FabricSnapshot& s = resp.snapshot();
  if (s.id() == 0) {
    std::cout << "nothing stored: " << s.detail() << "\n";
  } else {
    std::cout << storedHeader(s);
  }
  if (s.outcome() == "ok") {
    auto eth = lldpSnapshotFromText(s.snapshot_json(), "the stored snapshot");
    if (eth.ok() && eth->has_value()) std::cout << lldpFabricTable(**eth);
  }
  if (resp.workers_size() > 0) std::cout << "\n" << workersTable(resp);
  if (s.findings_size() > 0) std::cout << "\n" << findingsTable(s.findings());
  std::fprintf(stderr, "asked every online worker in %.2f s\n", resp.seconds());
}

}  // namespace

int runLldpDiscoverAll(const LldpAllArgs& a, const ClientOptions& o) {
  auto stub = connectControl(o);
  grpc::ClientContext ctx;
  setDeadline(&ctx, a.deadline_seconds + 60);  // and the store's time for one snapshot
  pb::FabricLldpAllRequest req;
  req.set_ca(a.ca);
  req.set_deadline_seconds(a.deadline_seconds);
  req.set_max_concurrency(a.max_concurrency);
  pb::FabricLldpAllResponse resp;
  auto st = stub->DiscoverLldpAll(&ctx, req, &resp);
  if (!st.ok()) return reportRpcError(o, "DiscoverLldpAll", st);
  const pb::FabricSnapshot& s = resp.snapshot();
  if (!a.save.empty() && !s.snapshot_json().empty()) {
    std::ofstream out(a.save);
    out << nlohmann::json::parse(s.snapshot_json(), nullptr, false).dump(1) << "\n";
    if (!out) {
      return fabricFail("discover",
                        invalidArgument("--save " + a.save + ": cannot write the file"));
    }
  }
  if (a.output == "json") {
    nlohmann::json j = s.id() != 0 ? storedJson(s)
                                   : nlohmann::json{{"id", 0},
                                                    {"worker", s.worker()},
                                                    {"outcome", s.outcome()},
                                                    {"detail", s.detail()},
                                                    {"findings", nlohmann::json::array()}};
    j["workers"] = workersJson(resp);
    j["seconds"] = resp.seconds();
    std::cout << j.dump(1) << "\n";
  } else {
    printTable(resp);
  }
  if (s.id() == 0 || s.outcome() == "skipped") return kExitSkipped;
  if (s.outcome() != "ok") return kExitFailed;
  return s.findings_size() == 0 ? kExitOk : kExitFailed;
}

}  // namespace gdrmesh::cli
