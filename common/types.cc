#include "common/types.h"

#include <array>
#include <utility>

namespace gdrmesh {
namespace {

template <typename E, size_t N>
std::optional<E> lookup(const std::array<std::pair<E, const char*>, N>& table, std::string_view s) {
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

constexpr std::array<std::pair<Op, const char*>, 4> kOps{{{Op::kWrite, "write"},
                                                          {Op::kRead, "read"},
                                                          {Op::kSend, "send"},
                                                          {Op::kWriteImm, "write_imm"}}};
constexpr std::array<std::pair<Mode, const char*>, 2> kModes{
    {{Mode::kBandwidth, "bw"}, {Mode::kLatency, "lat"}}};
constexpr std::array<std::pair<MemoryKind, const char*>, 2> kMemory{
    {{MemoryKind::kHost, "host"}, {MemoryKind::kCuda, "cuda"}}};
constexpr std::array<std::pair<RegPath, const char*>, 5> kRegPaths{{{RegPath::kAuto, "auto"},
                                                                    {RegPath::kHost, "host"},
                                                                    {RegPath::kDmabuf, "dmabuf"},
                                                                    {RegPath::kPeermem, "peermem"},
                                                                    {RegPath::kStaged, "staged"}}};
constexpr std::array<std::pair<TransportKind, const char*>, 3> kTransports{
    {{TransportKind::kEmulated, "emulated"},
     {TransportKind::kVerbs, "verbs"},
     {TransportKind::kSimulated, "simulated"}}};
constexpr std::array<std::pair<TestStatus, const char*>, 4> kStatuses{
    {{TestStatus::kPassed, "PASSED"},
     {TestStatus::kFailed, "FAILED"},
     {TestStatus::kSkipped, "SKIPPED"},
     {TestStatus::kError, "ERROR"}}};
constexpr std::array<std::pair<Role, const char*>, 2> kRoles{
    {{Role::kInitiator, "initiator"}, {Role::kTarget, "target"}}};

}  // namespace

const char* toString(Op v) {
  return name(kOps, v);
}
const char* toString(Mode v) {
  return name(kModes, v);
}
const char* toString(MemoryKind v) {
  return name(kMemory, v);
}
const char* toString(RegPath v) {
  return name(kRegPaths, v);
}
const char* toString(TransportKind v) {
  return name(kTransports, v);
}
const char* toString(TestStatus v) {
  return name(kStatuses, v);
}
const char* toString(Role v) {
  return name(kRoles, v);
}

std::optional<Op> parseOp(std::string_view s) {
  return lookup(kOps, s);
}
std::optional<Mode> parseMode(std::string_view s) {
  return lookup(kModes, s);
}
std::optional<MemoryKind> parseMemoryKind(std::string_view s) {
  return lookup(kMemory, s);
}
std::optional<RegPath> parseRegPath(std::string_view s) {
  return lookup(kRegPaths, s);
}
std::optional<TransportKind> parseTransportKind(std::string_view s) {
  return lookup(kTransports, s);
}
std::optional<TestStatus> parseTestStatus(std::string_view s) {
  return lookup(kStatuses, s);
}

bool isGpuDirect(TransportKind transport, MemoryKind memory, RegPath path) {
  return transport == TransportKind::kVerbs && memory == MemoryKind::kCuda &&
         (path == RegPath::kDmabuf || path == RegPath::kPeermem);
}

}  // namespace gdrmesh
