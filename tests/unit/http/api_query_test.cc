// The status page's query parameters, parsed without a server: every endpoint's bounds,
// defaults and refusals (the HTTP side is StatusPageTest; the fuzzer is tests/fuzz/http_query).
#include "coordinator/http/api_query.h"

#include <gtest/gtest.h>

#include <variant>

namespace gdrmesh {
namespace {

constexpr int64_t kNow = 1'795'000'000'000;

template <typename T>
ParamError refused(const std::variant<T, ParamError>& r) {
  EXPECT_TRUE(std::holds_alternative<ParamError>(r));
  return std::holds_alternative<ParamError>(r) ? std::get<ParamError>(r) : ParamError{};
}

TEST(ApiQuery, ResultsDefaultsAndBounds) {
  auto q = parseResultsQuery({});
  ASSERT_TRUE(std::holds_alternative<ResultQuery>(q));
  EXPECT_EQ(std::get<ResultQuery>(q).limit, kApiResultsDefaultLimit);
  q = parseResultsQuery({{"limit", "10000"},
                         {"worker", "h-1.a_b"},
                         {"status", "Failed"},
                         {"run_id", "s-20261123-1"}});
  ASSERT_TRUE(std::holds_alternative<ResultQuery>(q));
  const auto& r = std::get<ResultQuery>(q);
  EXPECT_EQ(r.limit, 10000u);
  EXPECT_EQ(r.worker, "h-1.a_b");
  ASSERT_TRUE(r.status.has_value());
  EXPECT_EQ(*r.status, TestStatus::kFailed);
  EXPECT_EQ(r.run_id, "s-20261123-1");

  for (const char* bad : {"0", "10001", "-1", "1e3", "", "9999999"}) {
    auto e = refused(parseResultsQuery({{"limit", bad}}));
    EXPECT_EQ(e.parameter, "limit") << bad;
    EXPECT_NE(e.fix.find("1 to 10000"), std::string::npos) << e.fix;
  }
  EXPECT_EQ(refused(parseResultsQuery({{"worker", "a b"}})).parameter, "worker");
  EXPECT_EQ(refused(parseResultsQuery({{"status", "ok"}})).parameter, "status");
  EXPECT_EQ(refused(parseResultsQuery({{"run_id", std::string("a\nb")}})).parameter, "run_id");
  EXPECT_EQ(refused(parseResultsQuery({{"run_id", std::string(129, 'x')}})).parameter, "run_id");
}

TEST(ApiQuery, UnknownAndRepeatedParametersAreRefusedByName) {
  auto e = refused(parseResultsQuery({{"limt", "5"}}));
  EXPECT_EQ(e.parameter, "limt");
  EXPECT_NE(e.fix.find("use only: limit, run_id, status, worker"), std::string::npos) << e.fix;
  e = refused(parseResultsQuery({{"limit", "5"}, {"limit", "6"}}));
  EXPECT_EQ(e.parameter, "limit");
  EXPECT_NE(e.message.find("more than once"), std::string::npos);
  ASSERT_TRUE(parseNoParams({{"x", ""}}).has_value());
  EXPECT_EQ(parseNoParams({{"x", ""}})->fix, "this endpoint takes no parameters");
  EXPECT_FALSE(parseNoParams({}).has_value());
  // A control character in an unknown name is not echoed into the message raw.
  e = refused(parseResultsQuery({{std::string("a\x1b[2J"), "1"}}));
  EXPECT_EQ(e.message.find('\x1b'), std::string::npos) << e.message;
}

TEST(ApiQuery, HistoryNeedsBothSidesAndAnOrderedWindow) {
  EXPECT_EQ(refused(parseHistoryParams({{"dst", "h2"}}, kNow)).parameter, "src");
  EXPECT_EQ(refused(parseHistoryParams({{"src", "h1"}}, kNow)).parameter, "dst");
  auto e = refused(
      parseHistoryParams({{"src", "h1"}, {"dst", "h2"}, {"since", "1d"}, {"until", "2d"}}, kNow));
  EXPECT_EQ(e.parameter, "until");
  EXPECT_EQ(
      refused(parseHistoryParams({{"src", "h1"}, {"dst", "h2"}, {"size", "big"}}, kNow)).parameter,
      "size");
  EXPECT_EQ(
      refused(parseHistoryParams({{"src", "h1"}, {"dst", "h2"}, {"op", "copy"}}, kNow)).parameter,
      "op");
  EXPECT_EQ(
      refused(parseHistoryParams({{"src", "h1"}, {"dst", "h2"}, {"mode", "x"}}, kNow)).parameter,
      "mode");
  EXPECT_EQ(refused(parseHistoryParams({{"src", "h1"}, {"dst", "h2"}, {"direction", "up"}}, kNow))
                .parameter,
            "direction");
  auto q = parseHistoryParams({{"src", "h1"},
                               {"dst", "h2"},
                               {"since", "30d"},
                               {"size", "64KiB"},
                               {"op", "read"},
                               {"mode", "lat"},
                               {"direction", "one"},
                               {"limit", "7"}},
                              kNow);
  ASSERT_TRUE(std::holds_alternative<HistoryQuery>(q));
  const auto& h = std::get<HistoryQuery>(q);
  EXPECT_EQ(h.src, "h1");
  EXPECT_EQ(h.dst, "h2");
  EXPECT_EQ(h.since_ms, kNow - 30LL * 86400 * 1000);
  EXPECT_EQ(h.message_size, 65536u);
  EXPECT_EQ(h.op, Op::kRead);
  EXPECT_EQ(h.mode, Mode::kLatency);
  EXPECT_FALSE(h.both_directions);
  EXPECT_EQ(h.limit, 7u);
}

TEST(ApiQuery, CompareAndSweepPages) {
  EXPECT_EQ(refused(parseCompareQuery({{"a", "s-1"}})).parameter, "b");
  EXPECT_EQ(refused(parseCompareQuery({{"a", "s 1"}, {"b", "s-2"}})).parameter, "a");
  for (const char* bad : {"-1", "1001", "nan", "inf", "5%%", "x"}) {
    EXPECT_EQ(
        refused(parseCompareQuery({{"a", "s-1"}, {"b", "s-2"}, {"tolerance", bad}})).parameter,
        "tolerance")
        << bad;
  }
  auto c = parseCompareQuery({{"a", "s-1"}, {"b", "s-2"}, {"tolerance", "2.5%"}});
  ASSERT_TRUE(std::holds_alternative<CompareQuery>(c));
  EXPECT_DOUBLE_EQ(std::get<CompareQuery>(c).tolerance_pct, 2.5);
  c = parseCompareQuery({{"a", "s-1"}, {"b", "s-2"}});
  EXPECT_DOUBLE_EQ(std::get<CompareQuery>(c).tolerance_pct, HistoryQueries::kDefaultTolerancePct);

  auto s = parseSweepQuery({});
  ASSERT_TRUE(std::holds_alternative<SweepQuery>(s));
  EXPECT_EQ(std::get<SweepQuery>(s).filter, VerdictFilter::kAll);
  EXPECT_EQ(std::get<SweepQuery>(s).page.limit, 1000u);
  s = parseSweepQuery({{"verdicts", "none"}, {"offset", "999999999"}, {"limit", "1"}});
  ASSERT_TRUE(std::holds_alternative<SweepQuery>(s));
  EXPECT_EQ(std::get<SweepQuery>(s).filter, VerdictFilter::kNone);
  EXPECT_EQ(std::get<SweepQuery>(s).page.offset, 999999999u);
  EXPECT_EQ(refused(parseSweepQuery({{"offset", "1000000000"}})).parameter, "offset");
  EXPECT_EQ(refused(parseSweepQuery({{"verdicts", "some"}})).parameter, "verdicts");
  EXPECT_EQ(std::get<uint32_t>(parseLimitOnly({}, 20)), 20u);
  EXPECT_EQ(refused(parseLimitOnly({{"limit", "0"}}, 20)).parameter, "limit");

  auto f = parseFabricQuery({});
  ASSERT_TRUE(std::holds_alternative<FabricQuery>(f));
  EXPECT_EQ(std::get<FabricQuery>(f).only_switch, "");
  f = parseFabricQuery({{"switch", "MF0;leaf07:MQM8790/U1"}});
  ASSERT_TRUE(std::holds_alternative<FabricQuery>(f));
  EXPECT_EQ(std::get<FabricQuery>(f).only_switch, "MF0;leaf07:MQM8790/U1");
  for (const std::string& bad : {std::string(), std::string("leaf\n07"), std::string(257, 'x')}) {
    EXPECT_EQ(refused(parseFabricQuery({{"switch", bad}})).parameter, "switch") << bad;
  }
  EXPECT_EQ(refused(parseFabricQuery({{"limit", "3"}})).parameter, "limit");

  EXPECT_TRUE(validSweepId("s-20261123-1:a.b_c"));
  EXPECT_FALSE(validSweepId(""));
  EXPECT_FALSE(validSweepId("s/1"));
  EXPECT_TRUE(validTestId("t 1"));
  EXPECT_FALSE(validTestId(std::string("t\x7f")));
}

}  // namespace
}  // namespace gdrmesh
