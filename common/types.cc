#include "common/types.h"

#include <utility>

#include "common/enum_names.h"

namespace gdrmesh {
namespace {

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
  return enumName(kOps, v);
}
const char* toString(Mode v) {
  return enumName(kModes, v);
}
const char* toString(MemoryKind v) {
  return enumName(kMemory, v);
}
const char* toString(RegPath v) {
  return enumName(kRegPaths, v);
}
const char* toString(TransportKind v) {
  return enumName(kTransports, v);
}
const char* toString(TestStatus v) {
  return enumName(kStatuses, v);
}
const char* toString(Role v) {
  return enumName(kRoles, v);
}

std::optional<Op> parseOp(std::string_view s) {
  return enumFromName(kOps, s);
}
std::optional<Mode> parseMode(std::string_view s) {
  return enumFromName(kModes, s);
}
std::optional<MemoryKind> parseMemoryKind(std::string_view s) {
  return enumFromName(kMemory, s);
}
std::optional<RegPath> parseRegPath(std::string_view s) {
  return enumFromName(kRegPaths, s);
}
std::optional<TransportKind> parseTransportKind(std::string_view s) {
  return enumFromName(kTransports, s);
}
std::optional<TestStatus> parseTestStatus(std::string_view s) {
  return enumFromName(kStatuses, s);
}

bool isGpuDirect(TransportKind transport, MemoryKind memory, RegPath path) {
  return transport == TransportKind::kVerbs && memory == MemoryKind::kCuda &&
         (path == RegPath::kDmabuf || path == RegPath::kPeermem);
}

bool isGpuDirectTest(TransportKind transport, MemoryKind initiator_memory, RegPath initiator_path,
                     MemoryKind target_memory, RegPath target_path) {
  bool any_gpu = false;
  for (auto [memory, path] :
       {std::pair{initiator_memory, initiator_path}, std::pair{target_memory, target_path}}) {
    if (memory != MemoryKind::kCuda) continue;
    any_gpu = true;
    if (!isGpuDirect(transport, memory, path)) return false;
  }
  return any_gpu;
}

}  // namespace gdrmesh
