// The `cover` plan: rounds of disjoint host pairs (each host in at most one test a round, both
// directions at once) that together carry traffic over every inter-switch link in each
// direction, the paths read from the switches' LFTs (fabric.h), never from LID arithmetic.
//
// Greedy, round by round: each host in turn takes the free partner whose two paths (there and
// back) cross the most links not yet covered; a round ends when no free pair adds a link. The
// plan says how many directed inter-switch links there are, how many it covers, which it
// cannot (a link no LFT routes any host over: unroutable), and the lower bound on rounds: a leaf
// with h live hosts and U up-links needs at least ceil(U/h) rounds, since each of its hosts sends
// up one path a round; and the tables may force more (CoverPlan::tables_bound).
#pragma once

#include <string>
#include <vector>

#include "common/fabric/fabric.h"
#include "common/status.h"

namespace gdrmesh::fabric {

struct CoverPair {
  std::string a, b;  // host names (node descriptions)
  int a_port = 0, b_port = 0;
  uint16_t a_lid = 0, b_lid = 0;
  int new_links = 0;  // directed inter-switch links this pair covered first
};

struct CoverPlan {
  std::vector<std::vector<CoverPair>> rounds;
  size_t hosts = 0;           // HCA ports that can take part (active, with a LID)
  size_t directed_links = 0;  // inter-switch links, each direction counted
  // Directed links some host pair's path crosses. The others no test can load: the LFTs send no
  // host's traffic over them (ftree uses only as many down-links into a leaf as it has hosts).
  size_t routable = 0;
  size_t covered = 0;
  std::vector<std::string> uncovered;   // routable, yet the plan missed them (max_rounds)
  std::vector<std::string> unroutable;  // "spine09[8] -> leaf08[25]"
  // Rounds no plan can do with fewer: the larger of the two bounds below.
  int lower_bound = 0;
  int leaf_bound = 0;  // max over leaves of ceil(up-links / live hosts)
  // From the tables: a link only traffic to one host d crosses is loaded only by a test with d,
  // and d is in one test a round; d's links whose source leaves are pairwise disjoint need as
  // many rounds (a greedy family: a valid bound, not always the best). After a fault, minhop's
  // tables can send one destination's traffic from every pod over links of its own.
  int tables_bound = 0;
};

struct CoverOptions {
  int max_rounds = 64;
};

// Errors: a fabric with fewer than two usable host ports, or no LFTs (discovered --no-lfts).
Result<CoverPlan> planCover(const Fabric& f, const CoverOptions& opts = {});

// A directed inter-switch link as "switch[out port] -> switch[in port]".
std::string directedLinkName(const Fabric& f, uint64_t from_guid, int from_port);

}  // namespace gdrmesh::fabric
