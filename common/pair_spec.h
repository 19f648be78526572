// The pair-test request, in domain terms: what the CLI asks for, what a sweep repeats for each
// pair, what the coordinator validates and turns into two SideSpecs. Defaults and the rules
// that need no inventory are defined here, once; proto/convert is the only translator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "common/endpoint.h"
#include "common/status.h"
#include "common/types.h"

namespace gdrmesh {

// One side of a pair test as asked for: a worker, optionally a NIC, and the memory to use.
struct EndpointSelector {
  std::string worker;
  std::string device;  // NIC; "" = automatic (the GPU's nearest NIC for GPU memory)
  MemoryKind memory = MemoryKind::kHost;
  int gpu = -1;                  // -1 = none (host) or GPU 0 (cuda)
  RegPath reg = RegPath::kAuto;  // kAuto on host memory means kHost
};

// Test-only faults, honoured only by workers started with --allow-fault-injection.
struct FaultInjection {
  uint64_t corrupt_bytes = 0;
  bool invalidate_remote_key = false;
};

inline constexpr uint64_t kDefaultMessageSize = uint64_t{64} * 1024;

struct PairTestSpec {
  EndpointSelector initiator;
  EndpointSelector target;
  Op op = Op::kWrite;
  Mode mode = Mode::kBandwidth;
  uint64_t message_size = kDefaultMessageSize;
  uint64_t iterations = kDefaultIterations;
  uint64_t warmup_iterations = kDefaultWarmupIterations;
  uint32_t num_qps = kDefaultNumQps;
  uint32_t tx_depth = kDefaultTxDepth;
  std::optional<TransportKind> transport;  // nullopt = the best both sides have
  int gid_index = -1;                      // -1 = automatic
  bool use_rdma_cm = false;
  uint32_t inline_size = 0;
  bool bidirectional = false;
  double duration_seconds = 0;  // > 0: run this long instead of `iterations`
  uint32_t cq_moderation = 0;   // 0 = transport default
  double timeout_seconds = 0;   // 0 = kDefaultRunTimeoutSeconds
  std::string run_id;
  FaultInjection fault;

  double runTimeoutSeconds() const {
    return (timeout_seconds > 0 ? timeout_seconds : kDefaultRunTimeoutSeconds) + duration_seconds;
  }
  // The side whose memory receives the data: the target, except for READ.
  bool initiatorIsDestination() const { return op == Op::kRead; }
};

// One side's memory as written on a command line or in a config: "host", "cuda" (GPU index
// not given) or "cuda:N".
struct MemoryChoice {
  MemoryKind kind = MemoryKind::kHost;
  int gpu = -1;  // -1 = not given
};
// `field` names the flag or key in the error ("--src-memory").
Result<MemoryChoice> parseMemoryChoice(const std::string& text, const std::string& field);
// "host", "cuda:1": the text parseMemoryChoice reads back (a cuda side's index defaults to 0).
std::string memoryText(MemoryKind kind, int gpu);

// The memory options of a test as given; "" / -1 = not given. How they combine (one rule for
// the CLI, sweep specs and the cluster config):
// - `both` (--memory) sets both sides; `src` / `dst` (--src-memory / --dst-memory) set one side
//   each (SRC is the initiator, DST the target). `both` with `src` or `dst` is refused, as
//   redundant or contradictory. A side given nothing uses host memory.
// - `gpu` (--gpu N) is the index of every cuda side that names none ("cuda" rather than
//   "cuda:N"); a side that names another index contradicts it and is refused; --gpu with no
//   side on cuda memory is refused. A cuda side with no index anywhere uses GPU 0.
// - `reg` (--reg) is the registration path of the sides on GPU memory; sides on host memory
//   register host memory. A GPU path (dmabuf, peermem, staged) with no side on cuda memory is
//   refused. `src_reg` / `dst_reg` (--src-reg / --dst-reg) set one side's path each (host -> GPU
//   over dmabuf, GPU -> host staged, ...); `reg` with either of them is refused, and a side's
//   own path must suit that side's memory (resolveRegPath).
struct MemoryOptions {
  std::string both;
  std::string src;
  std::string dst;
  int gpu = -1;
  std::string reg;      // "" = auto
  std::string src_reg;  // "" = `reg`
  std::string dst_reg;  // "" = `reg`
};
// How the options are spelled where they were given, for the errors.
struct MemoryOptionNames {
  std::string both = "--memory";
  std::string src = "--src-memory";
  std::string dst = "--dst-memory";
  std::string gpu = "--gpu";
  std::string reg = "--reg";
  std::string assign = " ";  // between a name and its value in the fixes: " " or ": "
  std::string src_reg = "--src-reg";
  std::string dst_reg = "--dst-reg";
};
// Sets spec->initiator's and spec->target's memory, gpu and reg from `o`. Errors name the
// options (as `names` spells them) and the fix.
Status applyMemoryOptions(const MemoryOptions& o, const MemoryOptionNames& names,
                          PairTestSpec* spec);

// The registration-path rule, stated once (the CLI, sweep specs and the cluster config through
// applyMemoryOptions, the coordinator through validatePairTestSpec, the worker when it
// prepares a side): host memory registers as `host` (`auto` means host there); GPU memory takes
// `auto` (the transport picks), `dmabuf`, `peermem` or `staged`, never `host`. Returns the path
// the side asks for (kHost for host memory); the error names `field` and the fix.
Result<RegPath> resolveRegPath(MemoryKind memory, RegPath requested, const std::string& field);
// resolveRegPath's answer for a request known to be valid: host memory's `auto` is `host`.
RegPath effectiveRegPath(MemoryKind memory, RegPath requested);

struct PairTestLimits {
  uint64_t max_message_size = 1ULL << 30;  // 1 GiB
  uint64_t max_iterations = 100'000'000;
  uint64_t max_warmup_iterations = 1'000'000;
  uint32_t max_qps = 64;
  uint32_t max_tx_depth = 8192;
  uint32_t max_inline = 4096;
  double max_seconds = 86400;
  // Worker side only (validateSideSpec): what the coordinator derives, never asked for.
  uint32_t max_rx_depth = 16384;
  size_t max_test_id = 256;
  int max_gpu_index = 1023;
};

// Rules that need no inventory: sizes, counts, combinations. The message names the field
// (as the CLI spells it) and the fix.
Status validatePairTestSpec(const PairTestSpec& spec, const PairTestLimits& limits);

// What a worker accepts from its coordinator for one side of a test and one run. The
// coordinator checked the whole test with validatePairTestSpec; a worker still refuses what no
// valid test can ask for (defence in depth against a confused or hostile peer of the control
// plane: a 2^60-byte buffer, 10^6 queue pairs, a NaN timeout). Errors name the field.
Status validateSideSpec(const SideSpec& side, const PairTestLimits& limits);
Status validateRunSpec(const RunSpec& run, const PairTestLimits& limits);

// Options a transport ignores, as a note for the record ("--inline ignored by emulated"), or
// a refusal: an option the chosen transport cannot honour is refused up front.
Status checkTransportOptions(const PairTestSpec& spec, TransportKind transport);

}  // namespace gdrmesh
