#include "coordinator/orchestrator/sweep_lldp.h"

namespace gdrmesh {

namespace {

// The sweep's own tests (retests left out) as LLDP test ends, and which failed.
void lldpSweepTests(const JudgeRows& rows, const JudgeVerdicts& verdicts,
                    std::vector<fabric::EthTestEnds>* tests, std::vector<bool>* failed) {
  tests->reserve(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const JudgeRow& r = rows[i];
    if (r.retest) continue;
    tests->push_back({rows.str(r.initiator.worker),
                      r.initiator.nic != 0 ? rows.str(r.initiator.nic) : "",
                      rows.str(r.target.worker), r.target.nic != 0 ? rows.str(r.target.nic) : ""});
    failed->push_back(i < verdicts.size() && verdicts.kind[i] == VerdictKind::kFail);
  }
}

}  // namespace

std::vector<std::string> lldpSweepNotes(const fabric::EthFabric& f, const JudgeRows& rows,
                                        const JudgeVerdicts& verdicts) {
  std::vector<fabric::EthTestEnds> tests;
  std::vector<bool> failed;
  lldpSweepTests(rows, verdicts, &tests, &failed);
  return fabric::ethCoverageNotes(fabric::estimateEthCoverage(f, tests));
}

std::vector<Suspect> lldpSweepSuspects(const fabric::EthFabric& f, const JudgeRows& rows,
                                       const JudgeVerdicts& verdicts) {
  std::vector<fabric::EthTestEnds> tests;
  std::vector<bool> failed;
  lldpSweepTests(rows, verdicts, &tests, &failed);
  std::vector<Suspect> out;
  for (const auto& p : fabric::ethPortSuspects(f, tests, failed)) {
    Suspect s;
    s.kind = "switch_port";
    s.name = p.switch_port;
    const double explains =
        p.failed_total > 0 ? static_cast<double>(p.failed) / static_cast<double>(p.failed_total)
                           : 0.0;
    const double failing =
        p.tests > 0 ? static_cast<double>(p.failed) / static_cast<double>(p.tests) : 0.0;
    s.score = 0.5 + 0.5 * explains * failing;
    s.evidence.push_back("host switch port " + p.switch_port + " of " + p.nic + " (" +
                         fabric::kLldpEstimate + ")");
    s.evidence.push_back(p.evidence);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace gdrmesh
