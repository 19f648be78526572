// The `bisection` plan: half the hosts to the other half at once, the halves chosen from the
// fabric so that every pair's traffic crosses the top level of the tree, and the fabric's
// theoretical bisection bandwidth across that cut, from the discovered widths and speeds.
//
// Levels come from the cables, never from names or LIDs: leaves are the switches with hosts
// (rank 0), a switch's rank is its distance in switch hops from the nearest leaf, and the top
// level is the highest rank. Removing the top level splits the other switches into groups
// ("pods": in a two-level tree each leaf, in a three-level one each pod of edge and aggregation
// switches); traffic between two pods can only go over the top. Half A takes the first whole pods
// (the pod of the first host's leaf first), as many as make the smaller half largest; half B the
// rest.
// Host i of A is paired with host i of B, all pairs in one round (each host in one test); the
// hosts beyond the smaller half sit out, named.
//
// The bound: per direction, A's top-level links carry at most the sum of their rates (width x
// lane signalling rate, fabric::laneGbps: 4x HDR = 212.5 Gb/s) up, B's at most theirs down, so
// A -> B is bounded by min(sum over A's top-level links, sum over B's); likewise B -> A. Only
// active cables count. Signalling rates: the data rate is lower by the line encoding (64b/66b
// from FDR on).
#pragma once

#include <string>
#include <vector>

#include "common/fabric/cover.h"
#include "common/fabric/fabric.h"
#include "common/status.h"

namespace gdrmesh::fabric {

struct BisectionPlan {
  std::vector<CoverPair> pairs;     // one round: a in half A, b in half B
  std::vector<std::string> half_a;  // host port names ("h0001 mlx5_0"), in pairing order
  std::vector<std::string> half_b;
  std::vector<std::string> sitting_out;     // hosts of the larger half without a partner
  size_t hosts = 0;                         // active host ports with a LID
  int levels = 0;                           // switch levels (2: leaf/spine)
  std::vector<std::string> top;             // the top level's switches
  size_t pods = 0;                          // groups below the top level
  size_t pods_a = 0;                        // of them in half A
  size_t top_links_a = 0, top_links_b = 0;  // active cables between each half and the top
  double top_gbps_a = 0, top_gbps_b = 0;    // their summed rates (one direction)
  // The bisection bandwidth per direction: min(top_gbps_a, top_gbps_b); both directions at once
  // carry twice that.
  double bound_gbps = 0;
};

// Errors: fewer than two usable host ports, no LFT-independent top level (a single switch: every
// pair stays below it), or everything in one pod.
Result<BisectionPlan> planBisection(const Fabric& f);

}  // namespace gdrmesh::fabric
