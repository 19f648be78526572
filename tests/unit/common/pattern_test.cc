// Tests of common/pattern.h: the reproducible data pattern and its integrity report.
#include "common/pattern.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <vector>

namespace gdrmesh {
namespace {

TEST(PatternTest, KnownVectorPinsTheFunctionSharedWithTheGpuKernel) {
  // splitmix64 with state 0 is a published test vector; the GPU kernel must produce the same.
  EXPECT_EQ(splitmix64(0), 0xE220A8397B1DCDAFULL);
  EXPECT_EQ(patternWord(0, 0), 0xE220A8397B1DCDAFULL);
  // Little-endian bytes of the word.
  EXPECT_EQ(patternByte(0, 0), 0xAF);
  EXPECT_EQ(patternByte(0, 1), 0xCD);
  EXPECT_EQ(patternByte(0, 7), 0xE2);
}

TEST(PatternTest, FillAgreesWithPatternByteForUnalignedOffsetsAndLengths) {
  const uint64_t seed = 0x1234;
  for (uint64_t offset = 0; offset < 19; ++offset) {
    for (size_t len = 0; len < 43; ++len) {
      // Guard bytes on both sides catch writes outside [0, len).
      std::vector<uint8_t> buf(len + 16, 0x5A);
      fillPattern(seed, offset, buf.data() + 8, len);
      for (size_t i = 0; i < 8; ++i) {
        ASSERT_EQ(buf[i], 0x5A) << "offset " << offset << " len " << len;
        ASSERT_EQ(buf[8 + len + i], 0x5A) << "offset " << offset << " len " << len;
      }
      for (size_t i = 0; i < len; ++i) {
        ASSERT_EQ(buf[8 + i], patternByte(seed, offset + i))
            << "offset " << offset << " len " << len << " i " << i;
      }
    }
  }
}

TEST(PatternTest, AnyRangeEqualsTheSameSliceOfAWholeFill) {
  const uint64_t seed = 99;
  std::vector<uint8_t> whole(200003);
  fillPattern(seed, 0, whole.data(), whole.size());
  const uint64_t offset = 12345;
  const size_t len = 100003;
  std::vector<uint8_t> part(len);
  fillPattern(seed, offset, part.data(), len);
  for (size_t i = 0; i < len; ++i) ASSERT_EQ(part[i], whole[offset + i]) << i;
}

TEST(PatternTest, VerifyAcceptsTheFilledRange) {
  for (uint64_t offset : {0ULL, 3ULL, 8ULL, 4099ULL}) {
    std::vector<uint8_t> buf(1021);
    fillPattern(7, offset, buf.data(), buf.size());
    IntegrityReport r = verifyPattern(7, offset, buf.data(), buf.size());
    EXPECT_TRUE(r.checked);
    EXPECT_TRUE(r.ok());
    EXPECT_EQ(r.bytes_checked, buf.size());
    EXPECT_EQ(r.wrong_bytes, 0u);
    EXPECT_EQ(r.first_wrong_offset, -1);
    EXPECT_EQ(r.where, "host");
  }
}

TEST(PatternTest, VerifyOfEmptyRangeIsCheckedAndClean) {
  IntegrityReport r = verifyPattern(1, 5, nullptr, 0);
  EXPECT_TRUE(r.checked);
  EXPECT_EQ(r.bytes_checked, 0u);
  EXPECT_EQ(r.wrong_bytes, 0u);
}

TEST(PatternTest, SingleFlippedByteIsCountedWithItsAbsoluteOffset) {
  const uint64_t seed = 42;
  for (uint64_t offset : {0ULL, 5ULL, 13ULL}) {
    const size_t len = 1000 + offset;  // unaligned head, body and tail
    for (size_t pos : {size_t{0}, len / 2, len - 1}) {
      std::vector<uint8_t> buf(len);
      fillPattern(seed, offset, buf.data(), len);
      buf[pos] ^= 0x01;
      IntegrityReport r = verifyPattern(seed, offset, buf.data(), len);
      EXPECT_FALSE(r.ok()) << "offset " << offset << " pos " << pos;
      EXPECT_EQ(r.wrong_bytes, 1u) << "offset " << offset << " pos " << pos;
      EXPECT_EQ(r.first_wrong_offset, static_cast<int64_t>(offset + pos))
          << "offset " << offset << " pos " << pos;
    }
  }
}

TEST(PatternTest, SeveralWrongBytesReportCountAndLowestOffset) {
  const uint64_t seed = 3;
  std::vector<uint8_t> buf(4096);
  fillPattern(seed, 100, buf.data(), buf.size());
  // Two in one 8-byte word, one in another, one in the unaligned head.
  for (size_t pos : {size_t{2000}, size_t{2001}, size_t{3001}, size_t{1}}) buf[pos] ^= 0xFF;
  IntegrityReport r = verifyPattern(seed, 100, buf.data(), buf.size());
  EXPECT_EQ(r.wrong_bytes, 4u);
  EXPECT_EQ(r.first_wrong_offset, 101);
  EXPECT_EQ(r.toString(), "4 of 4096 B wrong on host, first at offset 101");
}

TEST(PatternTest, TheOffsetIsPartOfThePattern) {
  std::vector<uint8_t> buf(512);
  fillPattern(5, 0, buf.data(), buf.size());
  // The same bytes claimed for a different absolute offset must not verify.
  IntegrityReport r = verifyPattern(5, 8, buf.data(), buf.size());
  EXPECT_GT(r.wrong_bytes, 500u);
}

TEST(PatternTest, DifferentSeedsGiveDifferentData) {
  std::vector<uint8_t> a(4096), b(4096);
  fillPattern(1, 0, a.data(), a.size());
  fillPattern(2, 0, b.data(), b.size());
  IntegrityReport r = verifyPattern(2, 0, a.data(), a.size());
  // Random bytes agree with probability 1/256: expect the vast majority to differ.
  EXPECT_GT(r.wrong_bytes, 4000u);
  EXPECT_GE(r.first_wrong_offset, 0);
  EXPECT_NE(a, b);
}

TEST(PatternTest, InitiatorAndTargetSeedsDifferAndAreStable) {
  for (uint64_t s :
       {0ULL, 1ULL, 2ULL, 42ULL, 0x1A1A1A1A1A1A1A1AULL, 0x7E7E7E7E7E7E7E7EULL, ~0ULL}) {
    EXPECT_NE(initiatorSeed(s), targetSeed(s)) << s;
    EXPECT_EQ(initiatorSeed(s), initiatorSeed(s));
    EXPECT_EQ(targetSeed(s), targetSeed(s));
    // The two buffers of one test hold different data.
    std::vector<uint8_t> a(256);
    fillPattern(initiatorSeed(s), 0, a.data(), a.size());
    EXPECT_GT(verifyPattern(targetSeed(s), 0, a.data(), a.size()).wrong_bytes, 200u) << s;
  }
}

TEST(PatternTest, SeedsOfConsecutiveTestsDoNotCollide) {
  // Data left over from one test must not verify in the next: no buffer seed repeats.
  std::set<uint64_t> seen;
  const uint64_t n = 1000;
  for (uint64_t s = 0; s < n; ++s) {
    seen.insert(initiatorSeed(s));
    seen.insert(targetSeed(s));
  }
  EXPECT_EQ(seen.size(), 2 * n);
}

TEST(PatternTest, IntegrityReportText) {
  IntegrityReport none;
  EXPECT_FALSE(none.ok());
  EXPECT_EQ(none.toString(), "not verified");
  std::vector<uint8_t> buf(64);
  fillPattern(9, 0, buf.data(), buf.size());
  EXPECT_EQ(verifyPattern(9, 0, buf.data(), buf.size()).toString(), "verified 64 B on host");
}

TEST(PatternTest, DigestOfAPatternBufferEqualsTheDigestComputedFromTheSeed) {
  for (size_t len :
       {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{9}, size_t{4095}, size_t{65536 + 3}}) {
    SCOPED_TRACE(len);
    std::vector<uint8_t> buf(len);
    fillPattern(77, 0, buf.data(), len);
    EXPECT_EQ(digestBytes(buf.data(), len), digestPattern(77, len));
    if (len > 0) {
      EXPECT_NE(digestPattern(77, len), digestPattern(78, len));
    }
  }
}

TEST(PatternTest, DigestChangesWithAnyByteAndChunksAddUp) {
  std::vector<uint8_t> buf(1 << 16);
  fillPattern(5, 0, buf.data(), buf.size());
  const uint64_t whole = digestBytes(buf.data(), buf.size());
  // In whole-word chunks, continued by word index.
  EXPECT_EQ(digestBytes(buf.data(), 4096) + digestBytes(buf.data() + 4096, buf.size() - 4096, 512),
            whole);
  for (size_t off : {size_t{0}, size_t{13}, buf.size() - 1}) {
    buf[off] ^= 0x01;
    EXPECT_NE(digestBytes(buf.data(), buf.size()), whole) << off;
    buf[off] ^= 0x01;
  }
  // Swapping two words is a change too (the word index is mixed in).
  std::swap_ranges(buf.begin(), buf.begin() + 8, buf.begin() + 8);
  EXPECT_NE(digestBytes(buf.data(), buf.size()), whole);
}

}  // namespace
}  // namespace gdrmesh
