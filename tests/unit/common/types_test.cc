// Tests of common/types.h: stable names of the vocabulary and the GPUDirect rule.
#include "common/types.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "common/result.h"

namespace gdrmesh {
namespace {

template <typename E, typename Parse>
void expectRoundTrip(const std::vector<E>& all, Parse parse) {
  std::set<std::string> names;
  for (E v : all) {
    const std::string name = toString(v);
    EXPECT_NE(name, "unknown");
    EXPECT_FALSE(name.empty());
    names.insert(name);
    auto back = parse(name);
    ASSERT_TRUE(back.has_value()) << name;
    EXPECT_EQ(*back, v) << name;
  }
  EXPECT_EQ(names.size(), all.size()) << "two values share a name";
  EXPECT_FALSE(parse("").has_value());
  EXPECT_FALSE(parse("bogus").has_value());
}

TEST(TypesTest, EveryEnumRoundTrips) {
  expectRoundTrip<Op>({Op::kWrite, Op::kRead, Op::kSend, Op::kWriteImm}, parseOp);
  expectRoundTrip<Mode>({Mode::kBandwidth, Mode::kLatency}, parseMode);
  expectRoundTrip<MemoryKind>({MemoryKind::kHost, MemoryKind::kCuda}, parseMemoryKind);
  expectRoundTrip<RegPath>(
      {RegPath::kAuto, RegPath::kHost, RegPath::kDmabuf, RegPath::kPeermem, RegPath::kStaged},
      parseRegPath);
  expectRoundTrip<TransportKind>({TransportKind::kEmulated, TransportKind::kVerbs},
                                 parseTransportKind);
  expectRoundTrip<TestStatus>(
      {TestStatus::kPassed, TestStatus::kFailed, TestStatus::kSkipped, TestStatus::kError},
      parseTestStatus);
  // Role has no parse function in types.h; its names are still stable and distinct.
  EXPECT_STREQ(toString(Role::kInitiator), "initiator");
  EXPECT_STREQ(toString(Role::kTarget), "target");
}

TEST(TypesTest, StableNamesUsedInJsonRowsAndFlags) {
  EXPECT_STREQ(toString(Op::kWriteImm), "write_imm");
  EXPECT_STREQ(toString(Mode::kBandwidth), "bw");
  EXPECT_STREQ(toString(Mode::kLatency), "lat");
  EXPECT_STREQ(toString(RegPath::kStaged), "staged");
  EXPECT_STREQ(toString(TransportKind::kEmulated), "emulated");
  EXPECT_STREQ(toString(TestStatus::kPassed), "PASSED");
  EXPECT_STREQ(toString(TestStatus::kError), "ERROR");
}

TEST(TypesTest, ParsingIsExact) {
  EXPECT_FALSE(parseOp("WRITE").has_value());
  EXPECT_FALSE(parseOp("write ").has_value());
  EXPECT_FALSE(parseTestStatus("passed").has_value());
  EXPECT_FALSE(parseRegPath("dma-buf").has_value());
}

TEST(TypesTest, IsGpuDirectTruthTable) {
  const TransportKind transports[] = {TransportKind::kEmulated, TransportKind::kVerbs};
  const MemoryKind memories[] = {MemoryKind::kHost, MemoryKind::kCuda};
  const RegPath paths[] = {RegPath::kAuto, RegPath::kHost, RegPath::kDmabuf, RegPath::kPeermem,
                           RegPath::kStaged};
  int true_count = 0;
  for (auto t : transports) {
    for (auto m : memories) {
      for (auto p : paths) {
        const bool expected = t == TransportKind::kVerbs && m == MemoryKind::kCuda &&
                              (p == RegPath::kDmabuf || p == RegPath::kPeermem);
        EXPECT_EQ(isGpuDirect(t, m, p), expected)
            << toString(t) << "/" << toString(m) << "/" << toString(p);
        true_count += isGpuDirect(t, m, p) ? 1 : 0;
      }
    }
  }
  EXPECT_EQ(true_count, 2);
  // The named cases of the rule, spelled out.
  EXPECT_FALSE(isGpuDirect(TransportKind::kVerbs, MemoryKind::kCuda, RegPath::kStaged));
  EXPECT_FALSE(isGpuDirect(TransportKind::kEmulated, MemoryKind::kCuda, RegPath::kDmabuf));
  EXPECT_FALSE(isGpuDirect(TransportKind::kVerbs, MemoryKind::kHost, RegPath::kDmabuf));
  EXPECT_FALSE(isGpuDirect(TransportKind::kVerbs, MemoryKind::kCuda, RegPath::kAuto));
}

// The claim for a test: at least one side on GPU memory, and every GPU side GPUDirect.
TEST(TypesTest, GpuDirectTestNeedsEveryGpuSideDirect) {
  const auto V = TransportKind::kVerbs;
  const auto H = MemoryKind::kHost, C = MemoryKind::kCuda;
  // Host on both sides: no GPU, no claim, whatever the (impossible) path says.
  EXPECT_FALSE(isGpuDirectTest(V, H, RegPath::kHost, H, RegPath::kHost));
  // Host -> GPU and GPU -> host: GPUDirect on the GPU side is enough.
  EXPECT_TRUE(isGpuDirectTest(V, H, RegPath::kHost, C, RegPath::kDmabuf));
  EXPECT_TRUE(isGpuDirectTest(V, C, RegPath::kPeermem, H, RegPath::kHost));
  EXPECT_FALSE(isGpuDirectTest(V, H, RegPath::kHost, C, RegPath::kStaged));
  EXPECT_FALSE(isGpuDirectTest(V, C, RegPath::kStaged, H, RegPath::kHost));
  // Both on GPUs: both must be direct; one staged side spoils the claim (the old rule, "either
  // side", called this GPUDirect).
  EXPECT_TRUE(isGpuDirectTest(V, C, RegPath::kDmabuf, C, RegPath::kPeermem));
  EXPECT_FALSE(isGpuDirectTest(V, C, RegPath::kDmabuf, C, RegPath::kStaged));
  EXPECT_FALSE(isGpuDirectTest(V, C, RegPath::kStaged, C, RegPath::kDmabuf));
  EXPECT_FALSE(isGpuDirectTest(V, C, RegPath::kHost, C, RegPath::kDmabuf));
  // Never over a software transport.
  for (auto t : {TransportKind::kEmulated, TransportKind::kSimulated}) {
    EXPECT_FALSE(isGpuDirectTest(t, C, RegPath::kDmabuf, C, RegPath::kDmabuf)) << toString(t);
    EXPECT_FALSE(isGpuDirectTest(t, H, RegPath::kHost, C, RegPath::kDmabuf)) << toString(t);
  }
}

TEST(TypesTest, ResultClaimsGpuDirectOnlyWhenEveryGpuSideIs) {
  TestResult r;
  r.status = TestStatus::kPassed;
  r.transport = TransportKind::kVerbs;
  EXPECT_FALSE(r.gpudirect());  // host -> host
  r.target.memory = MemoryKind::kCuda;
  r.target.reg_path = RegPath::kPeermem;
  EXPECT_TRUE(r.gpudirect());  // host -> GPU (peermem)
  r.target.reg_path = RegPath::kStaged;
  EXPECT_FALSE(r.gpudirect());  // host -> GPU (staged)
  r.initiator.memory = MemoryKind::kCuda;
  r.initiator.reg_path = RegPath::kDmabuf;
  EXPECT_FALSE(r.gpudirect());  // GPU (dmabuf) -> GPU (staged)
  r.target.reg_path = RegPath::kDmabuf;
  EXPECT_TRUE(r.gpudirect());  // GPU (dmabuf) -> GPU (dmabuf)
  r.transport = TransportKind::kEmulated;
  EXPECT_FALSE(r.gpudirect());
}

TEST(TypesTest, OnlyAPassedResultClaimsGpuDirect) {
  TestResult r;
  r.transport = TransportKind::kVerbs;
  r.initiator.memory = r.target.memory = MemoryKind::kCuda;
  r.initiator.reg_path = r.target.reg_path = RegPath::kDmabuf;
  for (auto st : {TestStatus::kFailed, TestStatus::kSkipped, TestStatus::kError}) {
    r.status = st;
    EXPECT_FALSE(r.gpudirect()) << toString(st);
  }
  r.status = TestStatus::kPassed;
  EXPECT_TRUE(r.gpudirect());
}

}  // namespace
}  // namespace gdrmesh
