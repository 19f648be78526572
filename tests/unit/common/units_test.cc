// Tests of common/units.h: sizes, durations and timestamps as the CLI and reports use them.
#include "common/units.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace gdrmesh {
namespace {

uint64_t sizeOk(const char* text) {
  auto r = parseSize(text, "--size");
  EXPECT_TRUE(r.ok()) << text << ": " << r.status().toString();
  return r.ok() ? *r : 0;
}

Status sizeError(const char* text, const char* field = "--size") {
  auto r = parseSize(text, field);
  EXPECT_FALSE(r.ok()) << text << " parsed as " << (r.ok() ? *r : 0);
  return r.status();
}

TEST(ParseSizeTest, AcceptsPlainBytesAndBinarySuffixes) {
  EXPECT_EQ(sizeOk("65536"), 65536u);
  EXPECT_EQ(sizeOk("64K"), 65536u);
  EXPECT_EQ(sizeOk("64k"), 65536u);
  EXPECT_EQ(sizeOk("64Ki"), 65536u);
  EXPECT_EQ(sizeOk("64KiB"), 65536u);
  EXPECT_EQ(sizeOk("1MiB"), 1048576u);
  EXPECT_EQ(sizeOk("1M"), 1048576u);
  EXPECT_EQ(sizeOk("2GiB"), 2147483648ULL);
  EXPECT_EQ(sizeOk("3G"), 3ULL << 30);
  EXPECT_EQ(sizeOk("100B"), 100u);
  EXPECT_EQ(sizeOk("18446744073709551615"), UINT64_MAX);
}

TEST(ParseSizeTest, RejectsEmptyAndNonNumbers) {
  for (const char* t : {"", "abc", "K", "-1", " 64K", "1.5M", "64K ", "0x10"}) {
    Status st = sizeError(t);
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << t;
  }
}

TEST(ParseSizeTest, RejectsDecimalLookingSuffixesAsAmbiguous) {
  for (const char* t : {"64KB", "64kB", "1MB", "2GB"}) {
    Status st = sizeError(t);
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << t;
    EXPECT_NE(st.message().find("ambiguous"), std::string::npos) << st.toString();
    EXPECT_NE(st.fix().find("KiB"), std::string::npos) << st.toString();
  }
}

TEST(ParseSizeTest, RejectsUnknownSuffixes) {
  for (const char* t : {"1X", "1KiBB", "1kib", "1Kb"}) {
    Status st = sizeError(t);
    EXPECT_NE(st.message().find("suffix"), std::string::npos) << st.toString();
  }
}

TEST(ParseSizeTest, RejectsOverflowInDigitsAndInSuffix) {
  for (const char* t :
       {"99999999999999999999", "18446744073709551616", "17179869184G", "18014398509481984K"}) {
    Status st = sizeError(t);
    EXPECT_NE(st.message().find("too large"), std::string::npos) << t << ": " << st.toString();
  }
  // Just below the limit in a suffix is still fine.
  EXPECT_EQ(sizeOk("17179869183G"), 17179869183ULL << 30);
}

TEST(ParseSizeTest, ErrorNamesTheFieldPassedIn) {
  for (const char* t : {"", "abc", "64KB", "1X", "99999999999999999999"}) {
    Status st = sizeError(t, "--max-size");
    EXPECT_EQ(st.message().rfind("--max-size", 0), 0u) << st.toString();
  }
}

TEST(FormatSizeTest, UsesTheLargestExactBinaryUnit) {
  EXPECT_EQ(formatSize(0), "0B");
  EXPECT_EQ(formatSize(1), "1B");
  EXPECT_EQ(formatSize(1000), "1000B");
  EXPECT_EQ(formatSize(1536), "1536B");
  EXPECT_EQ(formatSize(65536), "64KiB");
  EXPECT_EQ(formatSize(4096 + 3), "4099B");
  EXPECT_EQ(formatSize(1ULL << 20), "1MiB");
  EXPECT_EQ(formatSize(3ULL << 29), "1536MiB");
  EXPECT_EQ(formatSize(2ULL << 30), "2GiB");
  EXPECT_EQ(formatSize(1ULL << 40), "1TiB");
  EXPECT_EQ(formatSize(1ULL << 50), "1024TiB");
}

TEST(FormatSizeTest, EveryFormattedSizeParsesBack) {
  // What the reports print must be accepted by the CLI (e.g. a size copied from a report).
  for (uint64_t v : {1ULL, 1000ULL, 4099ULL, 65536ULL, 1ULL << 20, 3ULL << 29, 2ULL << 30,
                     1ULL << 40, 5ULL << 40}) {
    const std::string text = formatSize(v);
    auto r = parseSize(text, "--size");
    ASSERT_TRUE(r.ok()) << "formatSize(" << v << ") = '" << text
                        << "' is rejected by parseSize: " << r.status().toString();
    EXPECT_EQ(*r, v) << text;
  }
}

TEST(ParseDurationTest, AcceptsUnitsAndPlainSeconds) {
  struct Case {
    const char* text;
    double seconds;
  };
  for (const Case& c : {Case{"30s", 30}, Case{"5m", 300}, Case{"1h", 3600}, Case{"250ms", 0.25},
                        Case{"2.5", 2.5}, Case{"0", 0}, Case{"1.5m", 90}}) {
    auto r = parseDurationSeconds(c.text, "--duration");
    ASSERT_TRUE(r.ok()) << c.text << ": " << r.status().toString();
    EXPECT_DOUBLE_EQ(*r, c.seconds) << c.text;
  }
}

TEST(ParseDurationTest, RejectsBadInputNamingTheField) {
  for (const char* t : {"", "abc", "-1s", "5d", "10 s", "inf", "nan", "s"}) {
    auto r = parseDurationSeconds(t, "--timeout");
    ASSERT_FALSE(r.ok()) << t << " parsed as " << *r;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << t;
    EXPECT_EQ(r.status().message().rfind("--timeout", 0), 0u) << r.status().toString();
  }
}

TEST(TimeFormatTest, Rfc3339WithMilliseconds) {
  EXPECT_EQ(formatRfc3339(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(formatRfc3339(1795360267123LL), "2026-11-22T15:11:07.123Z");
  EXPECT_EQ(formatRfc3339(951782400999LL), "2000-02-29T00:00:00.999Z");  // leap day
  const int64_t now = nowUnixMs();
  EXPECT_GT(now, 1700000000000LL);  // after 2023: the clock is in ms, not s or us
  EXPECT_LT(now, 4102444800000LL);  // before 2100
  const std::string s = nowRfc3339();
  ASSERT_EQ(s.size(), 24u) << s;
  EXPECT_EQ(s[10], 'T');
  EXPECT_EQ(s.back(), 'Z');
}

}  // namespace
}  // namespace gdrmesh
