// PathHopRecord's link key and the checks every TestPathStore applies (store.h).
#include <cinttypes>
#include <cstdio>
#include <set>
#include <tuple>

#include "coordinator/store/store.h"

namespace gdrmesh {

std::string PathHopRecord::link() const {
  char key[48];
  std::snprintf(key, sizeof key, "0x%016" PRIx64 ":%d", switch_guid, out_port);
  return key;
}

Status validatePathHops(const std::vector<PathHopRecord>& hops) {
  std::set<std::tuple<std::string, std::string, int>> seen;
  for (const PathHopRecord& h : hops) {
    if (h.test_id.empty()) {
      return invalidArgument("putTestPaths: a hop without a test_id", "name the test");
    }
    if (h.direction != "forward" && h.direction != "reverse") {
      return invalidArgument("putTestPaths: test " + h.test_id + ": direction '" + h.direction +
                                 "' is not forward or reverse",
                             "forward: initiator to target; reverse: back");
    }
    if (!seen.emplace(h.test_id, h.direction, h.hop).second) {
      return invalidArgument("putTestPaths: test " + h.test_id + " " + h.direction + " hop " +
                                 std::to_string(h.hop) + " is given twice",
                             "give each hop of a path once");
    }
  }
  return Status();
}

}  // namespace gdrmesh
