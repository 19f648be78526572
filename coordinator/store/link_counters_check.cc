// The checks every LinkCounterStore applies (store.h).
#include <set>
#include <tuple>

#include "coordinator/store/store.h"

namespace gdrmesh {

Status validateLinkCounters(const std::vector<LinkCounterRecord>& rows) {
  std::set<std::tuple<std::string, int, uint64_t, int, std::string>> seen;
  for (const LinkCounterRecord& r : rows) {
    if (r.sweep_id.empty() || r.link.empty() || r.counter.empty()) {
      return invalidArgument("putLinkCounters: a row without a sweep id, link or counter (link '" +
                                 r.link + "', counter '" + r.counter + "')",
                             "name the sweep, the link and the counter");
    }
    if (!seen.emplace(r.sweep_id, r.round, r.switch_guid, r.port, r.counter).second) {
      return invalidArgument("putLinkCounters: sweep " + r.sweep_id + " round " +
                                 std::to_string(r.round) + " " + r.switch_name + "[" +
                                 std::to_string(r.port) + "] " + r.counter + " is given twice",
                             "give each counter of a port once a round");
    }
  }
  return Status();
}

Status validateLinkVerdicts(const std::string& sweep_id,
                            const std::vector<LinkVerdictRecord>& rows) {
  if (sweep_id.empty()) {
    return invalidArgument("putLinkVerdicts: empty sweep id", "name the sweep");
  }
  std::set<std::string> seen;
  for (const LinkVerdictRecord& r : rows) {
    if (r.sweep_id != sweep_id) {
      return invalidArgument(
          "putLinkVerdicts: link " + r.link + " names sweep '" + r.sweep_id + "', not " + sweep_id,
          "store one sweep's verdicts at a time");
    }
    if (r.link.empty() || r.verdict.empty()) {
      return invalidArgument(
          "putLinkVerdicts: a verdict without a link or verdict (link '" + r.link + "')",
          "name the link and its verdict");
    }
    if (!seen.insert(r.link).second) {
      return invalidArgument("putLinkVerdicts: link " + r.link + " is given twice",
                             "give each link one verdict a sweep");
    }
  }
  return Status();
}

}  // namespace gdrmesh
