// A sweep on a RoCE fabric known from LLDP (`gdrmesh coordinator --fabric FILE` with a snapshot
// `fabric discover --lldp` saved, docs/fabric.md "RoCE: LLDP"): which host switch ports the
// sweep's tests touched, which tests stayed within a switch and which crossed between switches
// (path unknown), and the host switch ports that slow pairs share. Every line is labelled as an
// estimate: Ethernet switches have no forwarding tables to read and ECMP hides the path, so
// nothing here is derived from LFTs. Pure: no I/O, no clock, no protobuf.
#pragma once

#include <string>
#include <vector>

#include "common/fabric/lldp.h"
#include "coordinator/orchestrator/judge_row.h"
#include "coordinator/orchestrator/sweep_types.h"

namespace gdrmesh {

// The report's coverage notes for `rows` (the sweep's own tests; retests left out) judged
// `verdicts`. Host NICs are found by worker name (the host an LLDP snapshot names, as workers
// answer it) and the row's NIC.
std::vector<std::string> lldpSweepNotes(const fabric::EthFabric& f, const JudgeRows& rows,
                                        const JudgeVerdicts& verdicts);

// The host switch ports that slow pairs share (fabric::ethPortSuspects) as the sweep's suspects,
// kind `switch_port`, named "leaf01[Ethernet1]", scored as a blamed link is (link_blame.h):
// 0.5 + 0.5 x (share of the failed tests it explains) x (share of its tests that failed). The
// evidence names the NIC behind the port and says that it is an estimate.
std::vector<Suspect> lldpSweepSuspects(const fabric::EthFabric& f, const JudgeRows& rows,
                                       const JudgeVerdicts& verdicts);

}  // namespace gdrmesh
