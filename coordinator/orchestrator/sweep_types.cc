#include "coordinator/orchestrator/sweep_types.h"

#include "common/enum_names.h"

namespace gdrmesh {
namespace {

constexpr std::array<std::pair<SweepPattern, const char*>, 7> kPatterns{
    {{SweepPattern::kPairs, "pairs"},
     {SweepPattern::kAllPairs, "all-pairs"},
     {SweepPattern::kRails, "rails"},
     {SweepPattern::kLoopback, "loopback"},
     {SweepPattern::kRandom, "random"},
     {SweepPattern::kCover, "cover"},
     {SweepPattern::kBisection, "bisection"}}};
constexpr std::array<std::pair<SweepDirection, const char*>, 3> kDirections{
    {{SweepDirection::kOne, "one"},
     {SweepDirection::kBoth, "both"},
     {SweepDirection::kBidir, "bidir"}}};
constexpr std::array<std::pair<VerdictKind, const char*>, 3> kVerdicts{
    {{VerdictKind::kPass, "PASS"}, {VerdictKind::kFail, "FAIL"}, {VerdictKind::kSkip, "SKIP"}}};
constexpr std::array<std::pair<SweepState, const char*>, 6> kStates{
    {{SweepState::kQueued, "queued"},
     {SweepState::kRunning, "running"},
     {SweepState::kFinished, "finished"},
     {SweepState::kCancelled, "cancelled"},
     {SweepState::kInterrupted, "interrupted"},
     {SweepState::kFailed, "failed"}}};

}  // namespace

const char* toString(SweepPattern p) {
  return enumName(kPatterns, p);
}
std::optional<SweepPattern> parseSweepPattern(const std::string& s) {
  return enumFromName(kPatterns, s);
}
const char* toString(SweepDirection d) {
  return enumName(kDirections, d);
}
std::optional<SweepDirection> parseSweepDirection(const std::string& s) {
  return enumFromName(kDirections, s);
}
const char* toString(VerdictKind v) {
  return enumName(kVerdicts, v);
}
const char* toString(SweepState s) {
  return enumName(kStates, s);
}
std::optional<SweepState> parseSweepState(const std::string& s) {
  return enumFromName(kStates, s);
}

namespace {
int verdictRank(VerdictKind v) {
  switch (v) {
    case VerdictKind::kFail:
      return 2;
    case VerdictKind::kPass:
      return 1;
    case VerdictKind::kSkip:
      return 0;
  }
  return 0;
}
}  // namespace

bool speaksBetter(const PairVerdict& a, const PairVerdict& b) {
  if (verdictRank(a.verdict) != verdictRank(b.verdict)) {
    return verdictRank(a.verdict) > verdictRank(b.verdict);
  }
  return a.message_size > b.message_size;
}

uint64_t selectVerdicts(const std::vector<PairVerdict>& all, VerdictFilter filter, VerdictPage page,
                        VerdictCounts* counts, std::vector<PairVerdict>* page_out) {
  uint64_t matching = 0;
  for (const auto& v : all) {
    if (counts) counts->add(v.verdict);
    if (filter == VerdictFilter::kNone) continue;
    if (filter == VerdictFilter::kFailed && v.verdict != VerdictKind::kFail) continue;
    const uint64_t at = matching++;
    if (at < page.offset || (page.limit > 0 && at - page.offset >= page.limit)) continue;
    if (page_out) page_out->push_back(v);
  }
  return matching;
}

}  // namespace gdrmesh
