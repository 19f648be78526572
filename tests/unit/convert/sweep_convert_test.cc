// A sweep request converted at the coordinator's edge (coordinator/service/sweep_convert.h):
// what it may ask for, each refusal naming the field and the fix, and the round trip the
// coordinator makes with a spec it accepted. tests/fuzz/sweep_request fuzzes the same.
#include "coordinator/service/sweep_convert.h"

#include <gtest/gtest.h>

#include <string>

namespace gdrmesh {
namespace {

// As the CLI sends it: the template's sides name no GPU.
void hostMemory(v1::SweepSpec* s) {
  s->mutable_test()->mutable_initiator()->set_gpu(-1);
  s->mutable_test()->mutable_target()->set_gpu(-1);
}

v1::SweepSpec allPairs() {
  v1::SweepSpec s;
  s.set_pattern("all-pairs");
  hostMemory(&s);
  return s;
}

// The refusal's message, "" when the spec was accepted.
std::string refusal(const v1::SweepSpec& s) {
  auto r = convert::fromProto(s);
  return r.ok() ? std::string() : r.status().message();
}

TEST(SweepConvert, AcceptedSpecRoundTrips) {
  v1::SweepSpec s;
  s.set_pattern("pairs");
  hostMemory(&s);
  s.add_pairs("h1:h2");
  s.add_pairs("h3/mlx5_0:h4/mlx5_1");
  s.add_hosts("h1");
  s.add_exclude("h9");
  s.add_select("rack=r1");
  s.add_sizes(65536);
  s.add_sizes(1u << 30);
  s.set_name("nightly");
  s.set_baseline("previous");
  auto r = convert::fromProto(s);
  ASSERT_TRUE(r.ok()) << r.status().toString();
  ASSERT_EQ(r->pairs.size(), 2u);
  EXPECT_EQ(r->pairs[1].first.device, "mlx5_0");
  v1::SweepSpec wire;
  convert::toProto(*r, &wire);
  auto again = convert::fromProto(wire);
  ASSERT_TRUE(again.ok()) << again.status().toString();
  v1::SweepSpec wire2;
  convert::toProto(*again, &wire2);
  EXPECT_EQ(wire.SerializeAsString(), wire2.SerializeAsString());
}

// Issue #19: the stored spec was protobuf's JSON mapping, so renaming a proto field changed how
// stored rows read. It is stored in the domain encoding now; rows of older builds still read.
TEST(StoredSweepCodec, WritesTheDomainEncodingAndReadsOldRows) {
  const convert::StoredSweepCodec codec;
  SweepSpec spec;
  spec.pattern = SweepPattern::kRandom;
  spec.seed = 42;
  spec.sizes = {4096, 65536};
  spec.test.op = Op::kRead;
  const std::string text = codec.encode(spec);
  EXPECT_NE(text.find("\"op\":\"read\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"seed\":42"), std::string::npos) << text;
  EXPECT_NE(text.find("\"sizes\":[4096,65536]"), std::string::npos) << text;
  EXPECT_EQ(text.find("OP_"), std::string::npos) << text;
  auto back = codec.decode(text);
  ASSERT_TRUE(back.ok()) << back.status().toString();
  EXPECT_EQ(back->pattern, SweepPattern::kRandom);
  EXPECT_EQ(back->seed, 42u);
  EXPECT_EQ(back->test.op, Op::kRead);

  // A row as ProtoJsonSweepCodec wrote it before (64-bit integers as strings, proto enum names,
  // zero fields left out).
  const std::string old_row =
      R"({"pattern":"pairs","pairs":["h1:h2/mlx5_1"],"direction":"both","random_rounds":3,)"
      R"("seed":"42","hosts":["h1","h2"],"select":["rack=r1"],"test":{"initiator":{"gpu":-1},)"
      R"("target":{"memory":"MEMORY_KIND_CUDA","gpu":1,"reg_path":"REG_PATH_DMABUF"},)"
      R"("op":"OP_READ","mode":"MODE_LATENCY","message_size":"4096","iterations":"100"},)"
      R"("sizes":["4096","65536"],"retries":1,"name":"nightly","localise":true})";
  auto old = codec.decode(old_row);
  ASSERT_TRUE(old.ok()) << old.status().toString();
  EXPECT_EQ(old->pattern, SweepPattern::kPairs);
  ASSERT_EQ(old->pairs.size(), 1u);
  EXPECT_EQ(old->pairs[0].second.device, "mlx5_1");
  EXPECT_EQ(old->direction, SweepDirection::kBoth);
  EXPECT_EQ(old->seed, 42u);
  EXPECT_EQ(old->select.at("rack"), "r1");
  EXPECT_EQ(old->test.op, Op::kRead);
  EXPECT_EQ(old->test.mode, Mode::kLatency);
  EXPECT_EQ(old->test.target.memory, MemoryKind::kCuda);
  EXPECT_EQ(old->test.target.reg, RegPath::kDmabuf);
  EXPECT_EQ(old->sizes, (std::vector<uint64_t>{4096, 65536}));
  EXPECT_EQ(old->name, "nightly");
  EXPECT_TRUE(old->localise);
  // Read back, an old row is written in the domain encoding, and reads the same.
  auto again = codec.decode(codec.encode(*old));
  ASSERT_TRUE(again.ok()) << again.status().toString();
  EXPECT_EQ(codec.encode(*again), codec.encode(*old));
  // Neither form: the error names both readers.
  auto bad = codec.decode("{\"pattern\": 7}");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("domain encoding"), std::string::npos);
}

TEST(SweepConvert, SizesAboveTheLargestMessageAreRefused) {
  auto s = allPairs();
  s.add_sizes((1ull << 30) + 1);
  const std::string m = refusal(s);
  EXPECT_NE(m.find("sizes:"), std::string::npos) << m;
  EXPECT_NE(m.find("largest message size"), std::string::npos) << m;
}

// Issue #22: an explicit 0 matchings became 3. Absent is 3; 0 and past the limit are refused.
TEST(SweepConvert, RandomRoundsZeroIsRefusedAbsentIsThree) {
  auto s = allPairs();
  s.set_pattern("random");
  auto r = convert::fromProto(s);
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_EQ(r->random_rounds, 3u);
  s.set_random_rounds(0);
  EXPECT_EQ(refusal(s), "rounds: 0 is out of range 1..100000");
  s.set_random_rounds(100001);
  EXPECT_EQ(refusal(s), "rounds: 100001 is out of range 1..100000");
  s.set_random_rounds(7);
  r = convert::fromProto(s);
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_EQ(r->random_rounds, 7u);
}

TEST(SweepConvert, NamesAndSelectorsAreChecked) {
  auto s = allPairs();
  s.add_hosts("h1;rm -rf");
  EXPECT_NE(refusal(s).find("hosts:"), std::string::npos) << refusal(s);
  s = allPairs();
  s.add_exclude(std::string(65, 'x'));
  EXPECT_NE(refusal(s).find("exclude:"), std::string::npos) << refusal(s);
  s = allPairs();
  s.set_pattern("pairs");
  s.add_pairs("h1:h\x1b[2J");
  EXPECT_NE(refusal(s).find("pairs:"), std::string::npos) << refusal(s);
  EXPECT_EQ(refusal(s).find('\x1b'), std::string::npos) << "control characters are not echoed";
  s = allPairs();
  s.set_pattern("pairs");
  s.add_pairs("h1/:h2");
  EXPECT_NE(refusal(s).find("names no NIC"), std::string::npos) << refusal(s);
  s = allPairs();
  s.add_select(std::string(64, 'k') + "=v");
  EXPECT_NE(refusal(s).find("select: key"), std::string::npos) << refusal(s);
  s = allPairs();
  for (int i = 0; i < 33; ++i) s.add_select("k" + std::to_string(i) + "=v");
  EXPECT_NE(refusal(s).find("selectors, at most 32"), std::string::npos) << refusal(s);
  s = allPairs();
  s.set_name("a\nb");
  EXPECT_NE(refusal(s).find("name:"), std::string::npos) << refusal(s);
  s = allPairs();
  s.set_baseline(std::string(129, 'b'));
  EXPECT_NE(refusal(s).find("baseline:"), std::string::npos) << refusal(s);
  s = allPairs();
  s.set_config_yaml(std::string((1u << 20) + 1, '#'));
  EXPECT_NE(refusal(s).find("config:"), std::string::npos) << refusal(s);
}

}  // namespace
}  // namespace gdrmesh
