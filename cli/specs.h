// Command-line arguments -> requests. The test options are defined once and shared by
// `gdrmesh test` and `gdrmesh sweep run`: addTestOptions() declares them, toPairTestSpec()
// reads them. Pure functions (no RPC, no files) so they are unit-tested.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/pair_spec.h"
#include "common/status.h"
#include "common/units.h"
#include "gdrmesh/v1/gdrmesh.pb.h"

namespace gdrmesh::cli {

namespace pb = ::gdrmesh::v1;

// The options of one pair test, as typed. Defaults are those of common/pair_spec.h.
struct TestOptions {
  std::string op = "write";
  std::string mode = "bw";
  std::string size = formatSize(kDefaultMessageSize);  // "64KiB"
  uint64_t iters = kDefaultIterations;
  uint64_t warmup = kDefaultWarmupIterations;
  uint32_t qps = kDefaultNumQps;
  uint32_t tx_depth = kDefaultTxDepth;
  std::string transport = "auto";
  std::string memory;      // both sides; "" = not given (host unless a side says otherwise)
  std::string src_memory;  // SRC (initiator) side
  std::string dst_memory;  // DST (target) side
  int gpu = -1;
  std::string reg = "auto";
  std::string src_reg;  // SRC side only; "" = --reg
  std::string dst_reg;  // DST side only; "" = --reg
  int gid_index = -1;
  bool rdma_cm = false;
  double timeout = 0;
  std::string duration;
  uint32_t inline_size = 0;
  bool bidir = false;
  uint32_t cq_mod = 0;
  std::string run_id;
  uint64_t corrupt_bytes = 0;    // test only (hidden flag)
  bool invalidate_rkey = false;  // test only (hidden flag)
};

// Declares --op --mode --size --iters --warmup --qps --tx-depth --transport --memory
// --src-memory --dst-memory --gpu --reg --src-reg --dst-reg --gid-index --rdma-cm --timeout
// --duration --inline --bidir --cq-mod --run-id and the hidden fault-injection flags on `cmd`.
void addTestOptions(CLI::App* cmd, TestOptions* t);

// The test template: everything but the worker names and NICs (left empty). Errors name the
// flag and the fix.
Result<PairTestSpec> toPairTestSpec(const TestOptions& t);

// "worker" or "worker/device" into a selector's worker and device. Error when the worker is
// empty; `field` names the argument ("SRC").
Status parseEndpoint(const std::string& text, const std::string& field, EndpointSelector* out);

// `--sweep` of `gdrmesh test` and `--sweep-sizes` of `gdrmesh sweep run`: powers of two over
// MIN..MAX; "" or "default" = 2 B .. 8 MiB (perftest -a).
Result<std::vector<uint64_t>> parseSizeRange(const std::string& spec, const std::string& flag);
// "4KiB,1MiB" (also accepts a list already split by CLI11).
Result<std::vector<uint64_t>> parseSizeList(const std::vector<std::string>& items,
                                            const std::string& flag);

// The options of `gdrmesh sweep run` besides the test options.
struct SweepArgs {
  std::string pattern;
  std::vector<std::string> pairs;  // positional SRC:DST
  std::string pairs_file;          // path; its text is passed to buildSweepSpec
  std::string direction = "one";
  std::optional<uint32_t> rounds;  // unset = the coordinator's default (3); 0 is refused
  uint64_t seed = 0;               // 0 = chosen by the coordinator and recorded
  std::vector<std::string> hosts;
  std::vector<std::string> exclude;
  std::vector<std::string> select;
  std::vector<std::string> sizes;
  std::string sweep_sizes;
  uint32_t max_concurrency = 0;
  uint32_t retries = 1;
  std::string config;  // path; its text is passed to buildSweepSpec
  std::string baseline;
  bool no_localise = false;
  bool queue = false;
  std::string name;
  bool detach = false;
};

// The lines of a --pairs-file: "SRC:DST" or "SRC DST" per line, '#' starts a comment.
// Errors name the file and line.
Result<std::vector<std::string>> parsePairsFile(const std::string& text, const std::string& path);

// Builds the StartSweep request. `pairs_file_text` and `config_text` are the contents of
// --pairs-file and --config ("" when not given).
Result<pb::SweepSpec> buildSweepSpec(const SweepArgs& a, const TestOptions& t,
                                     const std::string& pairs_file_text,
                                     const std::string& config_text);

// `gdrmesh test SRC DST --sweep ...` as a coordinator sweep: pattern `pairs`, one pair, the
// size list, no localisation.
pb::SweepSpec singlePairSweep(const std::string& src, const std::string& dst,
                              const pb::RunTestRequest& test, const std::vector<uint64_t>& sizes);

}  // namespace gdrmesh::cli
