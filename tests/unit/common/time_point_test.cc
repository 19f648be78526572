#include "common/time_point.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace gdrmesh {
namespace {

TEST(ParseTimePointTest, DurationsCountBackFromNow) {
  const int64_t now = 1'800'000'000'000;  // 2027-01-15T08:00:00Z
  auto t = parseTimePoint("30d", now, "--since");
  ASSERT_TRUE(t.ok()) << t.status().toString();
  EXPECT_EQ(*t, now - 30LL * 86'400'000);
  EXPECT_EQ(*parseTimePoint("12h", now, "--since"), now - 12LL * 3'600'000);
  EXPECT_EQ(*parseTimePoint("90m", now, "--since"), now - 90LL * 60'000);
  EXPECT_EQ(*parseTimePoint("2w", now, "--since"), now - 14LL * 86'400'000);
  EXPECT_EQ(*parseTimePoint("45", now, "--since"), now - 45'000);
  EXPECT_EQ(*parseTimePoint("100000w", now, "--since"), 0) << "before 1970 clamps to 0";
}

TEST(ParseTimePointTest, DatesAreUtc) {
  EXPECT_EQ(*parseTimePoint("2026-11-20", 0, "--since"), 1'795'132'800'000);
  EXPECT_EQ(*parseTimePoint("2026-11-20T14:00", 0, "--since"), 1'795'183'200'000);
  EXPECT_EQ(*parseTimePoint("2026-11-20T14:00Z", 0, "--since"), 1'795'183'200'000);
  EXPECT_EQ(*parseTimePoint("2026-11-20 14:00:05Z", 0, "--since"), 1'795'183'205'000);
}

TEST(ParseTimePointTest, RejectsBadInputNamingTheField) {
  for (const char* bad : {"", "yesterday", "30x", "-3d", "2026-13-01", "2026-02-31",
                          "2026-11-20T25:00", "2026-11-20T14", "2026-11-20junk", "d30"}) {
    auto t = parseTimePoint(bad, 1'800'000'000'000, "--until");
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_EQ(t.status().code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(t.status().message().find("--until"), std::string::npos) << bad;
    EXPECT_FALSE(t.status().fix().empty()) << bad;
  }
}

}  // namespace
}  // namespace gdrmesh
