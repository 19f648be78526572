// The localiser: verdicts (and the verdicts of retests) -> ranked suspects, and the retests
// that tell a bad host from a bad link (ClusterKit-style: each endpoint of a failing pair is
// paired again with a known-good partner). Pure and deterministic.
//
// Vocabulary. A host's partners are the distinct hosts it shared a judged (PASS or FAIL)
// test with; it failed with a partner when any such test failed. A host is a strong suspect
// when it failed with at least 2 partners and at least half of them, or with at least 2 of
// which most failed with nobody else (a star: a host that fails now and then with many
// partners, as a flapping port does): its failures explain its partners' failures with it. A
// known-good host is one all of whose tests passed, or all of whose failures were with a strong
// suspect.
//
// Suspects:
//   host  failed with 2 or more partners (score: failed partners / partners, moved by retests:
//         (failed + failed retests) / (partners + retests)), or with 1 partner and no retest
//         has cleared it yet, or a retest with a known-good partner failed, or a loopback test
//         on it failed (score 1). Evidence: "failed with 5 of 7 partners",
//         "retest with known-good h3: failed (bandwidth 18.2 Gb/s < 25 Gb/s ...)".
//   nic   in place of its host when the failures of a host with several tested NICs all
//         involve one NIC and its other NICs passed.
//   link  a failing pair that no strong suspect explains (score 0.5, +0.25 for each endpoint
//         a retest with a known-good partner cleared: "retest with known-good h3: passed (the
//         link, not the host)"), unless a retest of one of its endpoints failed. Such a pair
//         is repeated first (the same endpoints and shape): when every repeat passed it is
//         noise, a note and no suspect; a failed repeat is evidence ("repeat: ...").
//   threshold  when at least 90 % of the sweep's tests (6 or more) fail one threshold rule:
//         "all 15 tests fail bandwidth_gbps_min (...): the threshold or the fleet, not one
//         host" (score 1), in place of every host, NIC and link suspect.
// Ranked by score (highest first), then kind (threshold, host, nic, link), then name.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "coordinator/orchestrator/judge_row.h"
#include "coordinator/orchestrator/sweep_types.h"

namespace gdrmesh {

// `verdicts` are judgeResults(results, ...): matched to results by test id. Retest verdicts
// (retest = true) count as retest evidence, the others as the sweep's own tests.
std::vector<Suspect> localise(const std::vector<TestResult>& results,
                              const std::vector<PairVerdict>& verdicts);

// The suspects and what the operator should read beside them (pairs that failed once and
// passed on their repeat, a threshold the whole fleet misses).
struct Localisation {
  std::vector<Suspect> suspects;
  std::vector<std::string> notes;
  std::vector<size_t> noise_rows;  // failing sweep tests whose repeats all passed
};
Localisation localiseSweep(const JudgeRows& rows, const JudgeVerdicts& verdicts);

// `a` and `b` as one ranked list: a suspect in both keeps the higher score and both evidences.
std::vector<Suspect> mergeSuspects(std::vector<Suspect> a, const std::vector<Suspect>& b);

// Retests for the failing (non-retest) pairs. First a repeat of each failing pair that no strong
// suspect explains (and of each row of `repeat_rows`: the outlier detector's low pairs): the
// same endpoints, NICs, memory and size again. Then each endpoint that is not known-good is paired,
// in its original role, NIC, memory and size, with a known-good partner from `hosts` (not one
// of the pair; spread round-robin in name order), on the partner's NIC of the same name when
// it has tested one, else its automatic NIC. One retest per endpoint, strongest suspects
// first, at most `max_retests`; packed into rounds that share no resource. Each carries
// retest = true and retest_of = the failing test's id. Endpoints without a known-good partner
// available are not retested.
std::vector<PlannedTest> planRetests(const std::vector<TestResult>& results,
                                     const std::vector<PairVerdict>& verdicts,
                                     const std::vector<std::string>& hosts, int max_retests);

// The same over a sweep's compact rows and judgeRows(rows, ...): the rows' `retest` flags say
// which are retests. Same rows and verdicts, same answer as the forms above.
std::vector<Suspect> localise(const JudgeRows& rows, const JudgeVerdicts& verdicts);
std::vector<PlannedTest> planRetests(const JudgeRows& rows, const JudgeVerdicts& verdicts,
                                     const std::vector<std::string>& hosts, int max_retests,
                                     const std::vector<size_t>& repeat_rows = {});

}  // namespace gdrmesh
