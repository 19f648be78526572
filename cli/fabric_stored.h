// Fabric snapshots the coordinator stored, as the CLI prints them (docs/fabric.md, "Snapshots
// stored by the coordinator"): a snapshot row as JSON, its one-line header and its findings
// (fabric_stored.cc), and `fabric discover --lldp --all-workers`, which asks every online worker
// through the coordinator and prints the one stored snapshot with every worker's line
// (fabric_lldp_all.cc).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/control.h"

namespace gdrmesh::cli {

// A stored snapshot as JSON: its row, its findings and its document (docs/fabric.md).
nlohmann::json storedJson(const pb::FabricSnapshot& s);
// "snapshot @12 from h1, <time>: ok (detail), diffed against @11\n"
std::string storedHeader(const pb::FabricSnapshot& s);
// FINDING SWITCH PORT DETAIL
std::string findingsTable(const google::protobuf::RepeatedPtrField<pb::FabricFinding>& findings);

struct LldpAllArgs {
  std::string ca;                 // --ca: each worker's RDMA device to keep
  double deadline_seconds = 120;  // --deadline: the whole call
  uint32_t max_concurrency = 0;   // --max-concurrency: workers asked at once; 0 = all
  std::string save;               // --save FILE: the merged snapshot's document
  std::string output = "table";
};

// `fabric discover --lldp --all-workers`. Exit 0 when every registered worker answered and
// nothing changed, 1 with any finding (a worker without an answer included) or when no worker
// answered and some were lost or too slow, 3 when nothing could be asked (no online worker, or
// lldpd missing on every online worker).
int runLldpDiscoverAll(const LldpAllArgs& a, const ClientOptions& o);

}  // namespace gdrmesh::cli
