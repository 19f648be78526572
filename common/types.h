// Domain vocabulary shared by the worker, the coordinator and the CLI.
// Every enum has a stable lower-case name used in JSON, SQLite rows and CLI flags.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gdrmesh {

// RDMA operation measured by a test.
enum class Op { kWrite, kRead, kSend, kWriteImm };
// What is measured: streaming bandwidth or ping-pong latency (RTT/2, as perftest).
enum class Mode { kBandwidth, kLatency };
// Where the test buffer lives.
enum class MemoryKind { kHost, kCuda };
// How the buffer was made visible to the NIC. kHost: plain ibv_reg_mr on host memory (or the
// emulated transport on host memory). kDmabuf/kPeermem: GPUDirect. kStaged: the NIC works on a
// pinned host mirror and the worker copies to/from the GPU (never GPUDirect).
// kAuto is a request only (dmabuf, then peermem); results always hold the path that ran.
enum class RegPath { kAuto, kHost, kDmabuf, kPeermem, kStaged };
// Which engine moved the bytes. kEmulated is worker-to-worker TCP: never RDMA. kSimulated is a
// simulated worker (`gdrmesh worker --simulate N`): no bytes move at all; its figures are
// configured, for scale tests of the coordinator. Neither can ever pass as RDMA or GPUDirect.
enum class TransportKind { kEmulated, kVerbs, kSimulated };
enum class TestStatus { kPassed, kFailed, kSkipped, kError };
// Side of a pair test. The initiator posts the operations; the target owns the remote region.
enum class Role { kInitiator, kTarget };

const char* toString(Op v);
const char* toString(Mode v);
const char* toString(MemoryKind v);
const char* toString(RegPath v);
const char* toString(TransportKind v);
const char* toString(TestStatus v);
const char* toString(Role v);

std::optional<Op> parseOp(std::string_view s);
std::optional<Mode> parseMode(std::string_view s);
std::optional<MemoryKind> parseMemoryKind(std::string_view s);
std::optional<RegPath> parseRegPath(std::string_view s);
std::optional<TransportKind> parseTransportKind(std::string_view s);
std::optional<TestStatus> parseTestStatus(std::string_view s);

// True when the data path of ONE SIDE is GPUDirect RDMA: a real RDMA transport moving GPU
// memory registered through dma-buf or peermem. Staged and emulated never are.
bool isGpuDirect(TransportKind transport, MemoryKind memory, RegPath path);

// The claim for a whole test, from its two sides (the one rule; TestResult::gpudirect() adds
// "and it passed"): at least one side is on GPU memory, and EVERY side on GPU memory is
// GPUDirect. Host -> GPU with dma-buf on the GPU side is GPUDirect (on that side); GPU (dmabuf)
// -> GPU (staged) is not, since one GPU side went through a host mirror.
bool isGpuDirectTest(TransportKind transport, MemoryKind initiator_memory, RegPath initiator_path,
                     MemoryKind target_memory, RegPath target_path);

}  // namespace gdrmesh
