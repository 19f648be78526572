// The memory vocabulary of one side ("host", "cuda", "cuda:N") and the rule that combines
// --memory, --src-memory, --dst-memory, --gpu and --reg (spelled as a config would).
#include "common/pair_spec.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

namespace gdrmesh {
namespace {

TEST(MemoryChoice, ParsesHostCudaAndCudaN) {
  auto h = parseMemoryChoice("host", "f");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->kind, MemoryKind::kHost);
  EXPECT_EQ(h->gpu, -1);
  auto c = parseMemoryChoice("cuda", "f");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->kind, MemoryKind::kCuda);
  EXPECT_EQ(c->gpu, -1);
  auto n = parseMemoryChoice("cuda:7", "f");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->gpu, 7);
  for (const char* bad :
       {"", "gpu", "cuda:", "cuda:-1", "cuda:1x", "host:0", "cuda:99999", "CUDA"}) {
    auto r = parseMemoryChoice(bad, "--dst-memory");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().message().rfind("--dst-memory: ", 0), 0u) << r.status().message();
    EXPECT_NE(r.status().fix().find("cuda:N"), std::string::npos);
  }
  EXPECT_EQ(memoryText(MemoryKind::kHost, -1), "host");
  EXPECT_EQ(memoryText(MemoryKind::kCuda, -1), "cuda:0");
  EXPECT_EQ(memoryText(MemoryKind::kCuda, 3), "cuda:3");
}

TEST(MemoryOptions, NamesAreThoseOfTheCaller) {
  MemoryOptionNames yaml{"memory", "src_memory", "dst_memory", "gpu", "reg", ": "};
  MemoryOptions o;
  o.both = "cuda";
  o.dst = "cuda:1";
  PairTestSpec s;
  Status st = applyMemoryOptions(o, yaml, &s);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message().rfind("dst_memory: cannot be combined with memory", 0), 0u)
      << st.toString();
  EXPECT_NE(st.fix().find("src_memory: host dst_memory: cuda:0"), std::string::npos) << st.fix();
}

// The one registration-path rule: which paths suit which memory, and what `auto` becomes.
TEST(RegPathRule, EachPathSuitsItsMemory) {
  const MemoryKind host = MemoryKind::kHost, cuda = MemoryKind::kCuda;
  EXPECT_EQ(*resolveRegPath(host, RegPath::kAuto, "f"), RegPath::kHost);
  EXPECT_EQ(*resolveRegPath(host, RegPath::kHost, "f"), RegPath::kHost);
  EXPECT_EQ(*resolveRegPath(cuda, RegPath::kAuto, "f"), RegPath::kAuto);  // the transport picks
  for (RegPath gpu_path : {RegPath::kDmabuf, RegPath::kPeermem, RegPath::kStaged}) {
    EXPECT_EQ(*resolveRegPath(cuda, gpu_path, "f"), gpu_path);
    auto r = resolveRegPath(host, gpu_path, "--src-reg");
    ASSERT_FALSE(r.ok()) << toString(gpu_path);
    EXPECT_EQ(r.status().message().rfind("--src-reg: ", 0), 0u) << r.status().toString();
    EXPECT_NE(r.status().message().find("GPU memory only"), std::string::npos);
  }
  auto r = resolveRegPath(cuda, RegPath::kHost, "target");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("does not apply to GPU memory"), std::string::npos);
  EXPECT_EQ(effectiveRegPath(host, RegPath::kAuto), RegPath::kHost);
  EXPECT_EQ(effectiveRegPath(cuda, RegPath::kAuto), RegPath::kAuto);
}

// The coordinator's check is the same rule: a request from the wire with host registration on a
// GPU side, or a GPU path on a host side, is refused before any worker is asked.
TEST(RegPathRule, ValidatePairTestSpecAppliesIt) {
  PairTestSpec s;
  s.initiator.worker = "a";
  s.target.worker = "b";
  ASSERT_TRUE(validatePairTestSpec(s, PairTestLimits{}).ok());
  s.target.memory = MemoryKind::kCuda;
  s.target.reg = RegPath::kHost;
  EXPECT_FALSE(validatePairTestSpec(s, PairTestLimits{}).ok());
  s.target.reg = RegPath::kDmabuf;
  EXPECT_TRUE(validatePairTestSpec(s, PairTestLimits{}).ok());
  s.initiator.reg = RegPath::kStaged;  // host memory
  const Status st = validatePairTestSpec(s, PairTestLimits{});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message().rfind("initiator: ", 0), 0u) << st.toString();
}

TEST(MemoryOptions, PerSideRegistrationNamesAreThoseOfTheCaller) {
  MemoryOptionNames yaml{"memory", "src_memory", "dst_memory", "gpu",
                         "reg",    ": ",         "src_reg",    "dst_reg"};
  MemoryOptions o;
  o.both = "cuda";
  o.reg = "dmabuf";
  o.dst_reg = "staged";
  PairTestSpec s;
  Status st = applyMemoryOptions(o, yaml, &s);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message().rfind("dst_reg: cannot be combined with reg", 0), 0u) << st.toString();
  o.reg.clear();
  ASSERT_TRUE(applyMemoryOptions(o, yaml, &s).ok());
  EXPECT_EQ(s.initiator.reg, RegPath::kAuto);
  EXPECT_EQ(s.target.reg, RegPath::kStaged);
}

TEST(MemoryOptions, NothingGivenIsHostOnBothSides) {
  PairTestSpec s;
  s.initiator.memory = s.target.memory = MemoryKind::kCuda;  // overwritten
  ASSERT_TRUE(applyMemoryOptions(MemoryOptions{}, MemoryOptionNames{}, &s).ok());
  for (const auto* side : {&s.initiator, &s.target}) {
    EXPECT_EQ(side->memory, MemoryKind::kHost);
    EXPECT_EQ(side->gpu, -1);
    EXPECT_EQ(side->reg, RegPath::kHost);
  }
}

// The options a chosen transport cannot honour, read from its capabilities (one statement of
// what each transport accepts).
TEST(TransportOptions, RefusedWhereTheCapabilitiesSayNo) {
  struct Case {
    const char* flag;
    void (*set)(PairTestSpec&);
    bool emulated, simulated;  // refused by
  };
  const Case cases[] = {
      {"--rdma-cm", [](PairTestSpec& s) { s.use_rdma_cm = true; }, true, true},
      {"--gid-index", [](PairTestSpec& s) { s.gid_index = 1; }, true, true},
      {"--inline", [](PairTestSpec& s) { s.inline_size = 64; }, true, true},
      {"--bidir", [](PairTestSpec& s) { s.bidirectional = true; }, true, false},
  };
  for (const Case& c : cases) {
    PairTestSpec s;
    c.set(s);
    EXPECT_TRUE(checkTransportOptions(s, TransportKind::kVerbs).ok()) << c.flag;
    Status e = checkTransportOptions(s, TransportKind::kEmulated);
    EXPECT_EQ(!e.ok(), c.emulated) << c.flag;
    if (!e.ok()) {
      EXPECT_EQ(e.message(), std::string(c.flag) + ": not supported by the emulated transport");
    }
    EXPECT_EQ(!checkTransportOptions(s, TransportKind::kSimulated).ok(), c.simulated) << c.flag;
  }
  EXPECT_TRUE(checkTransportOptions(PairTestSpec{}, TransportKind::kEmulated).ok());
}

// Doubles come from the wire: NaN (and infinities) must be refused, not slip past `< 0 || > max`
// (seen while writing the request fuzz harness's invariant, tests/fuzz/request).
TEST(ValidatePairTestSpec, NanOrInfiniteDurationAndTimeoutAreRefused) {
  PairTestSpec spec;
  spec.initiator.worker = "a";
  spec.target.worker = "b";
  ASSERT_TRUE(validatePairTestSpec(spec, PairTestLimits{}).ok());
  for (double bad : {std::numeric_limits<double>::quiet_NaN(),
                     std::numeric_limits<double>::infinity(), -1.0, 86401.0}) {
    PairTestSpec d = spec;
    d.duration_seconds = bad;
    Status st = validatePairTestSpec(d, PairTestLimits{});
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(st.message().find("duration"), std::string::npos) << st.message();
    PairTestSpec t = spec;
    t.timeout_seconds = bad;
    st = validatePairTestSpec(t, PairTestLimits{});
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(st.message().find("timeout"), std::string::npos) << st.message();
  }
}

TEST(ValidatePairTestSpec, CqModerationAboveTheTxDepthLimitIsRefused) {
  PairTestSpec spec;
  spec.initiator.worker = "a";
  spec.target.worker = "b";
  spec.cq_moderation = PairTestLimits{}.max_tx_depth;
  EXPECT_TRUE(validatePairTestSpec(spec, PairTestLimits{}).ok());
  spec.cq_moderation += 1;
  Status st = validatePairTestSpec(spec, PairTestLimits{});
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_EQ(st.message().rfind("cq-mod: ", 0), 0u) << st.message();
}

// The worker's own check of what its coordinator sends (defence in depth).
SideSpec goodSide() {
  SideSpec s;
  s.endpoint.test_id = "t-1";
  s.endpoint.buffer_size = 64 * 1024;
  return s;
}

TEST(ValidateSideSpec, AcceptsWhatAValidTestDerivesAndNamesTheFieldOfEachRefusal) {
  const PairTestLimits lim;
  EXPECT_TRUE(validateSideSpec(goodSide(), lim).ok());
  SideSpec big = goodSide();
  big.endpoint.buffer_size = 2 * lim.max_message_size;  // a bidirectional run of the largest size
  EXPECT_TRUE(validateSideSpec(big, lim).ok());
  struct Case {
    const char* field;
    void (*mutate)(SideSpec&);
  };
  const Case cases[] = {
      {"test_id", [](SideSpec& s) { s.endpoint.test_id.clear(); }},
      {"test_id", [](SideSpec& s) { s.endpoint.test_id.assign(257, 'x'); }},
      {"buffer_size", [](SideSpec& s) { s.endpoint.buffer_size = 0; }},
      {"buffer_size", [](SideSpec& s) { s.endpoint.buffer_size = 1ULL << 60; }},
      {"num_qps", [](SideSpec& s) { s.endpoint.num_qps = 0; }},
      {"num_qps", [](SideSpec& s) { s.endpoint.num_qps = 1'000'000; }},
      {"tx_depth", [](SideSpec& s) { s.endpoint.tx_depth = 0; }},
      {"rx_depth", [](SideSpec& s) { s.endpoint.rx_depth = 1u << 30; }},
      {"inline_size", [](SideSpec& s) { s.endpoint.inline_size = 1u << 20; }},
      {"gpu",
       [](SideSpec& s) {
         s.memory = MemoryKind::kCuda;
         s.gpu = -1;
       }},
      {"gpu",
       [](SideSpec& s) {
         s.memory = MemoryKind::kCuda;
         s.gpu = 5000;
       }},
  };
  for (const Case& c : cases) {
    SideSpec s = goodSide();
    c.mutate(s);
    Status st = validateSideSpec(s, lim);
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << c.field;
    EXPECT_EQ(st.message().rfind(std::string(c.field) + ": ", 0), 0u) << st.message();
  }
}

TEST(ValidateRunSpec, RefusesSizesCountsAndNonFiniteTimes) {
  const PairTestLimits lim;
  RunSpec ok;
  ok.message_size = 4096;
  EXPECT_TRUE(validateRunSpec(ok, lim).ok());
  ok.timeout_seconds = 2 * lim.max_seconds;  // the longest test's timeout plus its duration
  ok.duration_seconds = lim.max_seconds;
  EXPECT_TRUE(validateRunSpec(ok, lim).ok());
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  struct Case {
    const char* field;
    RunSpec r;
  };
  std::vector<Case> cases;
  auto add = [&](const char* f, auto mutate) {
    RunSpec r;
    r.message_size = 4096;
    mutate(r);
    cases.push_back({f, r});
  };
  add("message_size", [](RunSpec& r) { r.message_size = 0; });
  add("message_size", [&](RunSpec& r) { r.message_size = lim.max_message_size + 1; });
  add("iterations", [&](RunSpec& r) { r.iterations = lim.max_iterations + 1; });
  add("warmup_iterations",
      [&](RunSpec& r) { r.warmup_iterations = lim.max_warmup_iterations + 1; });
  add("cq_moderation", [&](RunSpec& r) { r.cq_moderation = lim.max_tx_depth + 1; });
  add("duration_seconds", [&](RunSpec& r) { r.duration_seconds = nan; });
  add("duration_seconds", [&](RunSpec& r) { r.duration_seconds = -1; });
  add("timeout_seconds", [&](RunSpec& r) { r.timeout_seconds = nan; });
  add("timeout_seconds", [&](RunSpec& r) { r.timeout_seconds = inf; });
  for (const Case& c : cases) {
    Status st = validateRunSpec(c.r, lim);
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << c.field;
    EXPECT_EQ(st.message().rfind(std::string(c.field) + ": ", 0), 0u) << st.message();
  }
}

}  // namespace
}  // namespace gdrmesh
