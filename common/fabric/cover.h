// The `cover` plan: rounds of disjoint host pairs (each host in at most one test a round, both
// directions at once) that together carry traffic over every inter-switch link in each
// direction, the paths read from the switches' LFTs (fabric.h), never from LID arithmetic.
//
// Greedy, round by round: each host in turn takes the free partner whose two paths (there and
// back) cross the most links not yet covered; a round ends when no free pair adds a link. The
// plan says how many directed inter-switch links there are, how many it covers, which it
// cannot (a link no LFT routes any host over: unroutable), and the lower bound on rounds: a leaf
// with h live hosts and U up-links needs at least ceil(U/h) rounds, since each of its hosts sends
// up one path a round; and the tables may force more (CoverPlan::tables_bound, source_bound).
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
  // Rounds no plan can do with fewer: the largest of the bounds below.
  int lower_bound = 0;
  int leaf_bound = 0;  // max over leaves of ceil(up-links / live hosts)
  // From the tables: a link only traffic to one host d crosses is loaded only by a test with d,
  // and d is in one test a round; d's links whose source leaves are pairwise disjoint need as
  // many rounds (a greedy family: a valid bound, not always the best). After a fault, minhop's
  // tables can send one destination's traffic from every pod over links of its own.
  int tables_bound = 0;
  // A leaf whose traffic alone crosses links to k destinations of their own (pairwise disjoint
  // destination sets) sends them k paths, and its h hosts send h a round: ceil(k / h) rounds.
  // After a fault, minhop's tables can route one leaf's traffic to hundreds of hosts so (the
  // leaf beside the failed cable). source_bound_why names that leaf and its counts.
  int source_bound = 0;
  std::string source_bound_why;
};

struct CoverOptions {
  int max_rounds = 64;
  // OpenSM's ftree order of the compute nodes (their LIDs, parseFtreeCaOrder): the first round
  // pairs host i with host i + m/2 of it before the greedy fills the rest.
  std::vector<uint16_t> ca_order;
};

// opensm-ftree-ca-order.dump, which OpenSM's ftree writes beside its log: a compute node a line,
// its LID first ("0x000b\th0769 mlx5_0"); a missing node's place is "0xFFFF\tDUMMY"
// (kCaOrderDummy, kept so that the others keep their places). Errors name the line.
inline constexpr uint16_t kCaOrderDummy = 0xffff;
Result<std::vector<uint16_t>> parseFtreeCaOrder(const std::string& text);

// Errors: a fabric with fewer than two usable host ports, or no LFTs (discovered --no-lfts).
Result<CoverPlan> planCover(const Fabric& f, const CoverOptions& opts = {});

// A directed inter-switch link as "switch[out port] -> switch[in port]".
std::string directedLinkName(const Fabric& f, uint64_t from_guid, int from_port);

}  // namespace gdrmesh::fabric
