#include "coordinator/orchestrator/sweep_lldp.h"

namespace gdrmesh {

std::vector<std::string> lldpSweepNotes(const fabric::EthFabric& f, const JudgeRows& rows,
                                        const JudgeVerdicts& verdicts) {
  std::vector<fabric::EthTestEnds> tests;
  std::vector<bool> failed;
  tests.reserve(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const JudgeRow& r = rows[i];
    if (r.retest) continue;
    tests.push_back({rows.str(r.initiator.worker),
                     r.initiator.nic != 0 ? rows.str(r.initiator.nic) : "",
                     rows.str(r.target.worker), r.target.nic != 0 ? rows.str(r.target.nic) : ""});
    failed.push_back(i < verdicts.size() && verdicts.kind[i] == VerdictKind::kFail);
  }
  std::vector<std::string> notes = fabric::ethCoverageNotes(fabric::estimateEthCoverage(f, tests));
  for (const auto& s : fabric::ethPortSuspects(f, tests, failed)) {
    notes.push_back("fabric suspect (" + std::string(fabric::kLldpEstimate) +
                    "): host switch port " + s.switch_port + " of " + s.nic + ": " + s.evidence);
  }
  return notes;
}

}  // namespace gdrmesh
