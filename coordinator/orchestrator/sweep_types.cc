#include "coordinator/orchestrator/sweep_types.h"

#include <array>
#include <utility>

namespace gdrmesh {
namespace {

template <typename E, size_t N>
std::optional<E> lookup(const std::array<std::pair<E, const char*>, N>& table,
                        const std::string& s) {
  for (const auto& [value, name] : table) {
    if (s == name) return value;
  }
  return std::nullopt;
}

template <typename E, size_t N>
const char* name(const std::array<std::pair<E, const char*>, N>& table, E v) {
  for (const auto& [value, n] : table) {
    if (value == v) return n;
  }
  return "unknown";
}

constexpr std::array<std::pair<SweepPattern, const char*>, 5> kPatterns{
    {{SweepPattern::kPairs, "pairs"},
     {SweepPattern::kAllPairs, "all-pairs"},
     {SweepPattern::kRails, "rails"},
     {SweepPattern::kLoopback, "loopback"},
     {SweepPattern::kRandom, "random"}}};
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
  return name(kPatterns, p);
}
std::optional<SweepPattern> parseSweepPattern(const std::string& s) {
  return lookup(kPatterns, s);
}
const char* toString(SweepDirection d) {
  return name(kDirections, d);
}
std::optional<SweepDirection> parseSweepDirection(const std::string& s) {
  return lookup(kDirections, s);
}
const char* toString(VerdictKind v) {
  return name(kVerdicts, v);
}
const char* toString(SweepState s) {
  return name(kStates, s);
}
std::optional<SweepState> parseSweepState(const std::string& s) {
  return lookup(kStates, s);
}

}  // namespace gdrmesh
