// Port counters around a sweep's rounds (docs/fabric.md, "Counters"): which ports a round's
// tests cross, the change of every counter between the read before and the read after the round
// (saturated and reset counters as lower bounds, never negative), the thresholds as rates, and
// what crossed them, as link verdicts and suspects named by both ends. Pure: no I/O, no clock.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/fabric/counters.h"
#include "coordinator/orchestrator/cluster_config.h"
#include "coordinator/orchestrator/link_blame.h"
#include "coordinator/orchestrator/outliers.h"
#include "coordinator/orchestrator/sweep_fabric.h"
#include "coordinator/orchestrator/sweep_types.h"
#include "coordinator/store/store.h"

namespace gdrmesh {

// A cable of the fabric, named from its smaller end (node GUID, port) as fabric::Link spells
// it: "leaf07[12] <-> spine02[7]".
struct CableEnds {
  std::string name;
  std::string a_name, b_name;
  uint64_t a_guid = 0, b_guid = 0;
  int a_port = 0, b_port = 0;
};
// The cable on switch `guid`'s port `port` (its other end may be an HCA or nothing).
CableEnds cableOf(const fabric::Fabric& f, uint64_t guid, int port);

// The switch ports the paths of `pairs` cross, both directions (each hop's in and out port), as
// the fabric reader reads them (the switch's LID and the port), sorted. Pairs whose workers
// have no HCA or no path are left out and counted in *untraced.
std::vector<fabric::CounterPort> roundCounterPorts(
    const SweepFabric& fabric, const fabric::HostMatch& match,
    const std::vector<std::pair<EndpointSelector, EndpointSelector>>& pairs, size_t* untraced);

// One round's counters: the change of each counter of each port read both before and after,
// as rows (zero changes left out, except that a port none of whose counters moved has one row of
// 0, SymbolErrorCounter where read: what a resumed sweep knows it read), and a finding for each
// port that did not answer either read.
struct RoundCounterDeltas {
  std::vector<LinkCounterRecord> rows;
  std::vector<std::string> findings;
};
RoundCounterDeltas roundCounterDeltas(const SweepFabric& fabric, const std::string& sweep_id,
                                      int round, double seconds,
                                      const fabric::CounterReadOutcome& before,
                                      const fabric::CounterReadOutcome& after);

// A counter over its threshold during one round.
struct CounterExcess {
  LinkCounterRecord row;
  const CounterThreshold* threshold = nullptr;
  std::string text;  // "1,234 symbol errors during round 1 = 4,442/h (threshold 120/h)"
};
// The rows whose counter crossed its threshold (thresholds: the config's, by counter name; a
// counter with none is never judged), in row order.
std::vector<CounterExcess> judgeCounters(const std::vector<LinkCounterRecord>& rows,
                                         const std::vector<CounterThreshold>& thresholds);

// "symbol errors" for SymbolErrorCounter, the IBA name for the rest.
std::string counterNoun(const std::string& counter);

// The links' verdicts of a sweep: every cable whose ports were read (ok or errors) or that the
// slow pairs share (link_blame's), with the evidence, and every inter-switch cable no test
// crossed in either direction (not_covered: both its directions in `never`, the coverage's
// FabricCoverage::never); ordered worst first (fabric::linkVerdictSeverity), then by name. And
// the suspects: link_blame's, merged
// with one suspect per cable with errors over a threshold (score 0.9, or link_blame's raised
// to it), its evidence the counters' text. Ranked as mergeSuspects ranks.
struct LinkJudgement {
  std::vector<LinkVerdictRecord> verdicts;
  std::vector<Suspect> link_suspects;
};
// `read`: the switch ports whose counters were read in both reads of some round.
LinkJudgement judgeLinks(const SweepFabric& fabric, const std::string& sweep_id,
                         const std::set<DirectedLink>& read,
                         const std::vector<CounterExcess>& excess,
                         const std::vector<BlamedLink>& blamed,
                         const std::vector<DirectedLink>& never = {});

// Without counters (no fabric_reader): the verdicts of the cables link blame names, from the
// slow pairs' paths alone (slow_pairs, with link_blame's evidence), each saying that no counters
// were read (kNoCountersEvidence). Ok and not_covered need counters or coverage: none here.
inline constexpr const char* kNoCountersEvidence =
    "no counters were read (no fabric_reader): the verdict rests on the slow pairs' paths alone";
std::vector<LinkVerdictRecord> linkVerdictsFromPaths(const SweepFabric& fabric,
                                                     const std::string& sweep_id,
                                                     const std::vector<BlamedLink>& blamed);

// The sweep's verdict with its links' (docs/fabric.md, "A bad link fails the sweep"): a link
// whose verdict fails (fabric::linkVerdictFails: errors, slow pairs) fails the sweep, and the
// reason names the worst one by both ends with its first evidence, and how many more there
// are ("link leaf01[5] <-> spine01[1]: errors: 1,234 symbol errors on leaf01[5] during round 0
// = 27,574,014/h (threshold 120/h)"), before any reason `v` had. Ok and not_covered links leave
// `v` as it was. Pure: the same links give the same verdict, at the end and on every re-read.
void judgeSweepLinks(const std::vector<LinkVerdictRecord>& links, SweepVerdict* v);

}  // namespace gdrmesh
