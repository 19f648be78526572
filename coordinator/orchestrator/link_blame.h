// Link blame: the slow or failed tests of a sweep, their paths through the fabric (read from the
// LFTs, sweep_fabric.h) -> the inter-switch links to blame. Pure and deterministic.
//
// The tests judged are the sweep's own (not retests) whose paths are known; a bad test is a FAIL
// verdict, a good one a PASS. A test's data crosses its forward path (initiator to target) for
// write, send and write_imm, its reverse path for read. A candidate is a directed inter-switch
// link ("leaf07[12] -> spine02[7]") or a cable, both directions of one ("leaf07[12] <->
// spine02[7]"). It is blamed when
//   - at least 2 bad tests crossed it,
//   - at least 3 in 4 of the tests that crossed it are bad (the pairs over it are slow), and
//   - it explains at least half of the bad tests (the pairs not crossing it are mostly fine).
// The best explanation first (bad tests explained x share of bad among those crossing it; a
// directed link before its cable when the cable explains no more); its bad tests are then set
// aside and the next is sought, at most `max_links`. The suspect (kind "link") is named by both
// ends and scored 0.5 + 0.5 x explained share x bad share, so a link that explains every slow
// pair ranks above any host that merely failed with some partners over it.
//
// A bad host is told from a bad link: its slow tests go to partners over paths that share no
// link (no inter-switch link carries most of them, and its leaf's neighbours pass over the same
// links), so no link qualifies. Host, NIC and pair suspects whose every failing test crossed a
// blamed link are kept but halved, with that evidence ("every failing test of h3 crossed ...").
#pragma once

#include <string>
#include <vector>

#include "coordinator/orchestrator/judge_row.h"
#include "coordinator/orchestrator/sweep_fabric.h"
#include "coordinator/orchestrator/sweep_types.h"

namespace gdrmesh {

struct BlamedLink {
  Suspect suspect;
  std::vector<DirectedLink> links;  // one (directed) or two (a cable)
  std::vector<size_t> bad_rows;     // the bad tests it explains
};

std::vector<BlamedLink> blameLinks(const JudgeRows& rows, const JudgeVerdicts& verdicts,
                                   const RowPaths& paths, const SweepFabric& fabric,
                                   size_t max_links = 3);

// `suspects` with the blamed links merged in and ranked (score, then kind, then name): a host,
// NIC or pair suspect whose failing tests all crossed a blamed link is halved, with that evidence.
std::vector<Suspect> withLinkBlame(std::vector<Suspect> suspects,
                                   const std::vector<BlamedLink>& blamed, const JudgeRows& rows,
                                   const JudgeVerdicts& verdicts);

}  // namespace gdrmesh
