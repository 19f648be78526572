#include "cli/specs.h"

#include <algorithm>
#include <sstream>

#include "common/units.h"
#include "convert.h"

namespace gdrmesh::cli {
namespace {

// The coordinator's bound on random matchings (SweepLimits::random_rounds, and the config's
// `rounds`): refused here already, so the message names the flag.
constexpr uint32_t kMaxRandomRounds = 100000;

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// "SRC:DST" with SRC and DST each WORKER or WORKER/DEVICE.
Status checkPair(const std::string& pair, const std::string& where) {
  auto colon = pair.find(':');
  if (colon == std::string::npos || pair.find(':', colon + 1) != std::string::npos) {
    return invalidArgument(where + ": '" + pair + "' is not SRC:DST",
                           "write each pair as WORKER[/NIC]:WORKER[/NIC], e.g. h1:h2/mlx5_0");
  }
  EndpointSelector s;
  GDR_RETURN_IF_ERROR(parseEndpoint(pair.substr(0, colon), where + " SRC", &s));
  GDR_RETURN_IF_ERROR(parseEndpoint(pair.substr(colon + 1), where + " DST", &s));
  return {};
}

Status checkNames(const std::vector<std::string>& names, const std::string& flag) {
  for (const auto& n : names) {
    if (trim(n).empty()) {
      return invalidArgument(flag + ": empty worker name", "e.g. " + flag + " h1,h2");
    }
  }
  return {};
}

}  // namespace

void addTestOptions(CLI::App* cmd, TestOptions* t) {
  cmd->add_option("--op", t->op, "write | read | send | write_imm")->capture_default_str();
  cmd->add_option("--mode", t->mode, "bw (bandwidth) | lat (latency)")->capture_default_str();
  cmd->add_option("--size", t->size, "message size: bytes or 64KiB, 1MiB, ...")
      ->capture_default_str();
  cmd->add_option("--iters", t->iters, "measured iterations")->capture_default_str();
  cmd->add_option("--warmup", t->warmup, "warm-up iterations (not measured)")
      ->capture_default_str();
  cmd->add_option("--qps", t->qps, "queue pairs")->capture_default_str();
  cmd->add_option("--tx-depth", t->tx_depth, "outstanding operations per QP")
      ->capture_default_str();
  cmd->add_option("--transport", t->transport, "auto | verbs | emulated")->capture_default_str();
  cmd->add_option("--memory", t->memory, "host | cuda | cuda:N, both sides (default host)");
  cmd->add_option("--src-memory", t->src_memory, "host | cuda | cuda:N, SRC side only");
  cmd->add_option("--dst-memory", t->dst_memory, "host | cuda | cuda:N, DST side only");
  cmd->add_option("--gpu", t->gpu, "GPU index of every cuda side that names none (default 0)");
  cmd->add_option("--reg", t->reg, "auto | host | dmabuf | peermem | staged, sides on cuda memory")
      ->capture_default_str();
  cmd->add_option("--src-reg", t->src_reg, "registration path of the SRC side only (as --reg)");
  cmd->add_option("--dst-reg", t->dst_reg, "registration path of the DST side only (as --reg)");
  cmd->add_option("--gid-index", t->gid_index, "RoCE GID index (-1: automatic)");
  cmd->add_flag("--rdma-cm", t->rdma_cm, "connect with librdmacm instead of the OOB exchange");
  cmd->add_option("--timeout", t->timeout,
                  "seconds before a run is abandoned (0: " +
                      std::to_string(static_cast<int>(kDefaultRunTimeoutSeconds)) + ")");
  cmd->add_option("--run-id", t->run_id, "group results under a run id");
  cmd->add_option("--duration", t->duration, "run for this long (30s, 2m) instead of --iters");
  cmd->add_option("--inline", t->inline_size, "max inline data in bytes (verbs)");
  cmd->add_flag("--bidir", t->bidir, "both sides send at once (bandwidth, verbs)");
  cmd->add_option("--cq-mod", t->cq_mod, "signal every Nth send (0: transport default)");
  cmd->add_option("--inject-corrupt-bytes", t->corrupt_bytes,
                  "TEST ONLY: flip N landed bytes (worker needs --allow-fault-injection)")
      ->group("");
  cmd->add_flag("--inject-invalidate-rkey", t->invalidate_rkey,
                "TEST ONLY: the target revokes remote access after connect")
      ->group("");
}

Result<PairTestSpec> toPairTestSpec(const TestOptions& t) {
  PairTestSpec s;
  auto op = parseOp(t.op);
  if (!op) {
    return invalidArgument("--op: '" + t.op + "' is not one of write, read, send, write_imm");
  }
  s.op = *op;
  auto mode = parseMode(t.mode);
  if (!mode) return invalidArgument("--mode: '" + t.mode + "' is not one of bw, lat");
  s.mode = *mode;
  GDR_ASSIGN_OR_RETURN(s.message_size, parseSize(t.size, "--size"));
  if (s.message_size == 0) return invalidArgument("--size: must be > 0", "e.g. --size 64KiB");
  if (t.iters == 0) return invalidArgument("--iters: must be > 0", "e.g. --iters 1000");
  s.iterations = t.iters;
  s.warmup_iterations = t.warmup;
  if (t.qps == 0) return invalidArgument("--qps: must be > 0", "e.g. --qps 1");
  s.num_qps = t.qps;
  if (t.tx_depth == 0) {
    return invalidArgument("--tx-depth: must be > 0",
                           "e.g. --tx-depth " + std::to_string(kDefaultTxDepth));
  }
  s.tx_depth = t.tx_depth;
  if (t.transport != "auto") {
    auto tr = parseTransportKind(t.transport);
    if (!tr || *tr == TransportKind::kSimulated) {
      return invalidArgument("--transport: '" + t.transport +
                             "' is not one of auto, emulated, verbs");
    }
    s.transport = *tr;
  }
  s.gid_index = t.gid_index;
  s.use_rdma_cm = t.rdma_cm;
  if (t.timeout < 0) return invalidArgument("--timeout: must be >= 0 seconds");
  s.timeout_seconds = t.timeout;
  if (!t.duration.empty()) {
    GDR_ASSIGN_OR_RETURN(s.duration_seconds, parseDurationSeconds(t.duration, "--duration"));
  }
  s.inline_size = t.inline_size;
  s.bidirectional = t.bidir;
  s.cq_moderation = t.cq_mod;
  s.run_id = t.run_id;
  s.fault.corrupt_bytes = t.corrupt_bytes;
  s.fault.invalidate_remote_key = t.invalidate_rkey;

  MemoryOptions mem;
  mem.both = t.memory;
  mem.src = t.src_memory;
  mem.dst = t.dst_memory;
  mem.gpu = t.gpu;
  // --reg's default ("auto", shown in --help) is not a choice: --src-reg/--dst-reg may replace it.
  mem.reg = t.reg == "auto" ? "" : t.reg;
  mem.src_reg = t.src_reg;
  mem.dst_reg = t.dst_reg;
  GDR_RETURN_IF_ERROR(applyMemoryOptions(mem, MemoryOptionNames{}, &s));
  return s;
}

Status parseEndpoint(const std::string& text, const std::string& field, EndpointSelector* out) {
  auto slash = text.find('/');
  out->worker = text.substr(0, slash);
  out->device = slash == std::string::npos ? "" : text.substr(slash + 1);
  if (out->worker.empty()) {
    return invalidArgument(field + ": empty worker name in '" + text + "'",
                           "write WORKER or WORKER/NIC; `gdrmesh workers` lists them");
  }
  if (slash != std::string::npos && out->device.empty()) {
    return invalidArgument(field + ": empty NIC name in '" + text + "'",
                           "write WORKER or WORKER/NIC, e.g. h1/mlx5_0");
  }
  return {};
}

Result<std::vector<uint64_t>> parseSizeRange(const std::string& spec, const std::string& flag) {
  uint64_t lo = 2, hi = 8ULL << 20;
  if (!spec.empty() && spec != "default") {
    auto dots = spec.find("..");
    if (dots == std::string::npos) {
      return invalidArgument(flag + ": '" + spec + "' is not MIN..MAX",
                             "e.g. " + flag + " 4KiB..1MiB");
    }
    GDR_ASSIGN_OR_RETURN(lo, parseSize(spec.substr(0, dots), flag + " MIN"));
    GDR_ASSIGN_OR_RETURN(hi, parseSize(spec.substr(dots + 2), flag + " MAX"));
    if (lo == 0 || lo > hi) {
      return invalidArgument(flag + ": need 0 < MIN <= MAX", "e.g. " + flag + " 4KiB..1MiB");
    }
  }
  std::vector<uint64_t> out;
  for (uint64_t s = lo; s <= hi; s *= 2) out.push_back(s);
  return out;
}

Result<std::vector<uint64_t>> parseSizeList(const std::vector<std::string>& items,
                                            const std::string& flag) {
  std::vector<uint64_t> out;
  for (const auto& item : items) {
    std::stringstream ss(item);
    std::string one;
    while (std::getline(ss, one, ',')) {
      one = trim(one);
      if (one.empty()) {
        return invalidArgument(flag + ": empty size in '" + item + "'",
                               "e.g. " + flag + " 4KiB,1MiB");
      }
      GDR_ASSIGN_OR_RETURN(uint64_t v, parseSize(one, flag));
      if (v == 0) return invalidArgument(flag + ": sizes must be > 0");
      out.push_back(v);
    }
  }
  if (out.empty()) return invalidArgument(flag + ": no sizes given", "e.g. " + flag + " 4KiB,1MiB");
  return out;
}

Result<std::vector<std::string>> parsePairsFile(const std::string& text, const std::string& path) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string line;
  int n = 0;
  while (std::getline(ss, line)) {
    ++n;
    auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    line = trim(line);
    if (line.empty()) continue;
    std::stringstream words(line);
    std::string a, b, extra;
    words >> a >> b >> extra;
    std::string pair = b.empty() ? a : a + ":" + b;
    std::string where = "--pairs-file " + path + ":" + std::to_string(n);
    if (!extra.empty() ||
        (!b.empty() && (a.find(':') != std::string::npos || b.find(':') != std::string::npos))) {
      return invalidArgument(where + ": '" + line + "' is not one pair",
                             "one pair per line: SRC:DST or SRC DST");
    }
    GDR_RETURN_IF_ERROR(checkPair(pair, where));
    out.push_back(pair);
  }
  return out;
}

namespace {

// --pattern: one of the planner's patterns.
Status checkSweepPattern(const std::string& pattern) {
  static const std::vector<std::string> kPatterns{"pairs",  "all-pairs", "rails",    "loopback",
                                                  "random", "cover",     "bisection"};
  if (std::find(kPatterns.begin(), kPatterns.end(), pattern) == kPatterns.end()) {
    return invalidArgument(
        "--pattern: '" + pattern +
            "' is not one of pairs, all-pairs, rails, loopback, random, cover, bisection",
        "e.g. --pattern all-pairs");
  }
  return Status();
}

// PAIRS and --pairs-file: given exactly when the pattern is `pairs`.
Status addSweepPairs(const SweepArgs& a, const std::string& pairs_file_text, pb::SweepSpec* spec) {
  std::vector<std::string> pairs;
  for (const auto& p : a.pairs) {
    GDR_RETURN_IF_ERROR(checkPair(p, "PAIRS"));
    pairs.push_back(p);
  }
  if (!a.pairs_file.empty()) {
    GDR_ASSIGN_OR_RETURN(auto from_file, parsePairsFile(pairs_file_text, a.pairs_file));
    pairs.insert(pairs.end(), from_file.begin(), from_file.end());
  }
  if (a.pattern == "pairs" && pairs.empty()) {
    return invalidArgument("--pattern pairs: no pairs given",
                           "list them as SRC:DST arguments or in --pairs-file FILE");
  }
  if (a.pattern != "pairs" && !pairs.empty()) {
    return invalidArgument("PAIRS/--pairs-file: only used by --pattern pairs",
                           "drop them, or use --pattern pairs");
  }
  for (const auto& p : pairs) spec->add_pairs(p);
  return Status();
}

// --direction, and --rounds/--seed of --pattern random.
Status addSweepDirectionAndRounds(const SweepArgs& a, const TestOptions& t, pb::SweepSpec* spec) {
  if (a.direction != "one" && a.direction != "both" && a.direction != "bidir") {
    return invalidArgument("--direction: '" + a.direction + "' is not one of one, both, bidir",
                           "one: A->B; both: A->B and B->A; bidir: one bidirectional test");
  }
  if (a.direction == "bidir" && t.mode == "lat") {
    return invalidArgument("--direction bidir: applies to bandwidth tests",
                           "use --direction both with --mode lat");
  }
  spec->set_direction(a.direction);
  if (a.pattern != "random" && (a.rounds || a.seed != 0)) {
    return invalidArgument("--rounds/--seed: only used by --pattern random",
                           "drop them, or use --pattern random");
  }
  if (a.rounds) {
    if (*a.rounds < 1 || *a.rounds > kMaxRandomRounds) {
      return invalidArgument("--rounds: " + std::to_string(*a.rounds) + " is out of range 1.." +
                                 std::to_string(kMaxRandomRounds),
                             "give the number of random matchings, or leave --rounds out for 3");
    }
    spec->set_random_rounds(*a.rounds);
  }
  spec->set_seed(a.seed);
  return Status();
}

// Which workers take part: --hosts, --exclude (never one of --hosts) and --select KEY=VALUE.
Status addSweepWorkers(const SweepArgs& a, pb::SweepSpec* spec) {
  GDR_RETURN_IF_ERROR(checkNames(a.hosts, "--hosts"));
  GDR_RETURN_IF_ERROR(checkNames(a.exclude, "--exclude"));
  for (const auto& h : a.hosts) spec->add_hosts(trim(h));
  // Compared as sent, trimmed: `--hosts "a, b" --exclude b` names b in both.
  for (const auto& raw : a.exclude) {
    const std::string h = trim(raw);
    if (std::find(spec->hosts().begin(), spec->hosts().end(), h) != spec->hosts().end()) {
      return invalidArgument("--exclude: '" + h + "' is also in --hosts", "keep it in one list");
    }
    spec->add_exclude(h);
  }
  for (const auto& sel : a.select) {
    auto eq = sel.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == sel.size()) {
      return invalidArgument("--select: '" + sel + "' is not KEY=VALUE",
                             "e.g. --select rack=r12 (labels come from `gdrmesh worker --label`)");
    }
    spec->add_select(sel);
  }
  return Status();
}

// The test template every pair runs (no worker named: the pattern chooses them), and the
// message sizes of --sizes or --sweep-sizes.
Status addSweepTest(const SweepArgs& a, const TestOptions& t, pb::SweepSpec* spec) {
  GDR_ASSIGN_OR_RETURN(PairTestSpec test, toPairTestSpec(t));
  if (!a.sizes.empty() && !a.sweep_sizes.empty()) {
    return invalidArgument("--sizes and --sweep-sizes: give one of them");
  }
  std::vector<uint64_t> sizes;
  if (!a.sizes.empty()) {
    GDR_ASSIGN_OR_RETURN(sizes, parseSizeList(a.sizes, "--sizes"));
  } else if (!a.sweep_sizes.empty()) {
    GDR_ASSIGN_OR_RETURN(sizes, parseSizeRange(a.sweep_sizes, "--sweep-sizes"));
  }
  convert::toProto(test, spec->mutable_test());
  spec->mutable_test()->mutable_initiator()->clear_worker();
  spec->mutable_test()->mutable_target()->clear_worker();
  for (uint64_t s : sizes) spec->add_sizes(s);
  return Status();
}

}  // namespace

Result<pb::SweepSpec> buildSweepSpec(const SweepArgs& a, const TestOptions& t,
                                     const std::string& pairs_file_text,
                                     const std::string& config_text) {
  GDR_RETURN_IF_ERROR(checkSweepPattern(a.pattern));
  pb::SweepSpec spec;
  spec.set_pattern(a.pattern);
  GDR_RETURN_IF_ERROR(addSweepPairs(a, pairs_file_text, &spec));
  GDR_RETURN_IF_ERROR(addSweepDirectionAndRounds(a, t, &spec));
  GDR_RETURN_IF_ERROR(addSweepWorkers(a, &spec));
  GDR_RETURN_IF_ERROR(addSweepTest(a, t, &spec));
  spec.set_max_concurrency(a.max_concurrency);
  spec.set_retries(a.retries);
  spec.set_config_yaml(config_text);
  spec.set_name(a.name);
  spec.set_queue(a.queue);
  spec.set_localise(!a.no_localise);
  spec.set_baseline(a.baseline);
  return spec;
}

pb::SweepSpec singlePairSweep(const std::string& src, const std::string& dst,
                              const pb::RunTestRequest& test, const std::vector<uint64_t>& sizes) {
  pb::SweepSpec spec;
  spec.set_pattern("pairs");
  spec.add_pairs(src + ":" + dst);
  spec.set_direction("one");
  *spec.mutable_test() = test;
  spec.mutable_test()->mutable_initiator()->clear_worker();
  spec.mutable_test()->mutable_initiator()->clear_device();
  spec.mutable_test()->mutable_target()->clear_worker();
  spec.mutable_test()->mutable_target()->clear_device();
  for (uint64_t s : sizes) spec.add_sizes(s);
  spec.set_retries(0);
  spec.set_localise(false);
  spec.set_name("test --sweep " + src + " " + dst);
  return spec;
}

}  // namespace gdrmesh::cli
